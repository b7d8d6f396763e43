//! From a kebab-case name to an algorithm, its family and a one-line description.
//!
//! Runtimes are generic over the algorithm type; they reach the type for a name through a
//! visitor (`visit_mutex`), so that adding an algorithm is one line in the table below.

use distsync_core::mutex::MutualExclusion;
use serde::Serialize;

/// The family an algorithm belongs to, which decides its inputs, outputs and monitors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// Distributed mutual exclusion.
    Mutex,
}

impl Family {
    /// The family's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Family::Mutex => "mutex",
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
    /// Called with the algorithm type registered under the name.
    fn visit<A: MutualExclusion + 'static>(self, entry: &'static Entry) -> Self::Output;
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
                _ => None,
            }
        }
    };
}

mutex_algorithms! {
    "central" => crate::mutex::Central, fifo: false,
        "central coordinator (lock manager) with GRANT and DENIED replies, FIFO grants (seeds 000, 001)";
    "lamport-mutex" => crate::mutex::LamportMutex, fifo: true,
        "Lamport 1978: replicated request queues, REPLY and RELEASE, entry by L1 and L2 (seeds 000, 003)";
    "ricart-agrawala" => crate::mutex::RicartAgrawala, fifo: false,
        "Ricart-Agrawala 1981: permission from all with deferred replies (seeds 000, 001, 003)";
}

/// Every registered algorithm, by family and then name.
pub fn entries() -> Vec<&'static Entry> {
    let mut all: Vec<&'static Entry> = MUTEX.iter().collect();
    all.sort_by_key(|e| (e.family, e.name));
    all
}

/// The algorithm registered under `name`.
pub fn lookup(name: &str) -> Option<&'static Entry> {
    MUTEX.iter().find(|e| e.name == name)
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

    #[test]
    fn misspellings_get_a_suggestion() {
        assert_eq!(suggest("ricart-agrawal"), Some("ricart-agrawala"));
        assert_eq!(suggest("lamport"), Some("lamport-mutex"));
        assert_eq!(suggest("zzzzzzzzzzzzzzzzzzzz"), None);
    }
}
