//! Measurements behind `distsync bench` (issue 15): the simulator's speed, each figure beside an
//! anchor measured in the same process, so that a loaded or slower machine moves both.
//!
//! - [`heap_loop`], the anchor of the simulator rows: a bare `BinaryHeap` event loop that pops
//!   the earliest of `pending` 72-byte events, does a trivial piece of work with it and pushes a
//!   follow-up after a random delay (500-1500 us, the delay of the simulator rows). It is what a
//!   discrete-event simulator cannot beat with a binary heap: no network, no process, no monitor.
//! - [`mutex_heavy`] and [`mutex_once`]: the scenarios of the simulator rows (saturated
//!   mutual exclusion with N = 32; every one of N nodes requesting once, which puts about N²
//!   messages in flight at once).
//! - [`ring_election`]: every process of a ring in a random order starting an election at once.
//! - [`mean_pending`]: the time-average of the simulator's pending-queue size over a run (an
//!   untimed, instrumented run), which sizes the anchor.
//! - [`cpu_seconds`] and [`peak_rss_mib`]: the process's CPU time and peak resident memory,
//!   figures a shared machine disturbs less than wall-clock time.
//!
//! Nothing here asserts a time: the figures are printed, compared by people.

use crate::engine::{Engine, Turn};
use crate::{MutexHarness, Scenario, SimError};
use distsync_algorithms::registry::{self, Entry, Explorable, Family, MutexVisitor};
use distsync_algorithms::validate::Validate;
use distsync_core::mutex::MutualExclusion;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::hint::black_box;

/// The size of one anchor event in bytes: what the simulator's pending events measured when
/// issue 15 was written (time, sequence number, and a message with its routing).
pub const ANCHOR_EVENT_BYTES: usize = std::mem::size_of::<AnchorEvent>();

/// One event of the bare heap loop: 72 bytes, ordered by (time, seq) like the simulator's.
#[derive(Clone, Copy)]
struct AnchorEvent {
    time: u64,
    seq: u64,
    payload: [u64; 7],
}

impl PartialEq for AnchorEvent {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl Eq for AnchorEvent {}
impl PartialOrd for AnchorEvent {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for AnchorEvent {
    // Reversed: the earliest event comes out of the max-heap first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

/// A figure measured in CPU time: `count` things done in `cpu_s` seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Events (or states) done.
    pub count: u64,
    /// CPU seconds of this process spent doing them.
    pub cpu_s: f64,
}

impl Rate {
    /// Things per CPU second.
    pub fn per_second(&self) -> f64 {
        if self.cpu_s > 0.0 {
            self.count as f64 / self.cpu_s
        } else {
            0.0
        }
    }
}

/// CPU time of this process so far, in seconds (user and system, every thread); 0 where there
/// is no process clock (the browser).
#[cfg(not(unix))]
pub fn cpu_seconds() -> f64 {
    0.0
}

/// CPU time of this process so far, in seconds (user and system, every thread).
#[cfg(unix)]
pub fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux and the BSDs
    // define.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// System CPU time of this process so far, in seconds (the kernel's work on its behalf: on
/// a large run, mostly giving it fresh pages, zeroed). Part of [`cpu_seconds`]; 0 where
/// `getrusage` fails.
#[cfg(unix)]
pub fn system_seconds() -> f64 {
    // SAFETY: all-zero bytes are a valid rusage (integers and timevals).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage, which getrusage fills.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return 0.0;
    }
    usage.ru_stime.tv_sec as f64 + usage.ru_stime.tv_usec as f64 * 1e-6
}

/// User CPU time of this process so far, in seconds (its own instructions, every thread; the
/// kernel's work on its behalf, such as writing files, left out); 0 where `getrusage` fails.
#[cfg(unix)]
pub fn user_seconds() -> f64 {
    // SAFETY: all-zero bytes are a valid rusage (integers and timevals).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage, which getrusage fills.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return 0.0;
    }
    usage.ru_utime.tv_sec as f64 + usage.ru_utime.tv_usec as f64 * 1e-6
}

/// User CPU time of this process so far: 0 where there is no `getrusage` (the browser).
#[cfg(not(unix))]
pub fn user_seconds() -> f64 {
    0.0
}

/// Runs `f` and returns its result with the user CPU seconds it took ([`user_seconds`]).
pub fn user_timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = user_seconds();
    let out = f();
    (out, user_seconds() - start)
}

/// System CPU time of this process so far: 0 where there is no `getrusage` (the browser).
#[cfg(not(unix))]
pub fn system_seconds() -> f64 {
    0.0
}

