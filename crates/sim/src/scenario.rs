//! Scenario files: what to run, on which network, under which workload and faults.
//!
//! The field names are a public contract (DESIGN.md). Every field is checked: an unknown or
//! misspelled field, a duration without a unit, a probability outside [0, 1] or a node id that is
//! not a member is refused with a message naming the file and the field.

use distsync_core::{format_duration, serde_duration, NodeId, Params, Peers};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::path::Path;
use std::time::Duration;

pub use crate::family::clock_sync::spec::ClockSyncSpec;
pub use crate::family::election::spec::{Detect, ElectionSpec};
pub use crate::family::mutex::spec::MutexSpec;
use crate::family::section::{Codec, Dur, Refusal, Section};

/// A scenario, as read from a TOML file.
///
/// The fields of one family are in that family's section ([`MutexSpec`], [`ElectionSpec`],
/// [`ClockSyncSpec`], declared in its own `spec.rs`), but the file gives them as top-level keys
/// like the others: `answer_timeout = "40ms"` is `scenario.election.answer_timeout`. Reading and
/// writing are written out below (`sections!` lists the sections once) rather than derived with
/// serde's `flatten`, so that a bad value of a section is named with its line, column and field
/// as any other.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// A name for reports.
    pub name: Option<String>,
    /// A registry name, see `distsync list`.
    pub algorithm: String,
    /// How many processes, with ids 0..nodes-1. Give either this or `ids`.
    pub nodes: Option<u32>,
    /// The process ids in ring order. Give either this or `nodes`.
    pub ids: Option<Vec<NodeId>>,
    /// With `nodes`: the ring order of the ids 0..nodes-1, `"ascending"` (the default),
    /// `"descending"` or `"random"` (a shuffle drawn from the scenario's `seed`), so that a ring
    /// of a million processes in a random order is a small file.
    pub order: Option<RingOrder>,
    /// The seed of every random choice.
    pub seed: u64,
    /// The simulated-time horizon (default 60s).
    pub until: Option<Duration>,
    /// Mutual exclusion's fields: `coordinator`, `holder`, `tree`, `quorums`.
    pub mutex: MutexSpec,
    /// Leader election's fields: `answer_timeout`, `coordinator_timeout`, `heartbeat`,
    /// `heartbeat_timeout`, `detect`.
    pub election: ElectionSpec,
    /// Clock synchronization's fields: `sync_interval`, `server`, `samples`, `min_delay`,
    /// `max_drift_ppm`, `threshold`, `master_election`, `strata`.
    pub clock_sync: ClockSyncSpec,
    /// Multicast: the workload of multicasts and the orders the monitors check.
    pub multicast: Option<crate::family::multicast::spec::MulticastSpec>,
    /// The application under the algorithm: a bank (snapshots) or a replicated database
    /// (multicast).
    pub app: Option<crate::app::AppSpec>,
    /// The network model.
    pub network: NetworkSpec,
    /// Physical clocks: offsets, drifts and how adjustments apply. Perfect clocks when absent.
    pub clocks: Option<ClocksSpec>,
    /// The mutual-exclusion workload.
    pub workload: Option<WorkloadSpec>,
    /// The runaway guard: caps on events and pending events, and the storm monitor (see
    /// [`crate::guard`]).
    pub limits: Option<crate::guard::LimitsSpec>,
    /// The order of timers due at exactly the same time: `"scheduled"` (the default: the one
    /// set first goes off first) or `"seeded"` (an order drawn from the run's seed, so that
    /// runs with different seeds take the orders the exhaustive checker explores; docs/check.md).
    pub ties: Option<Ties>,
    /// The exhaustive checker's bounds and faults (`distsync check SCENARIO.toml`, see
    /// docs/check.md). The simulator does not read it, so one file serves both.
    pub check: Option<toml::Table>,
    /// Scripted inputs and faults (`[[event]]` in the file).
    pub events: Vec<EventSpec>,
}

/// The scenario's own fields before the families' sections, as the file spells them.
const HEAD: [&str; 7] = [
    "name",
    "algorithm",
    "nodes",
    "ids",
    "order",
    "seed",
    "until",
];

/// The scenario's own fields after the families' sections.
const TAIL: [&str; 9] = [
    "multicast",
    "app",
    "network",
    "clocks",
    "workload",
    "limits",
    "ties",
    "check",
    "event",
];

/// Declares the families' sections of the scenario, in the order of the file's fields: the
/// one list of them, that reading, writing, the algorithms' parameters and the refusal of
/// foreign fields go through. A family with a section of its own adds it here, as a field of
/// [`Scenario`] (and in its `Default`), and declares it in its `spec.rs`.
macro_rules! sections {
    ($($field:ident: $ty:ty),* $(,)?) => {
        /// Every field of a scenario file, in order: the head, each family's section, the
        /// tail.
        fn all_fields() -> &'static [&'static str] {
            static ALL: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
            ALL.get_or_init(|| {
                let mut all = HEAD.to_vec();
                $(all.extend_from_slice(<$ty>::FIELDS);)*
                all.extend_from_slice(&TAIL);
                all
            })
        }

        /// The section that has the field `name`, as the field's name.
        fn section_field(name: &str) -> Option<&'static str> {
            [$(<$ty>::FIELDS),*]
                .into_iter()
                .flatten()
                .copied()
                .find(|f| *f == name)
        }

        /// Reads the value of the sections' field `name` from `map` into `scenario`.
        fn read_section<'de, A: MapAccess<'de>>(
            scenario: &mut Scenario,
            name: &str,
            map: &mut A,
        ) -> Result<(), A::Error> {
            $(
                if <$ty>::FIELDS.contains(&name) {
                    return scenario.$field.read(name, map);
                }
            )*
            Err(de::Error::unknown_field(name, all_fields()))
        }

        /// Writes every section's fields, in order.
        fn write_sections<S: serde::ser::SerializeStruct>(
            scenario: &Scenario,
            st: &mut S,
        ) -> Result<(), S::Error> {
            $(scenario.$field.write(st)?;)*
            Ok(())
        }

        /// Sets the algorithms' parameters of every section in `params`.
        fn section_params(scenario: &Scenario, params: &mut Params) {
            $(scenario.$field.params(params);)*
        }

        /// Each family's section's fields as the refusal of foreign fields sees them
        /// (`crates/sim/src/fields.rs`): name, how it is refused, whether it is set; in
        /// order.
        pub(crate) fn section_parts(scenario: &Scenario) -> Vec<(&'static str, Refusal, bool)> {
            let mut parts = Vec::new();
            $(parts.extend(scenario.$field.parts());)*
            parts
        }
    };
}

