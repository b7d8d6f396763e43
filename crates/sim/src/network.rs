//! The network model: delays, per-link FIFO order, loss, duplication and partitions.

use crate::scenario::{DelaySpec, NetworkSpec};
use distsync_core::Time;
use rand::Rng;
use rand_distr::{Distribution, Exp};
use rustc_hash::FxHashMap;

/// Where the fate of one message is decided.
#[derive(Clone)]
pub(crate) struct Network {
    delay: Delay,
    fifo: bool,
    /// FIFO links whose delays vary: only then can a later message overtake an earlier one, so
    /// only then is the latest arrival of each link kept. With a constant delay every copy
    /// arrives `delay` after it was sent and time never goes back, so arrivals on a link already
    /// come in the order of sends (a map of every link used cost a third of the CPU of a
    /// million-process ring election).
    reorders: bool,
    loss: f64,
    duplicate: f64,
    n: usize,
    /// Latest arrival scheduled on each link, so that FIFO links never reorder.
    last_arrival: LinkTimes,
    /// `group[k]`: the partition group of the node at position k; `None` when healed.
    group: Option<Vec<u32>>,
}

/// Up to this many nodes the latest arrival of every link is one slot of an n x n table (8 MiB,
/// copied with the engine at each checkpoint of a stepped session); above, a hash map of the
/// links used, until so many are used that the table costs no more than the map.
const DENSE_LINKS_UP_TO: usize = 1024;

/// From how many entries (8 bytes each) the table of latest arrivals is prefetched: 1,024
/// nodes' 8 MB no longer stay in the caches beside the events.
const PREFETCH_LINKS_FROM: usize = 1 << 20;

/// A batch run of up to this many nodes keeps the table from its start (128 MiB of address
/// space at most, whose pages are backed as they are written): where every node sends to every
/// other (ricart-agrawala's N requests at once), the map's first n² / `DENSE_FROM_SHARE` links,
/// hashed, grown and then copied into the table, cost about a sixth of the run at 3,000 nodes.
/// A stepped session keeps the map above [`DENSE_LINKS_UP_TO`]: it copies the network at each
/// checkpoint.
const DENSE_BATCH_UP_TO: usize = 4096;

/// A hash map of links becomes an n x n table once it holds n² / `DENSE_FROM_SHARE` links: the
/// table then costs at most 32 bytes per link used, about what the map costs (16-byte entries,
/// a control byte, and room to grow), and a look-up is one access instead of a hash and a probe.
/// (With every node sending to every other, as in ricart-agrawala's N requests at once, the map
/// took 45% of the CPU at 3,000 nodes.)
const DENSE_FROM_SHARE: usize = 4;

/// The scenario's delay with its bounds in nanoseconds, converted once instead of at every
/// message (the draws are the same: the same generator calls on the same bounds).
#[derive(Clone)]
enum Delay {
    Constant(u64),
    Uniform(UniformNs),
    /// `None` for a mean of zero.
    Exponential(Option<Exp<f64>>),
}

/// A delay uniform in `low..=low + range - 1` ns, drawn exactly as rand 0.8's
/// `gen_range(low..=high)` draws a `u64` (`UniformInt::sample_single_inclusive`: a widening
/// multiply, retried when its low half falls past `zone`), with the range and the zone worked out
/// once instead of at every message: 2% less CPU per event on ricart-agrawala with N = 32, in
/// alternated runs within one process (docs/performance.md, "The simulator's hot path"). The
/// draws are the same, number for number (`uniform_delays_are_drawn_as_rand_draws_them`), so no
/// run changes.
#[derive(Clone, Copy, Debug)]
struct UniformNs {
    low: u64,
    /// `high - low + 1`, 0 for the whole of `u64` (any number will do).
    range: u64,
    zone: u64,
}

impl UniformNs {
    fn new(low: u64, high: u64) -> UniformNs {
        assert!(
            low <= high,
            "uniform delay bounds out of order: {low} > {high}"
        );
        let range = high.wrapping_sub(low).wrapping_add(1);
        // rand's "conservative but fast approximation" of the largest unbiased low half (none
        // is needed for the whole of `u64`, whose shift would overflow).
        let zone = match range {
            0 => u64::MAX,
            _ => (range << range.leading_zeros()).wrapping_sub(1),
        };
        UniformNs { low, range, zone }
    }

    #[inline]
    fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        if self.range == 0 {
            return rng.gen();
        }
        loop {
            let v: u64 = rng.gen();
            let wide = u128::from(v) * u128::from(self.range);
            if wide as u64 <= self.zone {
                return self.low.wrapping_add((wide >> 64) as u64);
            }
        }
    }
}

