//! What an algorithm states it needs and survives ([`Claims`]), and the faults a stress run may
//! apply ([`Fault`]): the vocabulary in which each family states its claims.

use serde::Serialize;

/// A kind of fault (or freedom) the generator may put in a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// Random delays (constant, uniform or exponential) instead of a constant 1ms.
    Delay,
    /// Links that are not FIFO: messages overtake each other.
    Reorder,
    /// Messages lost with a probability of 1% to 15%.
    Loss,
    /// Messages delivered twice with a probability of 1% to 15%.
    Duplicate,
    /// Processes crash (and some recover).
    Crash,
    /// The network splits in two groups, then heals.
    Partition,
}

impl Fault {
    /// Every fault, in the order the command line lists them.
    pub const ALL: [Fault; 6] = [
        Fault::Delay,
        Fault::Reorder,
        Fault::Loss,
        Fault::Duplicate,
        Fault::Crash,
        Fault::Partition,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Delay => "delay",
            Fault::Reorder => "reorder",
            Fault::Loss => "loss",
            Fault::Duplicate => "duplicate",
            Fault::Crash => "crash",
            Fault::Partition => "partition",
        }
    }

    /// The fault named `name`.
    pub fn parse(name: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// What an algorithm states it needs and survives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Claims {
    /// It needs FIFO links (the registry's `needs_fifo`).
    pub needs_fifo: bool,
    /// It survives lost messages.
    pub loss: bool,
    /// It survives duplicated messages.
    pub duplicate: bool,
    /// It survives crashes (and recoveries) of processes.
    pub crash: bool,
    /// It survives partitions that heal.
    pub partition: bool,
    /// Properties it does not promise even within its assumptions (maekawa-basic can
    /// deadlock): a run that breaks only these is counted as a known break, not a failure.
    pub not_promised: &'static [&'static str],
    /// It survives recoveries over reliable links (`[network] reliable = true`). The elections
    /// do not, for two reasons of the link layer (docs/faults.md): it discards frames meant for
    /// a recovered process's previous life, so a sender that has not heard of the new life
    /// loses its message to a live process (the ring takes it for crashed); and a frame sent
    /// to a crashed process by a sender that had never heard from it is retransmitted until
    /// the next life accepts it, long after the delay bound their timeouts rely on (bully's
    /// COORDINATOR naming a stale leader). A reliable stress draws crashes without recoveries
    /// for them, unless the faults are asked for explicitly.
    pub recoveries_over_reliable_links: bool,
}

impl Claims {
    /// The faults a default stress applies: everything the algorithm claims to survive.
    pub fn faults(&self) -> Vec<Fault> {
        let mut f = vec![Fault::Delay];
        if !self.needs_fifo {
            f.push(Fault::Reorder);
        }
        for (claimed, fault) in [
            (self.loss, Fault::Loss),
            (self.duplicate, Fault::Duplicate),
            (self.crash, Fault::Crash),
            (self.partition, Fault::Partition),
        ] {
            if claimed {
                f.push(fault);
            }
        }
        f
    }
}

/// An assumption a scenario does not meet, as the docs state it: what the run leaves out, the
/// page that says the algorithm needs it, and the properties that page names at risk without
/// it. A failing stress run that breaks only properties named here failed outside the
/// algorithm's assumptions; any other failure is a bug.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Outside {
    /// What the run leaves out ("no failure detector with a recovery").
    pub assumption: String,
    /// The page that states the assumption.
    pub doc: &'static str,
    /// The properties (as their monitors name them) that page names at risk; empty: every
    /// property (an assumption the algorithm states without limiting what it loses, such as
    /// FIFO links, or a fault it does not claim to survive at all).
    pub at_risk: Vec<&'static str>,
}
