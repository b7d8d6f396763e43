//! A value's JSON, byte for byte as `serde_json::to_value` then `serde_json::to_writer` write
//! it, without building the `Value`: the trace's `msg`, `input`, `output` and `timer` fields.
//!
//! Those fields were first written by way of a `Value`, whose objects (without serde_json's
//! `preserve_order`) are `BTreeMap`s: an object's keys come out sorted, and a key given twice
//! keeps its last value. Building that tree allocated a few times per traced event. This writer
//! emits the same text straight into the trace buffer: scalars as serde_json writes them (`f32`
//! widened to `f64` first, as `Value` holds it), and each object's entries written in the order
//! given, then sorted by key in place. Anything `to_value` refuses (a map key that is not a
//! string or number, an integer beyond 64 bits) gives `null`, as `to_value(..).unwrap_or_default()`
//! did. `tests::same_bytes_as_by_way_of_a_value` compares the two on every shape serde has.

use serde::ser::{self, Serialize};
use serde_json::Error;
use std::fmt::Display;
use std::ops::Range;

/// An object entry's raw (unescaped) key.
#[derive(Clone)]
enum Key {
    /// A struct's field name.
    Field(&'static str),
    /// A map key, written in [`ValueJson::keys`] at this range.
    Written(Range<usize>),
}

impl Key {
    /// The key's bytes, `keys` being [`ValueJson::keys`].
    #[inline]
    fn bytes<'k>(&'k self, keys: &'k [u8]) -> &'k [u8] {
        match self {
            Key::Field(name) => name.as_bytes(),
            Key::Written(range) => &keys[range.clone()],
        }
    }
}

/// One entry of an object being written: its raw key and where its value's JSON lies in the
/// output.
#[derive(Clone)]
struct Entry {
    key: Key,
    value: Range<usize>,
}

/// The writer's reusable memory: the entries of the objects being written and the map keys
/// (stacks: a nested object's come after its parent's and are gone when it ends), and a
/// scratch buffer where an object whose keys did not come in order is put together again.
#[derive(Default)]
pub(crate) struct ValueJson {
    entries: Vec<Entry>,
    keys: Vec<u8>,
    scratch: Vec<u8>,
}

impl ValueJson {
    /// Appends the JSON of `value` to `out`, as `to_value` then `to_writer` would write it
    /// (`null` when `to_value` would fail).
    pub(crate) fn write<T: Serialize + ?Sized>(&mut self, value: &T, out: &mut Vec<u8>) {
        let start = out.len();
        let (base, keys) = (self.entries.len(), self.keys.len());
        let mut ser = Ser { out, st: self };
        if value.serialize(&mut ser).is_err() {
            out.truncate(start);
            self.entries.truncate(base);
            self.keys.truncate(keys);
            out.extend_from_slice(b"null");
        }
    }
}

/// An escaped JSON string, as serde_json writes one.
#[inline]
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    // serde_json escapes the control characters, `"` and `\` only: a string without them (an
    // event's or a message kind's name, most keys and values) is copied as it is.
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// A scalar serde_json writes without allocating (numbers, booleans).
fn write_scalar<T: Serialize>(out: &mut Vec<u8>, v: T) {
    let _ = serde_json::to_writer(&mut *out, &v);
}

/// An integer, as serde_json writes it (by `itoa`).
#[inline]
fn write_int<I: itoa::Integer>(out: &mut Vec<u8>, v: I) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

struct Ser<'a> {
    out: &'a mut Vec<u8>,
    st: &'a mut ValueJson,
}

impl<'a> Ser<'a> {
    /// Starts an object: its entries go on the stack from here.
    fn object(&mut self) -> Object<'_, 'a> {
        let start = self.out.len();
        self.out.push(b'{');
        Object {
            start,
            base: self.st.entries.len(),
            keys: self.st.keys.len(),
            key: None,
            in_order: true,
            ser: self,
        }
    }
}