#[derive(Clone)]
enum LinkTimes {
    Dense(Vec<u64>),
    Sparse(FxHashMap<(u32, u32), u64>),
}

/// An n x n table of latest arrivals, all zero, in memory backed by huge pages where Linux
/// allows: every node sending to every other reads it at random (72 MB at 3,000 nodes), and
/// with 4 KiB pages nearly every look-up was a page-table walk as well as a cache miss.
fn dense_table(n: usize) -> Vec<u64> {
    // Zeroed memory from the allocator: untouched pages cost nothing until written, and are
    // advised before any is.
    let table = vec![0; n * n];
    crate::huge_pages::advise(&table);
    table
}

/// What happens to one copy of a message.
pub(crate) enum Fate {
    /// It arrives at this time.
    Arrive(Time),
    /// It is lost; the loss is noted at the time it would have arrived.
    Lost(Time),
}

impl Network {
    pub(crate) fn new(spec: &NetworkSpec, n: usize) -> Network {
        let delay = match spec.delay {
            DelaySpec::Constant(d) => Delay::Constant(d.as_nanos() as u64),
            DelaySpec::Uniform(lo, hi) => {
                Delay::Uniform(UniformNs::new(lo.as_nanos() as u64, hi.as_nanos() as u64))
            }
            DelaySpec::Exponential(mean) if !mean.is_zero() => Delay::Exponential(Some(
                Exp::new(1.0 / mean.as_nanos() as f64).expect("positive rate"),
            )),
            DelaySpec::Exponential(_) => Delay::Exponential(None),
        };
        let reorders = spec.fifo && !matches!(spec.delay, DelaySpec::Constant(_));
        Network {
            delay,
            fifo: spec.fifo,
            reorders,
            loss: spec.loss,
            duplicate: spec.duplicate,
            n,
            last_arrival: if reorders && n <= DENSE_LINKS_UP_TO {
                LinkTimes::Dense(dense_table(n))
            } else {
                LinkTimes::Sparse(FxHashMap::default())
            },
            group: None,
        }
    }

    #[inline]
    fn sample_delay<R: Rng>(&self, rng: &mut R) -> u64 {
        match &self.delay {
            Delay::Constant(d) => *d,
            Delay::Uniform(uniform) => uniform.sample(rng),
            Delay::Exponential(Some(exp)) => exp.sample(rng).round() as u64,
            Delay::Exponential(None) => 0,
        }
    }

    /// How many copies of a message sent now travel: one normally, two when duplicated. Then
    /// [`Network::fate`] decides each copy's, in order. (Two calls rather than one returning
    /// both fates: a pair of `Option<Fate>` goes back through memory, and reading it right
    /// after it was written stalled every send.)
    #[inline]
    pub(crate) fn copies<R: Rng>(&self, rng: &mut R) -> usize {
        if self.duplicate > 0.0 && rng.gen_bool(self.duplicate) {
            2
        } else {
            1
        }
    }

    /// The fate of one copy of a message sent now from position `from` to position `to`.
    #[inline(always)]
    pub(crate) fn fate<R: Rng>(&mut self, now: Time, from: usize, to: usize, rng: &mut R) -> Fate {
        let mut at = now.as_nanos().saturating_add(self.sample_delay(rng));
        if self.reorders {
            // The table's case in place (every run of up to 1,024 nodes): a call per message
            // to the general case cost about 3% of the instructions of a saturated run.
            if let LinkTimes::Dense(v) = &mut self.last_arrival {
                let last = &mut v[from * self.n + to];
                at = at.max(*last);
                *last = at;
            } else {
                at = at.max(self.last_arrival(from, to));
                self.set_last_arrival(from, to, at);
            }
        }
        let lost = (self.loss > 0.0 && rng.gen_bool(self.loss)) || !self.connected(from, to);
        if lost {
            Fate::Lost(Time(at))
        } else {
            Fate::Arrive(Time(at))
        }
    }

    /// A batch run is starting (nothing was sent yet): up to [`DENSE_BATCH_UP_TO`] nodes, the
    /// latest arrivals are kept in the table from the start instead of a map first.
    pub(crate) fn batch_run(&mut self) {
        if self.reorders && self.n <= DENSE_BATCH_UP_TO {
            if let LinkTimes::Sparse(m) = &self.last_arrival {
                if m.is_empty() {
                    self.last_arrival = LinkTimes::Dense(dense_table(self.n));
                }
            }
        }
    }