sections! {
    mutex: MutexSpec,
    election: ElectionSpec,
    clock_sync: ClockSyncSpec,
}

/// A key of the file: the scenario's own field or a section's, by name.
enum Key {
    Own(&'static str),
    Section(&'static str),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("field identifier")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                if let Some(f) = HEAD.iter().chain(&TAIL).copied().find(|f| *f == v) {
                    Ok(Key::Own(f))
                } else if let Some(f) = section_field(v) {
                    Ok(Key::Section(f))
                } else {
                    Err(E::unknown_field(v, all_fields()))
                }
            }
        }
        d.deserialize_identifier(V)
    }
}

impl<'de> Deserialize<'de> for Scenario {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scenario, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scenario;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("struct Scenario")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scenario, A::Error> {
                let mut s = Scenario::default();
                let mut algorithm = None;
                let mut seen = std::collections::BTreeSet::new();
                while let Some(key) = map.next_key::<Key>()? {
                    let (Key::Own(name) | Key::Section(name)) = key;
                    if !seen.insert(name) {
                        return Err(de::Error::duplicate_field(name));
                    }
                    match key {
                        Key::Section(f) => read_section(&mut s, f, &mut map)?,
                        Key::Own("name") => s.name = map.next_value()?,
                        Key::Own("algorithm") => algorithm = Some(map.next_value()?),
                        Key::Own("nodes") => s.nodes = map.next_value()?,
                        Key::Own("ids") => s.ids = map.next_value()?,
                        Key::Own("order") => s.order = map.next_value()?,
                        Key::Own("seed") => s.seed = map.next_value()?,
                        Key::Own("until") => s.until = map.next_value::<Dur>()?.decode(),
                        Key::Own("multicast") => s.multicast = map.next_value()?,
                        Key::Own("app") => s.app = map.next_value()?,
                        Key::Own("network") => s.network = map.next_value()?,
                        Key::Own("clocks") => s.clocks = map.next_value()?,
                        Key::Own("workload") => s.workload = map.next_value()?,
                        Key::Own("limits") => s.limits = map.next_value()?,
                        Key::Own("ties") => s.ties = map.next_value()?,
                        Key::Own("check") => s.check = map.next_value()?,
                        Key::Own("event") => s.events = map.next_value()?,
                        Key::Own(other) => unreachable!("`{other}` is in HEAD or TAIL"),
                    }
                }
                s.algorithm = algorithm.ok_or_else(|| de::Error::missing_field("algorithm"))?;
                Ok(s)
            }
        }
        d.deserialize_struct("Scenario", all_fields(), V)
    }
}

impl Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Scenario", all_fields().len())?;
        st.serialize_field("name", &self.name)?;
        st.serialize_field("algorithm", &self.algorithm)?;
        st.serialize_field("nodes", &self.nodes)?;
        st.serialize_field("ids", &self.ids)?;
        match &self.order {
            Some(order) => st.serialize_field("order", order)?,
            None => st.skip_field("order")?,
        }
        st.serialize_field("seed", &self.seed)?;
        st.serialize_field("until", &Dur::encode(&self.until))?;
        write_sections(self, &mut st)?;
        st.serialize_field("multicast", &self.multicast)?;
        st.serialize_field("app", &self.app)?;
        st.serialize_field("network", &self.network)?;
        st.serialize_field("clocks", &self.clocks)?;
        st.serialize_field("workload", &self.workload)?;
        match &self.limits {
            Some(limits) => st.serialize_field("limits", limits)?,
            None => st.skip_field("limits")?,
        }
        match &self.ties {
            Some(ties) => st.serialize_field("ties", ties)?,
            None => st.skip_field("ties")?,
        }
        match &self.check {
            Some(check) => st.serialize_field("check", check)?,
            None => st.skip_field("check")?,
        }
        st.serialize_field("event", &self.events)?;
        st.end()
    }
}

fn default_seed() -> u64 {
    1
}

impl Default for Scenario {
    /// An empty scenario: no algorithm, no nodes; fill in at least `algorithm` and `nodes`.
    fn default() -> Self {
        Scenario {
            name: None,
            algorithm: String::new(),
            nodes: None,
            ids: None,
            order: None,
            seed: default_seed(),
            until: None,
            mutex: MutexSpec::default(),
            election: ElectionSpec::default(),
            clock_sync: ClockSyncSpec::default(),
            multicast: None,
            app: None,
            network: NetworkSpec::default(),
            clocks: None,
            workload: None,
            limits: None,
            ties: None,
            check: None,
            events: Vec::new(),
        }
    }
}