impl<'b, 'a> ser::Serializer for &'b mut Ser<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Array<'b, 'a>;
    type SerializeTuple = Array<'b, 'a>;
    type SerializeTupleStruct = Array<'b, 'a>;
    type SerializeTupleVariant = Array<'b, 'a>;
    type SerializeMap = Object<'b, 'a>;
    type SerializeStruct = Object<'b, 'a>;
    type SerializeStructVariant = Variant<'b, 'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        write_scalar(self.out, v);
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        // A Value holds integers of 64 bits only.
        if let Ok(v) = u64::try_from(v) {
            self.serialize_u64(v)
        } else if let Ok(v) = i64::try_from(v) {
            self.serialize_i64(v)
        } else {
            Err(ser::Error::custom("number out of range"))
        }
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.serialize_u64(u64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        write_int(self.out, v);
        Ok(())
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        match u64::try_from(v) {
            Ok(v) => self.serialize_u64(v),
            Err(_) => Err(ser::Error::custom("number out of range")),
        }
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        // A Value keeps an f32 as the f64 it widens to, and writes that.
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        // A Value has no NaN or infinity: those become null, as serde_json writes them anyway.
        write_scalar(self.out, v);
        Ok(())
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_str(self.out, v);
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        // An array of numbers, as a Value holds bytes.
        self.out.push(b'[');
        for (i, b) in v.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            write_scalar(self.out, *b);
        }
        self.out.push(b']');
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        // An object of one entry: nothing to sort.
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
        value.serialize(&mut *self)?;
        self.out.push(b'}');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Array<'b, 'a>, Error> {
        self.out.push(b'[');
        Ok(Array {
            ser: self,
            first: true,
            close: b"]",
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Array<'b, 'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Array<'b, 'a>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Array<'b, 'a>, Error> {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.extend_from_slice(b":[");
        Ok(Array {
            ser: self,
            first: true,
            close: b"]}",
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Object<'b, 'a>, Error> {
        Ok(self.object())
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Object<'b, 'a>, Error> {
        Ok(self.object())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Variant<'b, 'a>, Error> {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
        Ok(Variant(self.object()))
    }
    fn collect_str<T: Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        write_str(self.out, &value.to_string());
        Ok(())
    }
}

/// An array being written.
pub(crate) struct Array<'b, 'a> {
    ser: &'b mut Ser<'a>,
    first: bool,
    close: &'static [u8],
}

impl Array<'_, '_> {
    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        if !self.first {
            self.ser.out.push(b',');
        }
        self.first = false;
        value.serialize(&mut *self.ser)
    }

    fn close(self) -> Result<(), Error> {
        self.ser.out.extend_from_slice(self.close);
        Ok(())
    }
}

impl ser::SerializeSeq for Array<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTuple for Array<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleStruct for Array<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

impl ser::SerializeTupleVariant for Array<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.element(value)
    }
    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// An object being written: its entries go to the output as they come (`"key":value`, with
/// commas), which is its text when the keys come in order, as a struct's usually do; otherwise
/// [`Object::close`] writes them again in key order.
pub(crate) struct Object<'b, 'a> {
    ser: &'b mut Ser<'a>,
    /// Where the object's text begins in the output (its `{`).
    start: usize,
    /// Where its entries begin on the stack.
    base: usize,
    /// Where its map keys begin in [`ValueJson::keys`].
    keys: usize,
    /// The key given by `serialize_key`, waiting for its value.
    key: Option<Range<usize>>,
    /// Whether every key so far came after the one before (so none came twice).
    in_order: bool,
}

impl<'b, 'a> Object<'b, 'a> {
    /// Writes an entry: `key` is the raw key, `value` what to write after it.
    fn entry<T: Serialize + ?Sized>(&mut self, key: Key, value: &T) -> Result<(), Error> {
        let st = &mut *self.ser.st;
        let out = &mut *self.ser.out;
        if let Some(last) = st.entries[self.base..].last() {
            out.push(b',');
            if self.in_order && last.key.bytes(&st.keys) >= key.bytes(&st.keys) {
                self.in_order = false;
            }
        }
        match &key {
            Key::Field(name) => write_str(out, name),
            // A map key is UTF-8: it was written from a &str or a number.
            Key::Written(range) => {
                let text =
                    std::str::from_utf8(&st.keys[range.clone()]).map_err(ser::Error::custom)?;
                write_str(out, text);
            }
        }
        out.push(b':');
        let from = out.len();
        value.serialize(&mut *self.ser)?;
        self.ser.st.entries.push(Entry {
            key,
            value: from..self.ser.out.len(),
        });
        Ok(())
    }

    /// Ends the object: `}` when its keys came in order; otherwise rewrites its entries as
    /// `{"key":value,...}` sorted by key, the last of equal keys kept. Gives back the
    /// serializer.
    fn close(self) -> Result<&'b mut Ser<'a>, Error> {
        let ser = self.ser;
        let out = &mut *ser.out;
        let st = &mut *ser.st;
        if self.in_order {
            out.push(b'}');
            st.entries.truncate(self.base);
            st.keys.truncate(self.keys);
            return Ok(ser);
        }
        let keys = &st.keys;
        let entries = &mut st.entries[self.base..];
        // Stable: of equal keys, the one given last stays last (and is the one kept).
        entries.sort_by(|a, b| a.key.bytes(keys).cmp(b.key.bytes(keys)));
        let scratch = &mut st.scratch;
        scratch.clear();
        scratch.push(b'{');
        let mut first = true;
        for (i, e) in entries.iter().enumerate() {
            if entries
                .get(i + 1)
                .is_some_and(|next| next.key.bytes(keys) == e.key.bytes(keys))
            {
                continue; // a later value for the same key replaces this one
            }
            if !first {
                scratch.push(b',');
            }
            first = false;
            // The key was written from a &str, so it is UTF-8.
            let key = std::str::from_utf8(e.key.bytes(keys)).map_err(ser::Error::custom)?;
            write_str(scratch, key);
            scratch.push(b':');
            scratch.extend_from_slice(&out[e.value.clone()]);
        }
        scratch.push(b'}');
        out.truncate(self.start);
        out.extend_from_slice(scratch);
        st.entries.truncate(self.base);
        st.keys.truncate(self.keys);
        Ok(ser)
    }
}

impl ser::SerializeMap for Object<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let keys = &mut self.ser.st.keys;
        let from = keys.len();
        key.serialize(KeySer(keys))?;
        self.key = Some(from..keys.len());
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| ser::Error::custom("serialize_value called before serialize_key"))?;
        self.entry(Key::Written(key), value)
    }
    fn end(self) -> Result<(), Error> {
        self.close().map(|_| ())
    }
}

impl ser::SerializeStruct for Object<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.entry(Key::Field(key), value)
    }
    fn end(self) -> Result<(), Error> {
        self.close().map(|_| ())
    }
}