    /// Whether the links' latest arrivals are a table too large for the caches, whose entry a
    /// send reads at random: then [`Network::prefetch_link`] is worth its instructions.
    pub(crate) fn large_table(&self) -> bool {
        matches!(&self.last_arrival, LinkTimes::Dense(v) if v.len() >= PREFETCH_LINKS_FROM)
    }

    /// Asks the memory for the latest arrival of the link from position `from` to `to`, which a
    /// send on that link is about to read (a hint: it changes nothing but speed).
    #[inline(always)]
    pub(crate) fn prefetch_link(&self, from: usize, to: usize) {
        if let LinkTimes::Dense(v) = &self.last_arrival {
            if let Some(entry) = v.get(from * self.n + to) {
                crate::prefetch::to_first_level(entry);
            }
        }
    }

    #[inline]
    fn last_arrival(&self, from: usize, to: usize) -> u64 {
        match &self.last_arrival {
            LinkTimes::Dense(v) => v[from * self.n + to],
            LinkTimes::Sparse(m) => m.get(&(from as u32, to as u32)).copied().unwrap_or(0),
        }
    }

    #[inline]
    fn set_last_arrival(&mut self, from: usize, to: usize, at: u64) {
        match &mut self.last_arrival {
            LinkTimes::Dense(v) => v[from * self.n + to] = at,
            LinkTimes::Sparse(m) => {
                m.insert((from as u32, to as u32), at);
                if m.len() >= self.n * self.n / DENSE_FROM_SHARE {
                    let mut table = dense_table(self.n);
                    for (&(from, to), &at) in m.iter() {
                        table[from as usize * self.n + to as usize] = at;
                    }
                    self.last_arrival = LinkTimes::Dense(table);
                }
            }
        }
    }

    /// Whether links deliver in the order messages were sent.
    pub(crate) fn fifo(&self) -> bool {
        self.fifo
    }

    /// Whether the link between two positions delivers now.
    #[inline]
    pub(crate) fn connected(&self, a: usize, b: usize) -> bool {
        match &self.group {
            None => true,
            Some(g) => g[a] == g[b],
        }
    }

    /// Splits the nodes into groups (positions); unlisted positions form one more group.
    pub(crate) fn partition(&mut self, groups: &[Vec<usize>]) {
        let mut g = vec![u32::MAX; self.n];
        for (i, members) in groups.iter().enumerate() {
            for &p in members {
                g[p] = i as u32;
            }
        }
        self.group = Some(g);
    }

