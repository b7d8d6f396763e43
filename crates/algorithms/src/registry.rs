//! From a kebab-case name to an algorithm, its family and a one-line description.
//!
//! Runtimes are generic over the algorithm type; they reach the type for a name through a
//! visitor (`visit_mutex`), so that adding an algorithm is one line in the table below. The
//! simulator, the exhaustive checker, the cluster and the page all find algorithms here: the
//! types the mutual-exclusion, election, multicast and snapshot visitors hand out are
//! [`Explorable`], as the checker needs, so it keeps no table of its own.

use crate::plug::Plugged;
use crate::validate::Validate;
use distsync_core::clock_sync::ClockSync;
use distsync_core::election::Election;
use distsync_core::multicast::Multicast;
use distsync_core::mutex::MutualExclusion;
use distsync_core::snapshot::GlobalSnapshot;
use distsync_core::{Algorithm, ParamError, Params, Process};
use serde::Serialize;
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::RwLock;

/// What the exhaustive checker needs of an algorithm type: `Clone` to copy states, `Hash` to
/// fingerprint them, `Debug` to show them, and `Send + Sync` to explore on every core. Every
/// mutual-exclusion, election, multicast and snapshot algorithm of the registry is one (the
/// visitors promise it); the clock-synchronization algorithms, which the checker does not
/// explore, need not be.
pub trait Explorable:
    Process<
        Msg: Send + Sync + 'static,
        Timer: Send + Sync + 'static,
        Input: Send + Sync + Eq + Hash,
        Output: Sync,
    > + Algorithm
    + Clone
    + Debug
    + Hash
    + Send
    + Sync
    + 'static
{
}

impl<A> Explorable for A where
    A: Process<
            Msg: Send + Sync + 'static,
            Timer: Send + Sync + 'static,
            Input: Send + Sync + Eq + Hash,
            Output: Sync,
        > + Algorithm
        + Clone
        + Debug
        + Hash
        + Send
        + Sync
        + 'static
{
}

/// The family an algorithm belongs to, which decides its inputs, outputs and monitors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Distributed mutual exclusion.
    Mutex,
    /// Leader election.
    Election,
    /// Physical clock synchronization.
    ClockSync,
    /// Ordered multicast.
    Multicast,
    /// Global snapshots.
    Snapshot,
}

impl Family {
    /// Every family, in the order the registry lists them.
    pub const ALL: [Family; 5] = [
        Family::Mutex,
        Family::Election,
        Family::ClockSync,
        Family::Multicast,
        Family::Snapshot,
    ];

    /// The family named `name` as the command line spells it.
    pub fn parse(name: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The family's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Family::Mutex => "mutex",
            Family::Election => "election",
            Family::ClockSync => "clock-sync",
            Family::Multicast => "multicast",
            Family::Snapshot => "snapshot",
        }
    }
}

/// One algorithm of the registry.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Entry {
    /// The kebab-case name used in scenarios and on the command line.
    pub name: &'static str,
    /// Its family.
    pub family: Family,
    /// Whether its correctness needs FIFO channels.
    pub needs_fifo: bool,
    /// One line: what it is and where the notes state it.
    pub description: &'static str,
}

/// Something to do with a mutual-exclusion algorithm type, chosen by name at run time.
pub trait MutexVisitor {
    /// What the visit produces.
    type Output;
    /// Called with the algorithm type registered under the name. Its messages can be checked
    /// field by field ([`Validate`]), as the network runtime does with what peers send.
    fn visit<A: MutualExclusion + Serialize + Explorable>(
        self,
        entry: &'static Entry,
    ) -> Self::Output
    where
        <A as Process>::Msg: Validate;
}

macro_rules! mutex_algorithms {
    ($($name:literal => $ty:ty, fifo: $fifo:literal, $desc:literal;)*) => {
        const MUTEX: &[Entry] = &[$(Entry {
            name: $name,
            family: Family::Mutex,
            needs_fifo: $fifo,
            description: $desc,
        }),*];

        /// Calls `visitor` with the mutual-exclusion algorithm named `name`; `None` if no
        /// mutual-exclusion algorithm has that name.
        pub fn visit_mutex<V: MutexVisitor>(name: &str, visitor: V) -> Option<V::Output> {
            let entry = lookup(name)?;
            match name {
                $($name => Some(visitor.visit::<$ty>(entry)),)*
                _ => visit_plugged_mutex(entry, visitor),
            }
        }
    };
}