/// The ring order of `nodes = N` (the ids 0..N-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RingOrder {
    /// 0, 1, ..., N-1.
    Ascending,
    /// N-1, ..., 1, 0.
    Descending,
    /// A shuffle drawn from the scenario's `seed` (Fisher-Yates with the simulator's generator).
    Random,
}

impl RingOrder {
    /// The ids 0..n in this order; `seed` draws the random one.
    pub fn ids(self, n: u32, seed: u64) -> Vec<NodeId> {
        use rand::{Rng, SeedableRng};
        let mut ids: Vec<NodeId> = (0..n).map(NodeId).collect();
        match self {
            RingOrder::Ascending => {}
            RingOrder::Descending => ids.reverse(),
            RingOrder::Random => {
                let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
                for i in (1..ids.len()).rev() {
                    ids.swap(i, rng.gen_range(0..=i));
                }
            }
        }
        ids
    }
}

/// The order of timers due at exactly the same time ([`Scenario::ties`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ties {
    /// The one set first goes off first.
    Scheduled,
    /// An order drawn from the run's seed (a generator of its own, so that every other draw of
    /// the run is the same as without it).
    Seeded,
}

/// The largest membership the simulator takes.
pub const MAX_NODES: u32 = 10_000_000;

/// The default horizon when a scenario names none.
pub const DEFAULT_UNTIL: Duration = Duration::from_secs(60);

/// How messages travel.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// One-way delay of each message.
    #[serde(default)]
    pub delay: DelaySpec,
    /// Per-link FIFO delivery.
    #[serde(default = "yes")]
    pub fifo: bool,
    /// Probability that a message is dropped.
    #[serde(default)]
    pub loss: f64,
    /// Probability that a message is delivered twice.
    #[serde(default)]
    pub duplicate: f64,
    /// Reliable FIFO links under the algorithm: sequence numbers, acknowledgements,
    /// retransmission and deduplication mask loss, duplication and reordering
    /// (`distsync_algorithms::link`); the link's own frames are counted apart, in the report's
    /// `link` section.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reliable: bool,
}

fn yes() -> bool {
    true
}

impl NetworkSpec {
    /// The reliable link's first retransmission timeout: the worst round trip (twice the delay
    /// bound) and a quarter more, so that on a network without loss nothing is sent twice.
    pub fn link_timeout(&self) -> Duration {
        (self.delay.bound() * 5 / 2).max(Duration::from_micros(10))
    }
}

impl Default for NetworkSpec {
    fn default() -> Self {
        NetworkSpec {
            delay: DelaySpec::default(),
            fifo: true,
            loss: 0.0,
            duplicate: 0.0,
            reliable: false,
        }
    }
}

/// A delay distribution: `"1ms"`, `{ uniform = ["1ms", "5ms"] }` or `{ exponential = "2ms" }`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DelaySpec {
    /// Always the same delay T.
    Constant(Duration),
    /// Uniform between the two bounds.
    Uniform(Duration, Duration),
    /// Exponential with the given mean.
    Exponential(Duration),
}

impl Default for DelaySpec {
    fn default() -> Self {
        DelaySpec::Constant(Duration::from_millis(1))
    }
}

impl DelaySpec {
    /// The mean delay.
    pub fn mean(&self) -> Duration {
        match *self {
            DelaySpec::Constant(d) | DelaySpec::Exponential(d) => d,
            DelaySpec::Uniform(lo, hi) => (lo + hi) / 2,
        }
    }

    /// The largest delay that can occur, or a generous bound for the exponential.
    pub fn bound(&self) -> Duration {
        match *self {
            DelaySpec::Constant(d) => d,
            DelaySpec::Uniform(_, hi) => hi,
            DelaySpec::Exponential(mean) => mean * 20,
        }
    }
}

