//! A family's section of the scenario: the top-level fields of a scenario file that one family
//! reads (an election's `answer_timeout`, a clock synchronization's `sync_interval`), declared
//! in the family's own `spec.rs` with [`section!`](crate::family::section::section) and embedded
//! in [`Scenario`](crate::scenario::Scenario) as one field.
//!
//! The fields stay top-level keys of the file (the file format is a public contract, DESIGN.md):
//! the scenario reads and writes a section's fields as if they were its own, in place, through
//! [`Section`]. It does not use serde's `flatten`, which buffers the values it does not know
//! and so loses the line and column of a bad value and the list of the fields a misspelled one
//! could have been; a value of a section is read straight from the file, and an error names its
//! line, column and field exactly as for the scenario's own fields.
//!
//! A leaf module: it names no other module of the crate, so that `scenario.rs` and the
//! families' `spec.rs` can both use it without an import circle.

use serde::de::{DeserializeOwned, MapAccess};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How a section's field is refused in a scenario that does not take it
/// (`crates/sim/src/fields.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A parameter some algorithms read (`coordinator`, `answer_timeout`): refused for any
    /// other algorithm, naming who reads it (`Plugin::reads` and `Plugin::readers`).
    Param,
    /// A field of the family's scenarios (`Plugin::takes`), refused in another family's
    /// scenario before the algorithms' parameters; the message calls it by the text given
    /// ("`detect`").
    First(&'static str),
    /// A field of the family's scenarios (`Plugin::takes`), refused in another family's
    /// scenario after the algorithms' parameters; the message calls it by the text given.
    Then(&'static str),
}

/// A family's section of the scenario (see the module's comment); made by
/// [`section!`](crate::family::section::section).
pub(crate) trait Section: Default {
    /// The fields' names, as the file spells them, in order.
    const FIELDS: &'static [&'static str];

    /// Reads the value of the field `key` (one of [`Section::FIELDS`]) from `map`.
    fn read<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;

    /// Writes every field, in order, as fields of the scenario.
    fn write<S: SerializeStruct>(&self, s: &mut S) -> Result<(), S::Error>;

    /// Each field's name, how it is refused where it does not belong, and whether it is set.
    fn parts(&self) -> Vec<(&'static str, Refusal, bool)>;
}

/// How a field of type `T` is written and read in the file: `T` itself for most, or a wrapper
/// with the field's own format ([`Dur`] for durations).
pub(crate) trait Codec<T>: Serialize + DeserializeOwned {
    /// The field's value as written.
    fn encode(value: &T) -> Self;
    /// The value read.
    fn decode(self) -> T;
}

impl<T: Clone + Serialize + DeserializeOwned> Codec<T> for T {
    fn encode(value: &T) -> T {
        value.clone()
    }
    fn decode(self) -> T {
        self
    }
}

/// An optional duration written with its unit (`"150ms"`), as `serde_duration::option`.
#[derive(Serialize, Deserialize)]
#[serde(transparent)]
pub(crate) struct Dur(#[serde(with = "distsync_core::serde_duration::option")] Option<Duration>);

impl Codec<Option<Duration>> for Dur {
    fn encode(value: &Option<Duration>) -> Dur {
        Dur(*value)
    }
    fn decode(self) -> Option<Duration> {
        self.0
    }
}

/// Declares a family's section of the scenario: the struct, with `Clone`, `Debug`, `Default`
/// and `PartialEq`, and its [`Section`]. Each field is `pub NAME: TYPE [as CODEC] => REFUSAL,`:
/// its name is the file's key, CODEC ([`Codec`], default TYPE) how it is written, and REFUSAL
/// ([`Refusal`]) how another family's scenario refuses it. Every field is an `Option`, absent
/// when the file does not give it.
macro_rules! section {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                pub $field:ident : $ty:ty $(as $codec:ty)? => $refusal:expr,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name {
            $(
                $(#[$field_meta])*
                pub $field: $ty,
            )*
        }

        impl $crate::family::section::Section for $name {
            const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];

            fn read<'de, A: serde::de::MapAccess<'de>>(
                &mut self,
                key: &str,
                map: &mut A,
            ) -> Result<(), A::Error> {
                use $crate::family::section::Codec;
                match key {
                    $(
                        stringify!($field) => {
                            self.$field =
                                map.next_value::<$crate::family::section::codec!($ty $(, $codec)?)>()?
                                    .decode();
                        }
                    )*
                    _ => {
                        return Err(<A::Error as serde::de::Error>::unknown_field(
                            key,
                            Self::FIELDS,
                        ))
                    }
                }
                Ok(())
            }

            fn write<S: serde::ser::SerializeStruct>(&self, s: &mut S) -> Result<(), S::Error> {
                $(
                    s.serialize_field(
                        stringify!($field),
                        &<$crate::family::section::codec!($ty $(, $codec)?) as
                            $crate::family::section::Codec<$ty>>::encode(&self.$field),
                    )?;
                )*
                Ok(())
            }

            fn parts(&self) -> Vec<(&'static str, $crate::family::section::Refusal, bool)> {
                vec![$((stringify!($field), $refusal, self.$field.is_some())),*]
            }
        }
    };
}

/// The codec of a field: the one given, or the field's type.
macro_rules! codec {
    ($ty:ty) => {
        $ty
    };
    ($ty:ty, $codec:ty) => {
        $codec
    };
}

pub(crate) use {codec, section};