/// Calls `visitor` with the type of the mutual-exclusion algorithm `entry` plugged in at run
/// time ([`plug_mutex`]); `None` if `entry` is not one.
fn visit_plugged_mutex<V: MutexVisitor>(entry: &'static Entry, visitor: V) -> Option<V::Output> {
    let slot = plugged().iter().find(|p| std::ptr::eq(p.0, entry))?.1;
    match slot {
        0 => Some(visitor.visit::<Plugged<0>>(entry)),
        1 => Some(visitor.visit::<Plugged<1>>(entry)),
        _ => None,
    }
}

/// The algorithms plugged in at run time, each with its slot, in the order they came.
fn plugged() -> std::sync::RwLockReadGuard<'static, Vec<(&'static Entry, usize)>> {
    PLUGGED.read().unwrap_or_else(|e| e.into_inner())
}

static PLUGGED: RwLock<Vec<(&'static Entry, usize)>> = RwLock::new(Vec::new());

/// Adds the mutual-exclusion algorithm `A` to the registry under `name`, from any crate and at
/// run time: from then on the simulator, the checker, the page and the node runtime find it by
/// name as they find the algorithms of the tables below, and run it through an adapter
/// ([`crate::plug`]) that forwards every call to `A`. For a type defined outside this crate, a
/// test's toy algorithm for instance; an algorithm of this crate is one line of the table.
/// Plugging the same type under the same name again returns the same entry. `Err` with the
/// reason if the name is taken by another algorithm, or if every slot is
/// ([`plug::SLOTS`](crate::plug::SLOTS)).
pub fn plug_mutex<A>(
    name: &'static str,
    needs_fifo: bool,
    description: &'static str,
) -> Result<&'static Entry, String>
where
    A: MutualExclusion + Serialize + Explorable,
    A::Msg: Validate,
{
    let mut table = PLUGGED.write().unwrap_or_else(|e| e.into_inner());
    if registered_statically().any(|e| e.name == name) {
        return Err(format!("`{name}` is already a registered algorithm"));
    }
    let slot = crate::plug::plug_mutex::<A>(name)?;
    if let Some(&(entry, _)) = table.iter().find(|p| p.1 == slot) {
        return Ok(entry);
    }
    let entry: &'static Entry = Box::leak(Box::new(Entry {
        name,
        family: Family::Mutex,
        needs_fifo,
        description,
    }));
    table.push((entry, slot));
    Ok(entry)
}

mutex_algorithms! {
    "central" => crate::mutex::Central, fifo: false,
        "central coordinator (lock manager) with GRANT and DENIED replies, FIFO grants (seeds 000, 001)";
    "lamport-mutex" => crate::mutex::LamportMutex, fifo: true,
        "Lamport 1978: replicated request queues, REPLY and RELEASE, entry by L1 and L2 (seeds 000, 003)";
    "ricart-agrawala" => crate::mutex::RicartAgrawala, fifo: false,
        "Ricart-Agrawala 1981: permission from all with deferred replies (seeds 000, 001, 003)";
    "token-ring" => crate::mutex::TokenRing, fifo: false,
        "token ring: the token circulates in membership order, kept only to enter (seeds 000, 001, 003)";
    "ricart-agrawala-token" => crate::mutex::RicartAgrawalaToken, fifo: false,
        "Ricart-Agrawala second algorithm: token array and request array, rules RI1-RR2 (seed 000)";
    "suzuki-kasami" => crate::mutex::SuzukiKasami, fifo: false,
        "Suzuki-Kasami 1985: broadcast sequence numbers RN, token with LN and queue Q (seed 003)";
    "raymond" => crate::mutex::Raymond, fifo: false,
        "Raymond 1989: token on a tree, holder pointers and FIFO request queues (seeds 001, 003)";
    "maekawa" => crate::mutex::Maekawa, fifo: false,
        "Maekawa 1985: quorum permission with FAILED/INQUIRE/YIELD against deadlock (seed 003)";
    "maekawa-basic" => crate::mutex::MaekawaBasic, fifo: false,
        "Maekawa as seed 003 states it: REQUEST/REPLY/RELEASE to a quorum, can deadlock (seed 003)";
    "singhal" => crate::mutex::Singhal, fifo: false,
        "Singhal 1992: dynamic request and inform sets (named in seed 000; from the 1992 paper)";
    "singhal-token" => crate::mutex::SinghalToken, fifo: false,
        "Singhal 1989 token algorithm: REQUEST only to sites SV marks R, token TSV/TSN (seed 000; `singhal` is his 1992 permission one)";
    "majority-vote" => crate::mutex::MajorityVote, fifo: false,
        "distributed lock manager: a majority of one-at-a-time votes, QUEUED, INQUIRE/YIELD (seed 001)";
}