impl Serialize for DelaySpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use distsync_core::format_duration as f;
        use serde::ser::SerializeMap;
        match *self {
            DelaySpec::Constant(d) => s.serialize_str(&f(d)),
            DelaySpec::Uniform(lo, hi) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("uniform", &[f(lo), f(hi)])?;
                m.end()
            }
            DelaySpec::Exponential(d) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("exponential", &f(d))?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for DelaySpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DelaySpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a duration like \"1ms\", {{ uniform = [\"1ms\", \"5ms\"] }} or {{ exponential = \"2ms\" }}")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DelaySpec, E> {
                distsync_core::parse_duration(v)
                    .map(DelaySpec::Constant)
                    .map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DelaySpec, E> {
                Err(E::custom(format!(
                    "the bare number {v} is not a duration: add a unit, like \"{v}ms\""
                )))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<DelaySpec, E> {
                self.visit_i64(v as i64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<DelaySpec, E> {
                Err(E::custom(format!(
                    "the bare number {v} is not a duration: add a unit, like \"{v}ms\""
                )))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DelaySpec, A::Error> {
                #[derive(Deserialize)]
                struct D(#[serde(with = "serde_duration")] Duration);
                let Some(key) = map.next_key::<String>()? else {
                    return Err(de::Error::custom("an empty table is not a delay: use { uniform = [\"1ms\", \"5ms\"] } or { exponential = \"2ms\" }"));
                };
                let spec = match key.as_str() {
                    "uniform" => {
                        let [D(lo), D(hi)] = map.next_value::<[D; 2]>()?;
                        if lo > hi {
                            return Err(de::Error::custom(format!(
                                "uniform bounds must be [low, high], got [{}, {}]",
                                distsync_core::format_duration(lo),
                                distsync_core::format_duration(hi)
                            )));
                        }
                        DelaySpec::Uniform(lo, hi)
                    }
                    "exponential" => DelaySpec::Exponential(map.next_value::<D>()?.0),
                    other => {
                        return Err(de::Error::custom(format!(
                        "unknown delay distribution `{other}`, expected `uniform` or `exponential`"
                    )))
                    }
                };
                if let Some(extra) = map.next_key::<String>()? {
                    return Err(de::Error::custom(format!(
                        "a delay has one distribution, found a second key `{extra}`"
                    )));
                }
                Ok(spec)
            }
        }
        d.deserialize_any(V)
    }
}

/// The epoch of runs with physical clocks: true time 0 reads 1000 s.
pub const EPOCH_NS: u64 = 1_000_000_000_000;

/// How clock adjustments are applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Adjust {
    /// Jump to the new reading at once (may go backwards).
    #[default]
    Step,
    /// Run faster or slower, by at most `slew_ppm`, until the correction is made.
    Slew,
}

/// Physical clocks: `offset = { uniform = ["-50ms", "50ms"] }`, `drift_ppm = { uniform = [-100,
/// 100] }`, `adjust = "step" | "slew"`, and per-node values in `[[clocks.node]]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClocksSpec {
    /// Each clock's offset from true time at the start: a signed duration or a uniform range.
    #[serde(default)]
    pub offset: SignedSpec,
    /// Each clock's drift in parts per million: a number or a uniform range.
    #[serde(default)]
    pub drift_ppm: NumberSpec,
    /// How corrections are applied.
    #[serde(default)]
    pub adjust: Adjust,
    /// The fastest a slew may correct, in parts per million (default 500, as Unix adjtime).
    #[serde(default = "default_slew_ppm")]
    pub slew_ppm: f64,
    /// Per-node values, overriding the distributions.
    #[serde(default)]
    pub node: Vec<NodeClockSpec>,
}

fn default_slew_ppm() -> f64 {
    500.0
}

/// One node's clock in `[[clocks.node]]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeClockSpec {
    /// The node.
    pub id: NodeId,
    /// Its offset at the start, a signed duration like "-10s".
    #[serde(
        default,
        deserialize_with = "signed_duration_opt",
        serialize_with = "ser_signed_opt"
    )]
    pub offset: Option<i64>,
    /// Its drift in parts per million.
    #[serde(default)]
    pub drift_ppm: Option<f64>,
}

fn signed_duration_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    SignedSpec::deserialize(d).and_then(|s| match s {
        SignedSpec::Fixed(v) => Ok(Some(v)),
        SignedSpec::Uniform(..) => Err(de::Error::custom(
            "a node's own offset is one duration, like \"-10s\"",
        )),
    })
}

fn ser_signed_opt<S: serde::Serializer>(v: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => SignedSpec::Fixed(*v).serialize(s),
        None => s.serialize_none(),
    }
}

/// A signed duration in ns, fixed (`"-5ms"`) or drawn uniformly (`{ uniform = ["-50ms", "50ms"] }`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SignedSpec {
    /// Always this value.
    Fixed(i64),
    /// Uniform between the bounds.
    Uniform(i64, i64),
}

/// A number, fixed (`50`) or drawn uniformly (`{ uniform = [-100, 100] }`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NumberSpec {
    /// Always this value.
    Fixed(f64),
    /// Uniform between the bounds.
    Uniform(f64, f64),
}

impl Default for SignedSpec {
    fn default() -> Self {
        SignedSpec::Fixed(0)
    }
}

impl Default for NumberSpec {
    fn default() -> Self {
        NumberSpec::Fixed(0.0)
    }
}

fn signed_text(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    format!(
        "{sign}{}",
        distsync_core::format_duration(Duration::from_nanos(ns.unsigned_abs()))
    )
}