/// Peak resident memory of this process since the last [`reset_peak_rss`], in MiB (Linux:
/// `VmHWM` of /proc/self/status); `None` elsewhere.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Resets the peak of [`peak_rss_mib`] to the current resident size (Linux; a no-op elsewhere).
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Runs `f` and returns its result with the CPU seconds it took.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let start = cpu_seconds();
    let out = f();
    (out, cpu_seconds() - start)
}

/// The anchor: a bare binary-heap event loop holding `pending` events of
/// [`ANCHOR_EVENT_BYTES`], run for `events` events. Each event popped is folded into a checksum
/// and replaced by a follow-up 500-1500 us later (uniform, from a seeded generator), so the
/// queue keeps its size. Filling the heap is not timed.
pub fn heap_loop(pending: usize, events: u64, seed: u64) -> Rate {
    let pending = pending.max(1);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut heap = BinaryHeap::with_capacity(pending + 1);
    for seq in 0..pending as u64 {
        heap.push(AnchorEvent {
            time: rng.gen_range(0..1_000_000),
            seq,
            payload: [seq; 7],
        });
    }
    let mut seq = pending as u64;
    let mut sum = 0u64;
    let ((), cpu_s) = timed(|| {
        for _ in 0..events {
            let e = heap.pop().expect("the loop keeps the heap full");
            sum = sum.wrapping_add(e.payload[0] ^ e.payload[6] ^ e.time);
            seq += 1;
            heap.push(AnchorEvent {
                time: e.time + rng.gen_range(500_000..=1_500_000),
                seq,
                payload: [
                    sum,
                    e.payload[1],
                    e.payload[2],
                    e.payload[3],
                    e.payload[4],
                    e.payload[5],
                    seq,
                ],
            });
        }
    });
    black_box(sum);
    Rate {
        count: events,
        cpu_s,
    }
}

/// Saturated mutual exclusion: `n` nodes, each re-requesting the moment it leaves the critical
/// section (1 ms) until it has entered `requests` times; delays uniform in 500-1500 us, FIFO
/// links, no trace. The scenario of `crates/sim/benches/engine.rs`.
pub fn mutex_heavy(algorithm: &str, n: u32, requests: u64) -> Scenario {
    Scenario::from_toml(
        &format!(
            r#"
            algorithm = "{algorithm}"
            nodes = {n}
            until = "1h"
            [network]
            delay = {{ uniform = ["500us", "1500us"] }}
            fifo = true
            [workload]
            kind = "saturated"
            cs = "1ms"
            requests = {requests}
            "#
        ),
        "bench",
    )
    .expect("a valid scenario")
}

/// Every one of `n` nodes requests the critical section once, all at time 0: about n(n-1)
/// requests are in flight at once (the pending queue's size grows with n²), so the runaway
/// guard's `max_pending` is raised above that (its default, 4,000,000, stops N = 3,000).
pub fn mutex_once(algorithm: &str, n: u32) -> Scenario {
    let mut s = mutex_heavy(algorithm, n, 1);
    let n = u64::from(n);
    s.limits.get_or_insert_with(Default::default).max_pending = Some((2 * n * n).max(4_000_000));
    s
}

/// A ring of `n` processes in a random order (seeded), every process starting an election at
/// time 0, 1 ms per message: the scenario of `benches/scenarios/chang-roberts-1m.toml` (`nodes
/// = n`, `order = "random"`, one `elect = "all"` event), with the guard's default limits.
///
/// One `elect = "all"` event, not one `elect` event per process: the two start the same
/// election, but a million scripted events are a million entries in the scenario (and in the
/// JSON it was built from), in its checked copy and in the engine's actions, and a million more
/// events in the queue at time 0: at a million processes, 0.3 to 0.9 s more CPU and about 1 GB
/// more peak memory (docs/performance.md).
pub fn ring_election(algorithm: &str, n: u32, seed: u64) -> Scenario {
    serde_json::from_value(serde_json::json!({
        "algorithm": algorithm,
        "nodes": n,
        "order": "random",
        "seed": seed,
        "until": "100h",
        "event": [{"at": "0ms", "elect": "all"}],
    }))
    .expect("a valid scenario")
}