    /// Ends any partition.
    pub(crate) fn heal(&mut self) {
        self.group = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_xoshiro::Xoshiro256PlusPlus;
    use std::time::Duration;

    /// A uniform delay is drawn number for number as `gen_range` draws it, over bounds that
    /// reject often (a range just past a power of two), never (a power of two), a single value,
    /// the whole of `u64`, and the delays of scenarios, for many seeds: any other draw would
    /// change every report and trace of a run with a uniform delay.
    #[test]
    fn uniform_delays_are_drawn_as_rand_draws_them() {
        let bounds = [
            (500_000, 1_500_000),
            (1_000, 5_000_000),
            (0, 0),
            (7, 7),
            (0, 1 << 32),
            (0, (1 << 32) - 1),
            (3, (1 << 63) + 3),
            (1 << 63, u64::MAX),
            (0, u64::MAX - 1),
            (0, u64::MAX),
            (u64::MAX, u64::MAX),
        ];
        for seed in 0..200 {
            for &(low, high) in &bounds {
                let uniform = UniformNs::new(low, high);
                let mut ours = Xoshiro256PlusPlus::seed_from_u64(seed);
                let mut rands = ours.clone();
                for k in 0..500 {
                    let (a, b) = (uniform.sample(&mut ours), rands.gen_range(low..=high));
                    assert_eq!(a, b, "seed {seed}, bounds {low}..={high}, draw {k}");
                }
                // The same number of generator calls, so the draws after it agree too.
                assert_eq!(ours.gen::<u64>(), rands.gen::<u64>(), "seed {seed}");
            }
        }
    }

    /// Above `DENSE_LINKS_UP_TO` nodes the links' latest arrivals start in a hash map and move
    /// to a table once a quarter of all links are used: no link may forget its latest arrival in
    /// the move, or a later message could overtake an earlier one.
    #[test]
    fn fifo_links_keep_their_order_when_the_map_becomes_a_table() {
        let n = DENSE_LINKS_UP_TO + 6;
        let spec = NetworkSpec {
            delay: DelaySpec::Uniform(Duration::from_micros(1), Duration::from_millis(5)),
            ..NetworkSpec::default()
        };
        let mut net = Network::new(&spec, n);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        assert!(matches!(net.last_arrival, LinkTimes::Sparse(_)));
        // The first message on links from every node to its next n/2 nodes: over the share at
        // which the map becomes a table.
        let links: Vec<(usize, usize)> = (0..n)
            .flat_map(|from| (1..=n / 2).map(move |k| (from, (from + k) % n)))
            .collect();
        let first: Vec<u64> = links
            .iter()
            .map(|&(from, to)| match net.fate(Time(0), from, to, &mut rng) {
                Fate::Arrive(at) => at.as_nanos(),
                Fate::Lost(_) => unreachable!("no loss and no partition"),
            })
            .collect();
        assert!(matches!(net.last_arrival, LinkTimes::Dense(_)));
        // A second message on each link, sent a little later, arrives no earlier than the
        // first, whichever side of the move the first was recorded on.
        for (&(from, to), &first) in links.iter().zip(&first) {
            let Fate::Arrive(at) = net.fate(Time(1), from, to, &mut rng) else {
                unreachable!("no loss and no partition")
            };
            assert!(
                at.as_nanos() >= first,
                "link {from} -> {to}: second message at {at:?}, first at {first} ns"
            );
        }
    }

    fn uniform(n: usize) -> Network {
        let spec = NetworkSpec {
            delay: DelaySpec::Uniform(Duration::from_micros(1), Duration::from_millis(5)),
            ..NetworkSpec::default()
        };
        Network::new(&spec, n)
    }

    fn arrival(
        net: &mut Network,
        now: u64,
        from: usize,
        to: usize,
        rng: &mut Xoshiro256PlusPlus,
    ) -> u64 {
        match net.fate(Time(now), from, to, rng) {
            Fate::Arrive(at) => at.as_nanos(),
            Fate::Lost(_) => unreachable!("no loss and no partition"),
        }
    }

    /// A batch run of more than `DENSE_LINKS_UP_TO` and up to `DENSE_BATCH_UP_TO` nodes keeps
    /// the table from its start (and prefetches it: it is larger than the caches); above, and
    /// with a constant delay (no order to keep), nothing changes. FIFO links keep their order
    /// in the table from the first message.
    #[test]
    fn a_batch_run_keeps_the_table_of_links_from_its_start() {
        let n = DENSE_LINKS_UP_TO + 1;
        let mut net = uniform(n);
        assert!(matches!(net.last_arrival, LinkTimes::Sparse(_)));
        assert!(!net.large_table());
        net.batch_run();
        assert!(matches!(&net.last_arrival, LinkTimes::Dense(v) if v.len() == n * n));
        assert!(net.large_table());
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        // Ten messages on each of a few links, one microsecond apart: each arrives no earlier
        // than the one before it on its link.
        for (from, to) in [(0, 1), (1, 0), (n - 1, 0), (0, n - 1), (517, 3)] {
            let mut last = 0;
            for k in 0..10 {
                let at = arrival(&mut net, 1_000 * k, from, to, &mut rng);
                assert!(
                    at >= last,
                    "link {from} -> {to}: message {k} at {at} before {last}"
                );
                last = at;
            }
        }

        let mut above = uniform(DENSE_BATCH_UP_TO + 1);
        above.batch_run();
        assert!(matches!(above.last_arrival, LinkTimes::Sparse(_)));
        let constant = NetworkSpec {
            delay: DelaySpec::Constant(Duration::from_millis(1)),
            ..NetworkSpec::default()
        };
        let mut constant = Network::new(&constant, n);
        constant.batch_run();
        assert!(matches!(constant.last_arrival, LinkTimes::Sparse(_)));
        // Small memberships had their table already, small enough for the caches.
        let mut small = uniform(6);
        small.batch_run();
        assert!(matches!(&small.last_arrival, LinkTimes::Dense(v) if v.len() == 36));
        assert!(!small.large_table());
    }

    /// The table replaces only an empty map: a link's latest arrival recorded before (a
    /// stepped session's messages) must not be forgotten, or a later message could overtake.
    #[test]
    fn a_batch_run_never_forgets_an_arrival_already_recorded() {
        let n = DENSE_LINKS_UP_TO + 1;
        let mut net = uniform(n);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let links: Vec<(usize, usize)> = (0..200).map(|k| (k, (k * 7 + 1) % n)).collect();
        let first: Vec<u64> = links
            .iter()
            .map(|&(from, to)| arrival(&mut net, 0, from, to, &mut rng))
            .collect();
        net.batch_run();
        for (&(from, to), &first) in links.iter().zip(&first) {
            let at = arrival(&mut net, 1, from, to, &mut rng);
            assert!(
                at >= first,
                "link {from} -> {to}: second at {at}, first at {first}"
            );
        }
    }
}