/// A struct variant: `{"Variant":{...}}`, the inner object sorted.
pub(crate) struct Variant<'b, 'a>(Object<'b, 'a>);

impl ser::SerializeStructVariant for Variant<'_, '_> {
    type Ok = ();
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(&mut self.0, key, value)
    }
    fn end(self) -> Result<(), Error> {
        let ser = self.0.close()?;
        ser.out.push(b'}');
        Ok(())
    }
}

/// A map key, written raw in [`ValueJson::keys`] (it is escaped when written in the object), as
/// serde_json's
/// `Value` makes one: strings, chars, numbers, booleans and unit variants; anything else is
/// refused.
struct KeySer<'a>(&'a mut Vec<u8>);

fn key_must_be_a_string() -> Error {
    ser::Error::custom("key must be a string")
}

impl<'a> KeySer<'a> {
    fn raw(self, text: &str) -> Result<(), Error> {
        self.0.extend_from_slice(text.as_bytes());
        Ok(())
    }
    fn number<T: Serialize>(self, v: T) -> Result<(), Error> {
        // serde_json writes numbers (finite floats included) without quotes: the text as is.
        write_scalar(self.0, v);
        Ok(())
    }
}

impl<'a> ser::Serializer for KeySer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = ser::Impossible<(), Error>;
    type SerializeTuple = ser::Impossible<(), Error>;
    type SerializeTupleStruct = ser::Impossible<(), Error>;
    type SerializeTupleVariant = ser::Impossible<(), Error>;
    type SerializeMap = ser::Impossible<(), Error>;
    type SerializeStruct = ser::Impossible<(), Error>;
    type SerializeStructVariant = ser::Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.raw(if v { "true" } else { "false" })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.number(v)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        if v.is_finite() {
            self.number(v)
        } else {
            Err(ser::Error::custom("float key must be finite"))
        }
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        if v.is_finite() {
            self.number(v)
        } else {
            Err(ser::Error::custom("float key must be finite"))
        }
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.raw(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        self.raw(v)
    }
    fn serialize_bytes(self, _v: &[u8]) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_none(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.raw(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Err(key_must_be_a_string())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(key_must_be_a_string())
    }
    fn collect_str<T: Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        let text = value.to_string();
        self.raw(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::ValueJson;
    use proptest::prelude::*;
    use serde::ser::{SerializeMap, Serializer};
    use serde::Serialize;
    use std::collections::{BTreeMap, HashMap};

    /// What the trace wrote before: the value made into a `Value`, then written.
    fn by_way_of_a_value<T: Serialize + ?Sized>(value: &T) -> String {
        serde_json::to_string(&serde_json::to_value(value).unwrap_or_default()).unwrap()
    }

    fn direct<T: Serialize + ?Sized>(value: &T) -> String {
        let mut out = b"prefix ".to_vec();
        ValueJson::default().write(value, &mut out);
        let text = String::from_utf8(out).unwrap();
        text.strip_prefix("prefix ").unwrap().to_string()
    }

    fn same<T: Serialize + ?Sized>(value: &T) {
        assert_eq!(direct(value), by_way_of_a_value(value));
    }

    #[derive(Serialize)]
    struct Unsorted {
        zeta: u32,
        alpha: Option<i64>,
        mid: Vec<Inner>,
        beta: (u8, char, String),
    }

    #[derive(Serialize)]
    struct Inner {
        y: f32,
        x: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        w: Option<bool>,
    }

    #[derive(Serialize)]
    struct Unit;

    #[derive(Serialize)]
    struct Newtype(u64);

    #[derive(Serialize)]
    struct Tuple(i8, u16);

    #[derive(Serialize)]
    struct Empty {}

    #[derive(Serialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
    enum Key {
        Left,
        Right,
    }

    #[derive(Serialize)]
    enum Msg {
        Token,
        Request {
            ts: u64,
            from: u32,
            all: BTreeMap<u32, bool>,
        },
        Reply(u64),
        Pair(u32, Inner),
        Nested {
            inner: Inner,
            list: Vec<Msg>,
        },
        Empty {},
    }

    #[derive(Serialize)]
    #[serde(tag = "type")]
    enum Tagged {
        Ping { zz: u8, aa: u8 },
    }

    /// A map given in this order, keys repeated or not (serde's derive never repeats one, a
    /// hand-written `Serialize` may).
    struct Pairs<K, V>(Vec<(K, V)>);

    impl<K: Serialize, V: Serialize> Serialize for Pairs<K, V> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut map = s.serialize_map(Some(self.0.len()))?;
            for (k, v) in &self.0 {
                map.serialize_entry(k, v)?;
            }
            map.end()
        }
    }

    struct Bytes(Vec<u8>);

    impl Serialize for Bytes {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(&self.0)
        }
    }

    struct Shown(&'static str);

    impl Serialize for Shown {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(self.0)
        }
    }

    #[test]
    fn same_bytes_as_by_way_of_a_value() {
        same(&Unsorted {
            zeta: 7,
            alpha: None,
            mid: vec![
                Inner {
                    y: 0.1,
                    x: 1.0,
                    w: Some(true),
                },
                Inner {
                    y: f32::NAN,
                    x: f64::INFINITY,
                    w: None,
                },
            ],
            beta: (255, '"', "tab\there \u{1} \\ é".to_string()),
        });
        same(&Unit);
        same(&Newtype(u64::MAX));
        same(&Tuple(-128, 65535));
        same(&Empty {});
        same(&());
        same(&Option::<u8>::None);
        same(&Some(-5i32));
        same(&Msg::Token);
        let mut all = BTreeMap::new();
        all.insert(2, true);
        all.insert(10, false);
        all.insert(1, true);
        same(&Msg::Request {
            ts: 3,
            from: 1,
            all,
        });
        same(&Msg::Reply(9));
        same(&Msg::Pair(
            4,
            Inner {
                y: -2.5e-8,
                x: 1e300,
                w: Some(false),
            },
        ));
        same(&Msg::Nested {
            inner: Inner {
                y: 3.0,
                x: -0.0,
                w: None,
            },
            list: vec![Msg::Token, Msg::Reply(1), Msg::Empty {}],
        });
        same(&Msg::Empty {});
        same(&Tagged::Ping { zz: 1, aa: 2 });
        same(&Bytes(vec![0, 1, 255]));
        same(&Bytes(vec![]));
        same(&Shown("a \"shown\" value"));
        same(&'\n');
        same(&1.5f32);
        same(&i128::from(i64::MIN));
        same(&(u128::from(u64::MAX)));
        // Keys: numbers sort as text, every kind serde_json accepts as a key.
        let mut h: HashMap<i64, &str> = HashMap::new();
        for k in [-3, 20, 100, 7, -10] {
            h.insert(k, "v");
        }
        same(&h);
        same(&Pairs(vec![(true, 1), (false, 2)]));
        same(&Pairs(vec![(2.5f64, 1), (-1.0, 2)]));
        same(&Pairs(vec![(0.1f32, 1)]));
        same(&Pairs(vec![('b', 1), ('a', 2)]));
        same(&Pairs(vec![(Key::Right, 1), (Key::Left, 2)]));
        same(&Pairs(vec![(Newtype(5), 1), (Newtype(40), 2)]));
        same(&Pairs(vec![(u128::MAX, 1)]));
        same(&Pairs(vec![(i128::MIN, 1)]));
        // A key given twice: the last value, at the key's sorted place.
        same(&Pairs(vec![
            ("b", 1),
            ("a", 2),
            ("b", 3),
            ("c", 4),
            ("b", 5),
        ]));
        // Keys that escape: sorted as the raw text, written escaped.
        same(&Pairs(vec![
            ("\u{1f}", 1),
            ("\"", 2),
            ("\\", 3),
            ("A", 4),
            ("é", 5),
        ]));
        same(&BTreeMap::<String, u8>::new());
    }

    #[test]
    fn what_to_value_refuses_is_null() {
        // Each of these makes `to_value` fail; the trace wrote null for them.
        assert_eq!(direct(&u128::MAX), "null");
        assert_eq!(by_way_of_a_value(&u128::MAX), "null");
        assert_eq!(direct(&i128::MIN), "null");
        assert_eq!(direct(&Pairs(vec![((1, 2), 3)])), "null");
        assert_eq!(by_way_of_a_value(&Pairs(vec![((1, 2), 3)])), "null");
        assert_eq!(direct(&Pairs(vec![(f64::NAN, 3)])), "null");
        assert_eq!(direct(&Pairs(vec![(Option::<u8>::None, 3)])), "null");
        // Deep inside, after entries were written: the whole value is null, and the writer
        // is left clean for the next one.
        let mut json = ValueJson::default();
        let mut out = Vec::new();
        json.write(
            &Msg::Nested {
                inner: Inner {
                    y: 1.0,
                    x: 2.0,
                    w: None,
                },
                list: vec![Msg::Request {
                    ts: 1,
                    from: 2,
                    all: BTreeMap::new(),
                }],
            },
            &mut out,
        );
        json.write(&vec![Pairs(vec![(vec![1u8], 1)])], &mut out);
        json.write(&Pairs(vec![("k", Newtype(1))]), &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with(r#"}null{"k":1}"#), "{text}");
        assert!(json.entries.is_empty());
    }

    /// Any JSON-shaped value, its objects' keys in the order given (repeats allowed).
    #[derive(Debug, Clone)]
    enum Tree {
        Null,
        Bool(bool),
        U(u64),
        I(i64),
        F(f64),
        F32(f32),
        S(String),
        Arr(Vec<Tree>),
        Obj(Vec<(String, Tree)>),
        IntKeys(Vec<(i32, Tree)>),
    }

    impl Serialize for Tree {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            match self {
                Tree::Null => s.serialize_unit(),
                Tree::Bool(b) => s.serialize_bool(*b),
                Tree::U(u) => s.serialize_u64(*u),
                Tree::I(i) => s.serialize_i64(*i),
                Tree::F(f) => s.serialize_f64(*f),
                Tree::F32(f) => s.serialize_f32(*f),
                Tree::S(x) => s.serialize_str(x),
                Tree::Arr(v) => v.serialize(s),
                Tree::Obj(entries) => {
                    let mut map = s.serialize_map(None)?;
                    for (k, v) in entries {
                        map.serialize_entry(k, v)?;
                    }
                    map.end()
                }
                Tree::IntKeys(entries) => {
                    let mut map = s.serialize_map(None)?;
                    for (k, v) in entries {
                        map.serialize_entry(k, v)?;
                    }
                    map.end()
                }
            }
        }
    }

    fn tree() -> impl Strategy<Value = Tree> {
        let leaf = prop_oneof![
            Just(Tree::Null),
            any::<bool>().prop_map(Tree::Bool),
            any::<u64>().prop_map(Tree::U),
            any::<i64>().prop_map(Tree::I),
            any::<f64>().prop_map(Tree::F),
            any::<f32>().prop_map(Tree::F32),
            "\\PC{0,6}".prop_map(Tree::S),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Tree::Arr),
                prop::collection::vec(("[a-d\"\\\\\u{1}é]{0,3}", inner.clone()), 0..6)
                    .prop_map(Tree::Obj),
                prop::collection::vec((-20i32..20, inner), 0..6).prop_map(Tree::IntKeys),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_tree_gives_the_same_bytes(t in tree()) {
            prop_assert_eq!(direct(&t), by_way_of_a_value(&t));
        }

        /// Strings with and without the characters serde_json escapes (control characters,
        /// `"`, `\`), as serde_json writes them.
        #[test]
        fn any_string_is_escaped_as_serde_json_escapes_it(
            s in prop_oneof!["[a-zA-Z_ ]{0,12}", "[a\u{0}-\u{1f}\"\\\\\u{7f}é\u{2028}]{0,8}", any::<String>()]
        ) {
            let mut out = Vec::new();
            super::write_str(&mut out, &s);
            prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&s).unwrap());
        }
    }
}