/// The time-average size of the pending-event queue over a run of `scenario` (sampled after
/// every event), for a mutual-exclusion algorithm (the bench uses `ricart-agrawala` and
/// `lamport-mutex`); `None` for an algorithm of another family, or an unknown one.
pub fn mean_pending(scenario: &Scenario) -> Option<Result<f64, SimError>> {
    /// Runs the scenario with the algorithm type the registry finds for its name.
    struct MeanPending<'a>(&'a Scenario);
    impl MutexVisitor for MeanPending<'_> {
        type Output = Result<f64, SimError>;
        fn visit<A: MutualExclusion + serde::Serialize + Explorable>(
            self,
            _entry: &'static Entry,
        ) -> Self::Output
        where
            A::Msg: Validate,
        {
            mean_pending_of::<A>(self.0)
        }
    }
    registry::visit_mutex(&scenario.algorithm, MeanPending(scenario))
}

fn mean_pending_of<A: MutualExclusion + Clone>(scenario: &Scenario) -> Result<f64, SimError> {
    let mut checked = scenario.check("bench")?;
    // As `run` does: timeouts left out follow the network's delay bound.
    let family = Family::Mutex;
    crate::assumptions::derive_defaults(&mut checked.scenario, family);
    let harness = MutexHarness::new::<A>(&checked, "bench")?;
    let mut engine = Engine::<A, _>::new(&checked, family.name(), scenario.seed, harness, false);
    engine.start();
    let (mut sum, mut samples) = (0u128, 0u64);
    loop {
        match engine.turn() {
            Turn::Applied => {
                sum += engine.pending_len() as u128;
                samples += 1;
            }
            Turn::Idle => {}
            Turn::End(_) => break,
        }
    }
    Ok(if samples == 0 {
        0.0
    } else {
        sum as f64 / samples as f64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_anchor_keeps_its_queue_full_and_counts_its_events() {
        assert_eq!(ANCHOR_EVENT_BYTES, 72);
        let r = heap_loop(32, 10_000, 1);
        assert_eq!(r.count, 10_000);
    }

    /// System time is the kernel's share of the CPU time: writing 256 MB of fresh pages (each
    /// zeroed by the kernel at its first write, tens of milliseconds even on a fast machine)
    /// adds to it, and it never exceeds the CPU time.
    #[cfg(target_os = "linux")]
    #[test]
    fn system_time_counts_the_kernel_giving_fresh_pages() {
        let (cpu0, system0) = (cpu_seconds(), system_seconds());
        assert!(
            (0.0..=cpu0 + 0.01).contains(&system0),
            "{system0} of {cpu0}"
        );
        // A large zeroed allocation is fresh pages mapped on first write: one write per page.
        let mut fresh = vec![0u8; 256 << 20];
        for i in (0..fresh.len()).step_by(4096) {
            fresh[i] = 1;
        }
        black_box(&fresh);
        let (cpu1, system1) = (cpu_seconds(), system_seconds());
        assert!(system1 > system0, "{system0} -> {system1}");
        assert!(system1 - system0 <= cpu1 - cpu0 + 0.01);
    }

    #[test]
    fn the_pending_queue_of_a_saturated_run_is_sampled() {
        let s = mutex_heavy("ricart-agrawala", 4, 3);
        let mean = mean_pending(&s).expect("known").expect("runs");
        // Every node holds a request or a reply in flight most of the time.
        assert!(mean > 1.0 && mean < 100.0, "{mean}");
        // Any mutual-exclusion algorithm of the registry, none of another family.
        let central = mean_pending(&mutex_heavy("central", 4, 3)).expect("a mutex algorithm");
        assert!(central.expect("runs") > 0.0);
        assert!(mean_pending(&ring_election("chang-roberts", 4, 1)).is_none());
        assert!(mean_pending(&mutex_heavy("no-such-algorithm", 4, 3)).is_none());
    }

    #[test]
    fn every_node_requesting_once_is_not_stopped_as_a_runaway() {
        // At N = 3,000 about 9 million requests are pending at once: more than the guard's
        // default of 4 million.
        let s = mutex_once("ricart-agrawala", 3_000);
        assert_eq!(s.limits.and_then(|l| l.max_pending), Some(18_000_000));
        let r = crate::run(
            &mutex_once("ricart-agrawala", 20),
            crate::RunOptions::default(),
        )
        .expect("runs");
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.sections.mutex.expect("a mutex report").entries, 20);
    }

    #[test]
    fn a_ring_election_scenario_starts_every_process() {
        let s = ring_election("chang-roberts", 50, 7);
        let r = crate::run(&s, crate::RunOptions::default()).expect("runs");
        let e = r.sections.election.expect("an election");
        assert!(e.agreed);
        assert_eq!(e.leader, Some(49));
    }
}