impl Serialize for SignedSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match *self {
            SignedSpec::Fixed(v) => s.serialize_str(&signed_text(v)),
            SignedSpec::Uniform(lo, hi) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("uniform", &[signed_text(lo), signed_text(hi)])?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for SignedSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SignedSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(
                    f,
                    "a signed duration like \"-5ms\" or {{ uniform = [\"-50ms\", \"50ms\"] }}"
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SignedSpec, E> {
                distsync_core::parse_signed_duration(v)
                    .map(SignedSpec::Fixed)
                    .map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SignedSpec, E> {
                Err(E::custom(format!(
                    "the bare number {v} is not a duration: add a unit, like \"{v}ms\""
                )))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SignedSpec, E> {
                self.visit_i64(v as i64)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<SignedSpec, E> {
                Err(E::custom(format!(
                    "the bare number {v} is not a duration: add a unit, like \"{v}ms\""
                )))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SignedSpec, A::Error> {
                match map.next_key::<String>()?.as_deref() {
                    Some("uniform") => {
                        let [lo, hi] = map.next_value::<[String; 2]>()?;
                        let lo =
                            distsync_core::parse_signed_duration(&lo).map_err(de::Error::custom)?;
                        let hi =
                            distsync_core::parse_signed_duration(&hi).map_err(de::Error::custom)?;
                        if lo > hi {
                            return Err(de::Error::custom("uniform bounds must be [low, high]"));
                        }
                        Ok(SignedSpec::Uniform(lo, hi))
                    }
                    Some(other) => Err(de::Error::custom(format!(
                        "unknown distribution `{other}`, expected `uniform`"
                    ))),
                    None => Err(de::Error::custom("an empty table is not a duration")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for NumberSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match *self {
            NumberSpec::Fixed(v) => s.serialize_f64(v),
            NumberSpec::Uniform(lo, hi) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("uniform", &[lo, hi])?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for NumberSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NumberSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a number like 50 or {{ uniform = [-100, 100] }}")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<NumberSpec, E> {
                Ok(NumberSpec::Fixed(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<NumberSpec, E> {
                Ok(NumberSpec::Fixed(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<NumberSpec, E> {
                Ok(NumberSpec::Fixed(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NumberSpec, A::Error> {
                match map.next_key::<String>()?.as_deref() {
                    Some("uniform") => {
                        let [lo, hi] = map.next_value::<[f64; 2]>()?;
                        if lo.is_nan() || hi.is_nan() || lo > hi {
                            return Err(de::Error::custom("uniform bounds must be [low, high]"));
                        }
                        Ok(NumberSpec::Uniform(lo, hi))
                    }
                    Some(other) => Err(de::Error::custom(format!(
                        "unknown distribution `{other}`, expected `uniform`"
                    ))),
                    None => Err(de::Error::custom("an empty table is not a number")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// What the application asks of mutual-exclusion processes.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// How requests arrive.
    pub kind: WorkloadKind,
    /// Requests per second per node (`poisson`).
    #[serde(default)]
    pub rate: Option<f64>,
    /// Time spent inside the critical section (E); default 10ms.
    #[serde(default = "default_cs", with = "serde_duration")]
    pub cs: Duration,
    /// Requests per node, after which the node stops requesting; unlimited when absent.
    #[serde(default)]
    pub requests: Option<u64>,
    /// `light`: quiet time between one request's exit and the next request (default: 20 x the
    /// largest message delay, so that every message of the previous request has arrived).
    #[serde(default, with = "serde_duration::option")]
    pub gap: Option<Duration>,
}

fn default_cs() -> Duration {
    Duration::from_millis(10)
}

/// How mutual-exclusion requests arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// Independent Poisson arrivals at `rate` per node.
    Poisson,
    /// Every node always has a request pending (heavy load).
    Saturated,
    /// One request in the whole system at a time (light load).
    Light,
    /// Only scripted `request` events.
    None,
}

/// One scripted event: `at` and exactly one action.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    /// When, in simulated time.
    #[serde(with = "serde_duration")]
    pub at: Duration,
    /// Node asks for the critical section (mutex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<NodeId>,
    /// Node crashes and loses its state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<NodeId>,
    /// Node restarts with fresh state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recover: Option<NodeId>,
    /// Links between these groups stop delivering.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Vec<Vec<NodeId>>>,
    /// Every link delivers again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heal: Option<bool>,
    /// Node starts an election (it noticed the coordinator is gone): `elect = 4`, or
    /// `elect = "all"` for every live process, in ring order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elect: Option<Elect>,
    /// Node synchronizes its clock now (clock synchronization).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<NodeId>,
    /// Node starts a snapshot (snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<NodeId>,
    /// Node multicasts a message (multicast).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multicast: Option<NodeId>,
}

/// Who starts an election in an `elect` event: one node (`elect = 4`) or every process
/// (`elect = "all"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elect {
    /// This node.
    Node(NodeId),
    /// Every live process, in ring order.
    All,
}

impl From<NodeId> for Elect {
    fn from(node: NodeId) -> Self {
        Elect::Node(node)
    }
}

impl Serialize for Elect {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Elect::Node(n) => n.serialize(s),
            Elect::All => s.serialize_str("all"),
        }
    }
}

impl<'de> Deserialize<'de> for Elect {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Elect;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a node id like 4, or \"all\" (every process)")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Elect, E> {
                u32::try_from(v)
                    .map(|v| Elect::Node(NodeId(v)))
                    .map_err(|_| {
                        E::custom(format!(
                            "node id {v} is out of range (at most {})",
                            u32::MAX
                        ))
                    })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Elect, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!(
                        "expected a node id like 4, or \"all\" (every process), got {v}"
                    ))),
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Elect, E> {
                if v == "all" {
                    Ok(Elect::All)
                } else {
                    Err(E::custom(format!(
                        "expected a node id like 4, or \"all\" (every process), got \"{v}\""
                    )))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A scripted event, checked.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Node asks for the critical section.
    Request(NodeId),
    /// Node crashes.
    Crash(NodeId),
    /// Node recovers.
    Recover(NodeId),
    /// Groups that can talk only among themselves; unlisted nodes form one more group.
    Partition(Vec<Vec<NodeId>>),
    /// Partition ends.
    Heal,
    /// Node starts an election.
    Elect(NodeId),
    /// Every live process starts an election, in ring order (`elect = "all"`): the same as one
    /// `elect` event per process at that time, in ring order, in one scripted event.
    ElectAll,
    /// Node synchronizes its clock.
    Sync(NodeId),
    /// Node starts a snapshot.
    Snapshot(NodeId),
    /// Node multicasts a message.
    Multicast(NodeId),
}

impl EventSpec {
    fn action(&self) -> Result<Action, String> {
        let mut found = Vec::new();
        if let Some(n) = self.request {
            found.push(("request", Action::Request(n)));
        }
        if let Some(n) = self.crash {
            found.push(("crash", Action::Crash(n)));
        }
        if let Some(n) = self.recover {
            found.push(("recover", Action::Recover(n)));
        }
        match self.elect {
            Some(Elect::Node(n)) => found.push(("elect", Action::Elect(n))),
            Some(Elect::All) => found.push(("elect", Action::ElectAll)),
            None => {}
        }
        if let Some(n) = self.sync {
            found.push(("sync", Action::Sync(n)));
        }
        if let Some(n) = self.snapshot {
            found.push(("snapshot", Action::Snapshot(n)));
        }
        if let Some(n) = self.multicast {
            found.push(("multicast", Action::Multicast(n)));
        }
        if let Some(groups) = &self.partition {
            found.push(("partition", Action::Partition(groups.clone())));
        }
        match self.heal {
            Some(true) => found.push(("heal", Action::Heal)),
            Some(false) => {
                return Err(
                    "`heal = false` means nothing: write `heal = true` or leave it out".into(),
                )
            }
            None => {}
        }
        match found.len() {
            1 => Ok(found.pop().expect("one").1),
            0 => {
                Err("an event needs one action: request, crash, recover, partition, heal, elect, sync, snapshot or multicast"
                    .into())
            }
            _ => Err(format!(
                "an event has exactly one action, this one has {}",
                found
                    .iter()
                    .map(|(k, _)| *k)
                    .collect::<Vec<_>>()
                    .join(" and ")
            )),
        }
    }
}

/// A scenario that cannot be run, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioError {
    /// The file (or "command line") the scenario came from.
    pub origin: String,
    /// The field at fault, like `network.loss` or `event[2].crash`; empty for a syntax error.
    pub field: String,
    /// What was expected.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(f, "{}: `{}`: {}", self.origin, self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

/// A checked scenario: the membership is built and the events are in time order.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The scenario as written.
    pub scenario: Scenario,
    /// The membership, in ring order.
    pub peers: Peers,
    /// The scripted events, sorted by time (stable).
    pub actions: Vec<(Duration, usize, Action)>,
}

impl Scenario {
    /// Parses TOML text; `origin` names the file in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        toml::from_str(text).map_err(|e| ScenarioError {
            origin: origin.to_string(),
            field: String::new(),
            message: e.to_string().trim_end().to_string(),
        })
    }

    /// Reads and parses a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            origin: origin.clone(),
            field: String::new(),
            message: format!("cannot read the scenario file: {e}"),
        })?;
        Scenario::from_toml(&text, &origin)
    }

    /// The algorithm parameters the scenario sets.
    pub fn params(&self) -> Params {
        let mut params = Params {
            slew_ppm: self
                .clocks
                .as_ref()
                .filter(|c| c.adjust == Adjust::Slew)
                .map(|c| c.slew_ppm),
            balance: self
                .app
                .as_ref()
                .filter(|a| a.kind == crate::app::AppKind::Bank)
                .and_then(|a| a.balance),
            balances: self
                .app
                .as_ref()
                .filter(|a| a.kind == crate::app::AppKind::Bank)
                .and_then(|a| a.balances.clone()),
            link_timeout: self.network.reliable.then(|| self.network.link_timeout()),
            ..Params::default()
        };
        section_params(self, &mut params);
        params
    }

    /// Checks everything that does not depend on the algorithm; `origin` names the file.
    pub fn check(&self, origin: &str) -> Result<Checked, ScenarioError> {
        let err = |field: &str, message: String| ScenarioError {
            origin: origin.to_string(),
            field: field.to_string(),
            message,
        };
        let ids = match (&self.nodes, &self.ids) {
            (Some(_), Some(_)) => {
                return Err(err("ids", "give either `nodes` or `ids`, not both".into()))
            }
            (None, None) => {
                return Err(err(
                    "nodes",
                    "missing: give `nodes = N` (ids 0..N-1) or `ids = [...]` (in ring order)"
                        .into(),
                ))
            }
            (Some(0), None) => return Err(err("nodes", "expected at least 1 node, got 0".into())),
            (Some(n), None) if *n > MAX_NODES => {
                return Err(err(
                    "nodes",
                    format!("at most {MAX_NODES} nodes can be simulated, got {n}"),
                ))
            }
            (Some(n), None) => self
                .order
                .unwrap_or(RingOrder::Ascending)
                .ids(*n, self.seed),
            (None, Some(_)) if self.order.is_some() => {
                return Err(err(
                    "order",
                    "`order` arranges the ids of `nodes = N`; with `ids = [...]` the ring order is the list's: remove one".into(),
                ))
            }
            (None, Some(ids)) => ids.clone(),
        };
        let peers = Peers::new(ids).map_err(|e| err("ids", e.to_string()))?;
        let member = |field: &str, id: NodeId| -> Result<(), ScenarioError> {
            if peers.contains(id) {
                Ok(())
            } else {
                Err(err(
                    field,
                    format!(
                        "node {id} is not one of the scenario's node ids ({})",
                        describe_ids(&peers)
                    ),
                ))
            }
        };
        self.mutex.check(member)?;
        for (field, p) in [
            ("network.loss", self.network.loss),
            ("network.duplicate", self.network.duplicate),
        ] {
            if !(0.0..=1.0).contains(&p) || p.is_nan() {
                return Err(err(
                    field,
                    format!("expected a probability between 0 and 1, got {p}"),
                ));
            }
        }
        if let Some(clocks) = &self.clocks {
            let limit = (EPOCH_NS / 2) as i64;
            let offsets = match clocks.offset {
                SignedSpec::Fixed(v) => vec![v],
                SignedSpec::Uniform(lo, hi) => vec![lo, hi],
            };
            if offsets.iter().any(|o| o.abs() > limit) {
                return Err(err(
                    "clocks.offset",
                    "offsets are limited to 500s either way".into(),
                ));
            }
            let drifts = match clocks.drift_ppm {
                NumberSpec::Fixed(v) => vec![v],
                NumberSpec::Uniform(lo, hi) => vec![lo, hi],
            };
            if drifts
                .iter()
                .any(|d| !d.is_finite() || d.abs() >= 100_000.0)
            {
                return Err(err(
                    "clocks.drift_ppm",
                    "expected a drift between -100000 and 100000 ppm".into(),
                ));
            }
            if !(clocks.slew_ppm > 0.0 && clocks.slew_ppm < 100_000.0) {
                return Err(err(
                    "clocks.slew_ppm",
                    format!(
                        "expected a rate between 0 and 100000 ppm, got {}",
                        clocks.slew_ppm
                    ),
                ));
            }
            for (i, c) in clocks.node.iter().enumerate() {
                member(&format!("clocks.node[{i}].id"), c.id)?;
                if c.offset.is_some_and(|o| o.abs() > limit) {
                    return Err(err(
                        &format!("clocks.node[{i}].offset"),
                        "offsets are limited to 500s either way".into(),
                    ));
                }
                if c.drift_ppm
                    .is_some_and(|d| !d.is_finite() || d.abs() >= 100_000.0)
                {
                    return Err(err(
                        &format!("clocks.node[{i}].drift_ppm"),
                        "expected a drift between -100000 and 100000 ppm".into(),
                    ));
                }
            }
        }
        if let Some(until) = self.until {
            if until.is_zero() {
                return Err(err("until", "the horizon must be later than 0s".into()));
            }
        }
        if let Some(w) = &self.workload {
            match (w.kind, w.rate) {
                (WorkloadKind::Poisson, None) => {
                    return Err(err(
                        "workload.rate",
                        "a poisson workload needs `rate` (requests per second per node)".into(),
                    ))
                }
                (WorkloadKind::Poisson, Some(r)) if !(r > 0.0 && r.is_finite()) => {
                    return Err(err(
                        "workload.rate",
                        format!("expected a positive number of requests per second, got {r}"),
                    ))
                }
                (WorkloadKind::Poisson, _) => {}
                (kind, Some(_)) => {
                    return Err(err(
                        "workload.rate",
                        format!("`rate` applies to the poisson workload, not to {kind:?}")
                            .to_lowercase(),
                    ))
                }
                _ => {}
            }
        }
        let horizon = self.until.unwrap_or(DEFAULT_UNTIL);
        let mut actions = Vec::with_capacity(self.events.len());
        for (i, spec) in self.events.iter().enumerate() {
            let field = format!("event[{i}]");
            // A scripted event after the horizon would never happen: refused, not dropped.
            if spec.at > horizon {
                return Err(err(
                    &format!("{field}.at"),
                    format!(
                        "at {} is after the run's horizon, `until` = {}{}, so the event would never happen: move it before the horizon or raise `until`",
                        format_duration(spec.at),
                        format_duration(horizon),
                        if self.until.is_none() { " (the default)" } else { "" }
                    ),
                ));
            }
            let action = spec.action().map_err(|m| err(&field, m))?;
            match &action {
                Action::Request(n) => member(&format!("{field}.request"), *n)?,
                Action::Crash(n) => member(&format!("{field}.crash"), *n)?,
                Action::Recover(n) => member(&format!("{field}.recover"), *n)?,
                Action::Elect(n) => member(&format!("{field}.elect"), *n)?,
                Action::Sync(n) => member(&format!("{field}.sync"), *n)?,
                Action::Snapshot(n) => member(&format!("{field}.snapshot"), *n)?,
                Action::Multicast(n) => member(&format!("{field}.multicast"), *n)?,
                Action::Partition(groups) => {
                    let mut seen = std::collections::BTreeSet::new();
                    for n in groups.iter().flatten() {
                        member(&format!("{field}.partition"), *n)?;
                        if !seen.insert(*n) {
                            return Err(err(
                                &format!("{field}.partition"),
                                format!("node {n} is in two groups"),
                            ));
                        }
                    }
                }
                Action::Heal | Action::ElectAll => {}
            }
            actions.push((spec.at, i, action));
        }
        actions.sort_by_key(|(at, i, _)| (*at, *i));
        Ok(Checked {
            scenario: self.clone(),
            peers,
            actions,
        })
    }
}

fn describe_ids(peers: &Peers) -> String {
    let ids = peers.ids();
    let mut sorted: Vec<u32> = ids.iter().map(|i| i.0).collect();
    sorted.sort_unstable();
    if sorted.windows(2).all(|w| w[1] == w[0] + 1) {
        format!("{}..{}", sorted[0], sorted[sorted.len() - 1])
    } else if ids.len() <= 12 {
        format!("{:?}", sorted)
    } else {
        format!("{} ids", ids.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Checked, ScenarioError> {
        Scenario::from_toml(text, "t.toml")?.check("t.toml")
    }

    #[test]
    fn the_design_example_parses() {
        let c = parse(
            r#"
            name = "bully-eight-processes"
            algorithm = "ricart-agrawala"
            nodes = 8
            seed = 1
            until = "10s"
            [network]
            delay = { uniform = ["1ms", "5ms"] }
            fifo = true
            loss = 0.0
            duplicate = 0.0
            [workload]
            kind = "poisson"
            rate = 5.0
            cs = "10ms"
            requests = 100
            [[event]]
            at = "0ms"
            crash = 7
            [[event]]
            at = "1ms"
            partition = [[0, 1, 2], [3, 4]]
            "#,
        )
        .unwrap();
        assert_eq!(c.peers.len(), 8);
        assert_eq!(
            c.scenario.network.delay,
            DelaySpec::Uniform(Duration::from_millis(1), Duration::from_millis(5))
        );
        assert_eq!(c.actions.len(), 2);
    }

    #[test]
    fn bad_fields_are_named() {
        let e = parse("algorithm = \"x\"\nnodes = 3\n[network]\nfifoo = true").unwrap_err();
        assert!(e.to_string().contains("unknown field `fifoo`"), "{e}");
        let e = parse("algorithm = \"x\"\nnodes = 3\n[network]\nloss = 1.5").unwrap_err();
        assert_eq!(e.field, "network.loss");
        let e = parse("algorithm = \"x\"\nnodes = 3\n[network]\ndelay = \"-1ms\"").unwrap_err();
        assert!(e.message.contains("negative"), "{e}");
        let e = parse("algorithm = \"x\"\nnodes = 3\n[network]\ndelay = 5").unwrap_err();
        assert!(e.message.contains("add a unit"), "{e}");
        let e =
            parse("algorithm = \"x\"\nnodes = 3\n[[event]]\nat = \"1ms\"\ncrash = 3").unwrap_err();
        assert_eq!(e.field, "event[0].crash");
        assert!(e.message.contains("0..2"), "{e}");
        let e =
            parse("algorithm = \"x\"\nnodes = 3\n[[event]]\nat = \"1ms\"\ncrash = 1\nrecover = 1")
                .unwrap_err();
        assert!(e.message.contains("crash and recover"), "{e}");
        let e = parse("algorithm = \"x\"\n[workload]\nkind = \"poisson\"").unwrap_err();
        assert_eq!(e.field, "nodes");
        let e = parse("algorithm = \"x\"\nnodes = 2\n[workload]\nkind = \"poisson\"").unwrap_err();
        assert_eq!(e.field, "workload.rate");
        let e =
            parse("algorithm = \"x\"\nnodes = 2\nnetwork.delay = { uniform = [\"5ms\", \"1ms\"] }")
                .unwrap_err();
        assert!(e.message.contains("[low, high]"), "{e}");
    }

    #[test]
    fn clocks_parse_with_signed_offsets_and_per_node_values() {
        let c = parse(
            "algorithm = \"x\"\nnodes = 3\n[clocks]\noffset = { uniform = [\"-50ms\", \"50ms\"] }\ndrift_ppm = { uniform = [-100, 100] }\nadjust = \"slew\"\n[[clocks.node]]\nid = 2\noffset = \"-10s\"\ndrift_ppm = 5",
        )
        .unwrap();
        let clocks = c.scenario.clocks.unwrap();
        assert_eq!(clocks.offset, SignedSpec::Uniform(-50_000_000, 50_000_000));
        assert_eq!(clocks.drift_ppm, NumberSpec::Uniform(-100.0, 100.0));
        assert_eq!(clocks.adjust, Adjust::Slew);
        assert_eq!(clocks.node[0].offset, Some(-10_000_000_000));
        let e = parse("algorithm = \"x\"\nnodes = 3\n[[clocks.node]]\nid = 7\noffset = \"1s\"")
            .unwrap_err();
        assert_eq!(e.field, "clocks.node[0].id");
        let e = parse("algorithm = \"x\"\nnodes = 3\n[clocks]\noffset = \"900s\"").unwrap_err();
        assert_eq!(e.field, "clocks.offset");
        let e = parse("algorithm = \"x\"\nnodes = 3\n[clocks]\noffset = 5").unwrap_err();
        assert!(e.message.contains("add a unit"), "{e}");
    }

    #[test]
    fn order_arranges_the_ring_of_nodes() {
        let ring = |text: &str| -> Vec<u32> {
            parse(text)
                .unwrap()
                .peers
                .ids()
                .iter()
                .map(|i| i.0)
                .collect()
        };
        assert_eq!(ring("algorithm = \"x\"\nnodes = 4"), vec![0, 1, 2, 3]);
        assert_eq!(
            ring("algorithm = \"x\"\nnodes = 4\norder = \"descending\""),
            vec![3, 2, 1, 0]
        );
        let a = ring("algorithm = \"x\"\nnodes = 50\norder = \"random\"\nseed = 3");
        let b = ring("algorithm = \"x\"\nnodes = 50\norder = \"random\"\nseed = 4");
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert_ne!(a, sorted);
        assert_ne!(a, b);
        assert_eq!(
            a,
            ring("algorithm = \"x\"\nnodes = 50\norder = \"random\"\nseed = 3")
        );
        let e = parse("algorithm = \"x\"\nids = [2, 1]\norder = \"random\"").unwrap_err();
        assert_eq!(e.field, "order");
        let e = parse("algorithm = \"x\"\nnodes = 3\norder = \"shuffled\"").unwrap_err();
        assert!(
            e.message.contains("`ascending`, `descending`, `random`"),
            "{e}"
        );
    }

    #[test]
    fn events_are_sorted_stably_by_time() {
        let c = parse(
            "algorithm = \"x\"\nnodes = 3\n[[event]]\nat = \"2ms\"\ncrash = 1\n[[event]]\nat = \"1ms\"\nrecover = 2\n[[event]]\nat = \"1ms\"\nheal = true",
        )
        .unwrap();
        let order: Vec<usize> = c.actions.iter().map(|(_, i, _)| *i).collect();
        assert_eq!(order, vec![1, 2, 0]);
    }
}