/// Something to do with a leader-election algorithm type, chosen by name at run time.
pub trait ElectionVisitor {
    /// What the visit produces.
    type Output;
    /// Called with the algorithm type registered under the name. Its messages can be checked
    /// field by field ([`Validate`]), as the network runtime does with what peers send.
    fn visit<A: Election + Serialize + Explorable>(self, entry: &'static Entry) -> Self::Output
    where
        <A as Process>::Msg: Validate;
}

macro_rules! election_algorithms {
    ($($name:literal => $ty:ty, fifo: $fifo:literal, $desc:literal;)*) => {
        const ELECTION: &[Entry] = &[$(Entry {
            name: $name,
            family: Family::Election,
            needs_fifo: $fifo,
            description: $desc,
        }),*];

        /// Calls `visitor` with the election algorithm named `name`; `None` if no election
        /// algorithm has that name. Ring algorithms come wrapped in the
        /// [`RingLink`](crate::election::RingLink) that skips crashed successors.
        pub fn visit_election<V: ElectionVisitor>(name: &str, visitor: V) -> Option<V::Output> {
            let entry = lookup(name)?;
            match name {
                $($name => Some(visitor.visit::<$ty>(entry)),)*
                _ => None,
            }
        }
    };
}

election_algorithms! {
    "bully" => crate::election::Bully, fifo: false,
        "bully (Garcia-Molina 1982): ELECTION to higher ids, OK, COORDINATOR, timeouts T and T' (seeds 000-003)";
    "ring" => crate::election::RingLink<crate::election::Ring>, fifo: false,
        "ring with id lists: ELECTION collects the live ids, COORDINATOR carries the members (seeds 000, 001, 002)";
    "chang-roberts" => crate::election::RingLink<crate::election::ChangRoberts>, fifo: false,
        "Chang-Roberts 1979: participant states, ids replaced, forwarded or discarded, then elected (seed 000)";
    "ring-active-list" => crate::election::RingLink<crate::election::RingActiveList>, fifo: true,
        "ring with active lists: elect(i) then elect(j), the largest in the list wins (seed 000)";
    "peterson" => crate::election::RingLink<crate::election::Peterson>, fifo: false,
        "Peterson 1982, unidirectional ring: active and relay processes, tid/ntid/nntid, rounds (seed 004)";
}

/// Something to do with a clock-synchronization algorithm type, chosen by name at run time.
pub trait ClockSyncVisitor {
    /// What the visit produces.
    type Output;
    /// Called with the algorithm type registered under the name.
    fn visit<A: ClockSync + Serialize + Send + Clone + 'static>(
        self,
        entry: &'static Entry,
    ) -> Self::Output;
}

macro_rules! clock_sync_algorithms {
    ($($name:literal => $ty:ty, $desc:literal;)*) => {
        const CLOCK_SYNC: &[Entry] = &[$(Entry {
            name: $name,
            family: Family::ClockSync,
            needs_fifo: false,
            description: $desc,
        }),*];

        fn visit_clock_sync_type<V: ClockSyncVisitor>(
            name: &str,
            entry: &'static Entry,
            visitor: V,
        ) -> Option<V::Output> {
            match name {
                $($name => Some(visitor.visit::<$ty>(entry)),)*
                _ => None,
            }
        }
    };
}

clock_sync_algorithms! {
    "berkeley" => crate::clocks::Berkeley<crate::election::Bully>,
        "Berkeley (Gusella-Zatti 1989): an elected master polls, averages within a threshold of the median, sends adjustments (seed 000)";
    "cristian" => crate::clocks::Cristian,
        "Cristian 1989: ask a time server, set T + RTT/2 from the smallest round trip, bound RTT/2 - min (seed 000)";
    "ntp" => crate::clocks::Ntp,
        "NTP (RFC 5905): on-wire offset and delay, 8-sample clock filter, intersection of several servers, strata (seed 000)";
}

/// Calls `visitor` with the clock-synchronization algorithm named `name`; `None` if no
/// clock-synchronization algorithm has that name. Berkeley's master is chosen by the election
/// algorithm `params.master_election` names (bully by default), so `berkeley` comes as
/// `Berkeley<E>` for that algorithm `E`; `None` too if that is not an election algorithm.
pub fn visit_clock_sync<V: ClockSyncVisitor>(
    name: &str,
    params: &Params,
    visitor: V,
) -> Option<V::Output> {
    let entry = lookup(name)?;
    if name == "berkeley" {
        let election = master_election(params).ok()?;
        return visit_election(election.name, BerkeleyWith { entry, visitor });
    }
    visit_clock_sync_type(name, entry, visitor)
}

/// The election algorithm that chooses Berkeley's master: the one `params.master_election`
/// names (bully by default), or an error on `master_election` listing the election algorithms
/// if it names none. The registry gives Berkeley that algorithm as its type parameter, so
/// Berkeley itself never looks a name up.
pub fn master_election(params: &Params) -> Result<&'static Entry, ParamError> {
    let name = params
        .master_election
        .as_deref()
        .unwrap_or(crate::clocks::berkeley::DEFAULT_MASTER_ELECTION);
    match lookup(name) {
        Some(e) if e.family == Family::Election => Ok(e),
        _ => {
            let mut names: Vec<&str> = ELECTION.iter().map(|e| e.name).collect();
            names.sort_unstable();
            Err(ParamError::new(
                "master_election",
                format!(
                    "`{name}` is not an election algorithm (one of: {})",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// Visits `Berkeley<E>` for the election algorithm `E` it is given.
struct BerkeleyWith<V> {
    entry: &'static Entry,
    visitor: V,
}

impl<V: ClockSyncVisitor> ElectionVisitor for BerkeleyWith<V> {
    type Output = V::Output;
    fn visit<E: Election + Serialize + Send + Clone + 'static>(
        self,
        _election: &'static Entry,
    ) -> V::Output {
        self.visitor.visit::<crate::clocks::Berkeley<E>>(self.entry)
    }
}

/// Something to do with a multicast algorithm type, chosen by name at run time.
pub trait MulticastVisitor {
    /// What the visit produces.
    type Output;
    /// Called with the algorithm type registered under the name. Its messages can be checked
    /// field by field ([`Validate`]), as the network runtime does with what peers send.
    fn visit<A: Multicast + Serialize + Explorable>(self, entry: &'static Entry) -> Self::Output
    where
        <A as Process>::Msg: Validate;
}

macro_rules! multicast_algorithms {
    ($($name:literal => $ty:ty, fifo: $fifo:literal, $desc:literal;)*) => {
        const MULTICAST: &[Entry] = &[$(Entry {
            name: $name,
            family: Family::Multicast,
            needs_fifo: $fifo,
            description: $desc,
        }),*];

        /// Calls `visitor` with the multicast algorithm named `name`; `None` if no multicast
        /// algorithm has that name.
        pub fn visit_multicast<V: MulticastVisitor>(name: &str, visitor: V) -> Option<V::Output> {
            let entry = lookup(name)?;
            match name {
                $($name => Some(visitor.visit::<$ty>(entry)),)*
                _ => None,
            }
        }
    };
}

multicast_algorithms! {
    "fifo-broadcast" => crate::multicast::FifoBroadcast, fifo: false,
        "FIFO broadcast: per-sender sequence numbers, the baseline with no causal guarantee (seeds 000, 003)";
    "causal-broadcast" => crate::multicast::CausalBroadcast, fifo: false,
        "Birman-Schiper-Stephenson causal broadcast: vector timestamps, buffer until causally ready (seeds 000, 003)";
    "total-order-multicast" => crate::multicast::TotalOrder, fifo: true,
        "totally ordered multicast: Lamport-clock queue, acknowledgements from all, N^2-1 messages (seed 003)";
}

/// Something to do with a snapshot algorithm type, chosen by name at run time.
pub trait SnapshotVisitor {
    /// What the visit produces.
    type Output;
    /// Called with the algorithm type registered under the name. Its messages can be checked
    /// field by field ([`Validate`]), as the network runtime does with what peers send.
    fn visit<A: GlobalSnapshot + Serialize + Explorable>(
        self,
        entry: &'static Entry,
    ) -> Self::Output
    where
        <A as Process>::Msg: Validate;
}

macro_rules! snapshot_algorithms {
    ($($name:literal => $ty:ty, fifo: $fifo:literal, $desc:literal;)*) => {
        const SNAPSHOT: &[Entry] = &[$(Entry {
            name: $name,
            family: Family::Snapshot,
            needs_fifo: $fifo,
            description: $desc,
        }),*];

        /// Calls `visitor` with the snapshot algorithm named `name`; `None` if no snapshot
        /// algorithm has that name.
        pub fn visit_snapshot<V: SnapshotVisitor>(name: &str, visitor: V) -> Option<V::Output> {
            let entry = lookup(name)?;
            match name {
                $($name => Some(visitor.visit::<$ty>(entry)),)*
                _ => None,
            }
        }
    };
}

snapshot_algorithms! {
    "chandy-lamport" => crate::snapshot::ChandyLamport, fifo: true,
        "Chandy-Lamport 1985: record, markers on every channel, record channels until their marker; over a bank (seed 000)";
}

/// Whether the exhaustive checker explores the algorithms of `family`: every family but clock
/// synchronization, whose types the visitors do not promise to be [`Explorable`].
pub fn explorable(family: Family) -> bool {
    family != Family::ClockSync
}

/// Calls `visitor` with the type of the algorithm named `name`, whatever its family, for a
/// visitor of every family the checker explores ([`explorable`]); `None` if no such algorithm
/// has that name.
pub fn visit_explorable<V, O>(name: &str, visitor: V) -> Option<O>
where
    V: MutexVisitor<Output = O>
        + ElectionVisitor<Output = O>
        + MulticastVisitor<Output = O>
        + SnapshotVisitor<Output = O>,
{
    match lookup(name)?.family {
        Family::Mutex => visit_mutex(name, visitor),
        Family::Election => visit_election(name, visitor),
        Family::Multicast => visit_multicast(name, visitor),
        Family::Snapshot => visit_snapshot(name, visitor),
        Family::ClockSync => None,
    }
}

/// Every registered algorithm, by family and then name.
pub fn entries() -> Vec<&'static Entry> {
    let mut all: Vec<&'static Entry> = registered().collect();
    all.sort_by_key(|e| (e.family, e.name));
    all
}

/// The algorithms of the tables, in their order.
fn registered_statically() -> impl Iterator<Item = &'static Entry> {
    MUTEX
        .iter()
        .chain(ELECTION)
        .chain(CLOCK_SYNC)
        .chain(MULTICAST)
        .chain(SNAPSHOT)
}

/// Every registered algorithm in the order of registration: by family as [`Family::ALL`]
/// lists them, and within a family in the order of its table, then those plugged in at run
/// time ([`plug_mutex`]) in the order they came.
pub fn registered() -> impl Iterator<Item = &'static Entry> {
    let mut all: Vec<&'static Entry> = registered_statically().collect();
    let plugged = plugged();
    for family in Family::ALL {
        let end = all
            .iter()
            .rposition(|e| e.family <= family)
            .map_or(0, |i| i + 1);
        let more: Vec<&'static Entry> = plugged
            .iter()
            .map(|p| p.0)
            .filter(|e| e.family == family)
            .collect();
        all.splice(end..end, more);
    }
    all.into_iter()
}

/// The algorithm registered under `name`.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    registered_statically()
        .find(|e| e.name == name)
        .or_else(|| plugged().iter().map(|p| p.0).find(|e| e.name == name))
}

/// The registered name closest to a misspelled one, for "did you mean" hints.
pub fn suggest(name: &str) -> Option<&'static str> {
    let names = entries().into_iter().map(|e| e.name);
    if let Some(prefixed) = names
        .clone()
        .find(|n| !name.is_empty() && n.starts_with(name))
    {
        return Some(prefixed);
    }
    names
        .map(|n| (strsim::levenshtein(name, n), n))
        .filter(|&(d, n)| d <= 3.max(n.len() / 3))
        .min()
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Name;
    impl MutexVisitor for Name {
        type Output = &'static str;
        fn visit<A: MutualExclusion + 'static>(self, entry: &'static Entry) -> &'static str {
            let _ = std::any::type_name::<A>();
            entry.name
        }
    }

    #[test]
    fn every_mutex_entry_dispatches_to_its_type() {
        for e in entries().into_iter().filter(|e| e.family == Family::Mutex) {
            assert_eq!(visit_mutex(e.name, Name), Some(e.name));
        }
        assert_eq!(visit_mutex("no-such-thing", Name), None);
    }

    struct ElectionName;
    impl ElectionVisitor for ElectionName {
        type Output = (&'static str, bool);
        fn visit<A: Election + 'static>(self, entry: &'static Entry) -> (&'static str, bool) {
            (entry.name, A::uses_ring())
        }
    }

    #[test]
    fn every_election_entry_dispatches_to_its_type() {
        let election: Vec<_> = entries()
            .into_iter()
            .filter(|e| e.family == Family::Election)
            .collect();
        assert_eq!(election.len(), 5);
        for e in election {
            let (name, ring) = visit_election(e.name, ElectionName).unwrap();
            assert_eq!(name, e.name);
            assert_eq!(ring, e.name != "bully");
            assert_eq!(visit_mutex(e.name, Name), None);
        }
        assert_eq!(visit_election("ricart-agrawala", ElectionName), None);
        assert_eq!(lookup("chang-roberts").unwrap().family, Family::Election);
        assert_eq!(suggest("chang-robert"), Some("chang-roberts"));
    }

    struct ClockName;
    impl ClockSyncVisitor for ClockName {
        type Output = &'static str;
        fn visit<A: ClockSync + 'static>(self, entry: &'static Entry) -> &'static str {
            entry.name
        }
    }

    #[test]
    fn every_clock_sync_entry_dispatches_to_its_type() {
        let clocks: Vec<_> = entries()
            .into_iter()
            .filter(|e| e.family == Family::ClockSync)
            .collect();
        assert!(!clocks.is_empty());
        for e in clocks {
            assert_eq!(
                visit_clock_sync(e.name, &Params::default(), ClockName),
                Some(e.name)
            );
            assert_eq!(visit_mutex(e.name, Name), None);
        }
        assert_eq!(
            visit_clock_sync("bully", &Params::default(), ClockName),
            None
        );
        // Berkeley's master may be elected by any election algorithm of the registry.
        for election in [
            "bully",
            "ring",
            "chang-roberts",
            "ring-active-list",
            "peterson",
        ] {
            let params = Params {
                master_election: Some(election.into()),
                ..Params::default()
            };
            assert_eq!(
                visit_clock_sync("berkeley", &params, ClockName),
                Some("berkeley")
            );
        }
        let params = Params {
            master_election: Some("central".into()),
            ..Params::default()
        };
        assert_eq!(visit_clock_sync("berkeley", &params, ClockName), None);
    }

    #[test]
    fn an_unknown_master_election_is_refused() {
        let params = Params {
            master_election: Some("cristian".into()),
            ..Params::default()
        };
        let e = master_election(&params).unwrap_err();
        assert_eq!(e.field, "master_election");
        assert!(e.message.contains("bully"), "{e}");
        assert_eq!(master_election(&Params::default()).unwrap().name, "bully");
    }

    struct MulticastName;
    impl MulticastVisitor for MulticastName {
        type Output = (&'static str, usize);
        fn visit<A: Multicast + 'static>(self, entry: &'static Entry) -> Self::Output {
            (entry.name, A::guarantees().len())
        }
    }

    #[test]
    fn every_multicast_entry_dispatches_to_its_type() {
        let got: Vec<_> = entries()
            .into_iter()
            .filter(|e| e.family == Family::Multicast)
            .map(|e| visit_multicast(e.name, MulticastName).unwrap())
            .collect();
        assert_eq!(
            got,
            vec![
                ("causal-broadcast", 2),
                ("fifo-broadcast", 1),
                ("total-order-multicast", 3)
            ]
        );
        assert_eq!(visit_multicast("cristian", MulticastName), None);
    }

    struct SnapshotName;
    impl SnapshotVisitor for SnapshotName {
        type Output = &'static str;
        fn visit<A: GlobalSnapshot + 'static>(self, entry: &'static Entry) -> Self::Output {
            entry.name
        }
    }

    #[test]
    fn the_snapshot_entry_dispatches_to_its_type() {
        assert_eq!(
            visit_snapshot("chandy-lamport", SnapshotName),
            Some("chandy-lamport")
        );
        assert!(lookup("chandy-lamport").unwrap().needs_fifo);
        assert_eq!(visit_snapshot("causal-broadcast", SnapshotName), None);
    }

    #[test]
    fn misspellings_get_a_suggestion() {
        assert_eq!(suggest("ricart-agrawal"), Some("ricart-agrawala"));
        assert_eq!(suggest("lamport"), Some("lamport-mutex"));
        assert_eq!(suggest("zzzzzzzzzzzzzzzzzzzz"), None);
    }
}
