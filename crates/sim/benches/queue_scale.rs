//! Cost per event of the simulator's pending-event queue against the number of events pending,
//! beside a bare `BinaryHeap` of the same events (the anchor), and the simulator itself
//! on a run whose queue grows to ~N^2 events (ricart-agrawala, every node requesting once).
//!
//! The queue part is the classic "hold" model: fill the queue with `size` events of 72 bytes of
//! payload due within [0.5ms, 1.5ms], then repeatedly take out the earliest and schedule a new
//! one 0.5ms to 1.5ms after it, so the queue stays at `size`. Times are CPU time of this thread
//! (`clock_gettime` of the thread's CPU clock, in ns), which a busy machine disturbs less than
//! wall time.
//!
//! The radix queues of every size are filled first and then run **interleaved**, a million
//! events at a time each, round after round: the project's machine is shared, and a size
//! measured alone can land beside someone's build while another does not, which moves the ratio
//! the target is about (largest against smallest) more than the queue does. The binary heaps are
//! run one after the other (their cost grows a hundredfold; noise does not hide that).
//!
//! The hold model keeps the queue at `size` for ever, so it never measures the queue growing. The
//! simulator's large runs do not hold: ricart-agrawala with every node requesting once puts
//! about N^2 requests in an empty queue at once, then each request taken out schedules one
//! reply, and the queue drains. So a second part, the **burst** model, does that: `size` events
//! due 0.5 to 1.5 ms ahead into an empty queue, each of them scheduling one event 0.5 to 1.5 ms
//! after it is taken out, until the queue is empty; whole bursts repeated (a fresh one each
//! time, the queue giving its memory back when dry), ns of CPU (user and system: the kernel
//! zeroing the pages of a growing queue is part of the cost) per event taken out.
//!
//! Run with `cargo bench -p distsync-sim --bench queue_scale` (sizes up to 10,000,000; about
//! 3 GB of memory at the largest size). Options: `-- --max 1000000` for a smaller largest size,
//! `-- --rounds 30` for more rounds (default 20), `-- --engine 1000,3000` for the simulator part
//! with those N (default 300,1000; `-- --engine none` leaves it out), `-- --sizes 32,10000000`
//! for other queue sizes (the first is the base of the ratio), `-- --heap no` to leave the binary
//! heaps out, `-- --burst no` to leave the burst part out.

use distsync_sim::queue::{Keyed, Queue};
use distsync_sim::{run, RunOptions, Scenario};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An event as the anchor has it: a time, a sequence number and 72 bytes of payload.
#[derive(Clone)]
struct Ev {
    time: u64,
    seq: u64,
    payload: [u64; 9],
}

impl Keyed for Ev {
    fn time(&self) -> u64 {
        self.time
    }
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// The same event for a max-heap: reversed, earliest first.
struct HeapEv(Ev);
impl PartialEq for HeapEv {
    fn eq(&self, o: &Self) -> bool {
        (self.0.time, self.0.seq) == (o.0.time, o.0.seq)
    }
}
impl Eq for HeapEv {}
impl PartialOrd for HeapEv {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for HeapEv {
    fn cmp(&self, o: &Self) -> Ordering {
        (o.0.time, o.0.seq).cmp(&(self.0.time, self.0.seq))
    }
}

/// CPU time of `clock` (this thread's or this process's) so far, in ns: `clock_gettime`, which
/// counts to the nanosecond (the scheduler's totals in /proc, `schedstat` and `stat`, move only
/// at the clock tick, every 4 to 10 ms here, which a run of a few ms cannot be timed by).
fn cpu_clock_ns(clock: libc::clockid_t) -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to write.
    let ok = unsafe { libc::clock_gettime(clock, &mut t) } == 0;
    assert!(ok, "clock_gettime of a CPU clock");
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU time of this thread, in ns.
fn cpu_ns() -> u64 {
    cpu_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn delay(rng: &mut Xoshiro256PlusPlus) -> u64 {
    rng.gen_range(500_000..1_500_000)
}

fn event(time: u64, seq: u64) -> Ev {
    Ev {
        time,
        seq,
        payload: [seq; 9],
    }
}

/// ns per hold operation (one take-out and one schedule) of `ops` operations at `size` pending.
fn hold<Q>(
    size: usize,
    ops: usize,
    mut push: impl FnMut(&mut Q, Ev),
    mut pop: impl FnMut(&mut Q) -> Ev,
    mut q: Q,
) -> f64 {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let mut seq = 0;
    for _ in 0..size {
        seq += 1;
        push(&mut q, event(delay(&mut rng), seq));
    }
    let started = cpu_ns();
    let mut check = 0u64;
    for _ in 0..ops {
        let e = pop(&mut q);
        check = check.wrapping_add(e.payload[4]);
        seq += 1;
        push(&mut q, event(e.time + delay(&mut rng), seq));
    }
    let spent = cpu_ns() - started;
    std::hint::black_box(check);
    spent as f64 / ops as f64
}

/// One radix queue of the interleaved run: its events, generator and CPU time so far.
struct Held {
    size: usize,
    q: Queue<Ev>,
    rng: Xoshiro256PlusPlus,
    seq: u64,
    ns: u64,
    ops: u64,
}

impl Held {
    /// A queue of `size` events, run once through (every first event taken out) before timing.
    fn new(size: usize) -> Held {
        let mut h = Held {
            size,
            q: Queue::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(7),
            seq: 0,
            ns: 0,
            ops: 0,
        };
        for _ in 0..size {
            h.seq += 1;
            let t = delay(&mut h.rng);
            h.q.push(event(t, h.seq));
        }
        h.run(size.max(100_000) as u64, &mut 0);
        (h.ns, h.ops) = (0, 0);
        h
    }

    fn run(&mut self, ops: u64, check: &mut u64) {
        let started = cpu_ns();
        for _ in 0..ops {
            let e = self.q.pop().expect("pending");
            *check = check.wrapping_add(e.payload[4]);
            self.seq += 1;
            let t = e.time + delay(&mut self.rng);
            self.q.push(event(t, self.seq));
        }
        self.ns += cpu_ns() - started;
        self.ops += ops;
    }

    fn per_event(&self) -> f64 {
        self.ns as f64 / self.ops as f64
    }
}

fn queue_part(mut sizes: Vec<usize>, max: usize, rounds: usize, heaps: bool) {
    println!("pending-event queue, hold model (ns per event: take out the earliest, schedule one)");
    sizes.retain(|&s| s <= max);
    let mut held: Vec<Held> = sizes.iter().map(|&s| Held::new(s)).collect();
    let mut check = 0;
    for _ in 0..rounds {
        for h in &mut held {
            h.run(1_000_000, &mut check);
        }
    }
    std::hint::black_box(check);
    let figures: Vec<(usize, f64)> = held.iter().map(|h| (h.size, h.per_event())).collect();
    // The heaps need the memory.
    drop(held);
    println!(
        "radix queue: {rounds} rounds of 1,000,000 events per size, interleaved; binary heap: one run per size"
    );
    println!(
        "{:>12} {:>12} {:>10} {:>14} {:>10}",
        "pending", "radix queue", "vs 32", "binary heap", "heap/radix"
    );
    let base = figures[0].1;
    let mut worst: f64 = 0.0;
    for (size, radix) in figures {
        if !heaps {
            println!("{size:>12} {radix:>9.1} ns {:>9.2}x", radix / base);
            worst = worst.max(radix / base);
            continue;
        }
        let heap = hold(
            size,
            4_000_000,
            |q: &mut BinaryHeap<HeapEv>, e| q.push(HeapEv(e)),
            |q| q.pop().expect("pending").0,
            BinaryHeap::new(),
        );
        worst = worst.max(radix / base);
        println!(
            "{size:>12} {radix:>9.1} ns {:>9.2}x {heap:>11.1} ns {:>9.1}x",
            radix / base,
            heap / radix
        );
    }
    println!("radix queue: the largest size costs {worst:.2}x the cost per event at 32 pending (target: at most 2x)");
}

/// One burst queue of the interleaved burst run (see the module's comment).
struct Burst {
    size: usize,
    q: Queue<Ev>,
    rng: Xoshiro256PlusPlus,
    seq: u64,
    now: u64,
    ns: u64,
    events: u64,
}

impl Burst {
    fn new(size: usize) -> Burst {
        Burst {
            size,
            q: Queue::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(7),
            seq: 0,
            now: 0,
            ns: 0,
            events: 0,
        }
    }

    /// Whole bursts until at least `min` events were taken out.
    fn run(&mut self, min: u64, check: &mut u64) {
        let started = cpu_ns();
        let mut events = 0;
        while events < min {
            for _ in 0..self.size {
                self.seq += 1;
                let mut e = event(self.now + delay(&mut self.rng), self.seq);
                e.payload[0] = 0;
                self.q.push(e);
            }
            while let Some(e) = self.q.pop() {
                events += 1;
                self.now = e.time;
                *check = check.wrapping_add(e.payload[4]);
                if e.payload[0] == 0 {
                    self.seq += 1;
                    let mut reply = event(e.time + delay(&mut self.rng), self.seq);
                    reply.payload[0] = 1;
                    self.q.push(reply);
                }
            }
        }
        self.ns += cpu_ns() - started;
        self.events += events;
    }
}

fn burst_part(mut sizes: Vec<usize>, max: usize, rounds: usize) {
    println!(
        "pending-event queue, burst model (ns per event: `size` events into an empty queue, each scheduling one more, until empty)"
    );
    sizes.retain(|&s| s <= max);
    let mut bursts: Vec<Burst> = sizes.iter().map(|&s| Burst::new(s)).collect();
    let mut check = 0;
    for _ in 0..rounds {
        for b in &mut bursts {
            b.run((2 * b.size as u64).max(2_000_000), &mut check);
        }
    }
    std::hint::black_box(check);
    println!("{rounds} rounds of whole bursts (at least 2,000,000 events) per size, interleaved");
    println!(
        "{:>12} {:>12} {:>10}",
        "burst of", "radix queue", "vs first"
    );
    let base = bursts[0].ns as f64 / bursts[0].events as f64;
    let mut worst: f64 = 0.0;
    for b in &bursts {
        let per = b.ns as f64 / b.events as f64;
        worst = worst.max(per / base);
        println!("{:>12} {per:>9.1} ns {:>9.2}x", b.size, per / base);
    }
    println!("burst model: the largest burst costs {worst:.2}x the cost per event of the smallest");
}

/// Ricart-agrawala with every one of `n` nodes requesting once at time 0: ~2n^2 messages, most
/// of them pending at once.
fn engine_part(ns: &[u32]) {
    println!("simulator: ricart-agrawala, every node requesting once at 0 (1ms per message)");
    for &n in ns {
        let events: String = (0..n)
            .map(|i| format!("[[event]]\nat = \"0ms\"\nrequest = {i}\n"))
            .collect();
        let s = Scenario::from_toml(
            &format!(
                "algorithm = \"ricart-agrawala\"\nnodes = {n}\nuntil = \"10h\"\n\
                 [workload]\nkind = \"none\"\ncs = \"1ms\"\n[limits]\nmax_pending = 100000000\n{events}"
            ),
            "bench",
        )
        .expect("valid");
        let (r, cpu) = distsync_sim::bench::timed(|| run(&s, RunOptions::default()));
        let r = r.expect("runs");
        let m = r.sections.mutex.as_ref().expect("a mutex report");
        assert_eq!(m.entries, u64::from(n));
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        println!(
            "  N={n:>5}: {} entries, {} messages, {} events in {cpu:.3} s CPU ({:.2} M events/s)",
            m.entries,
            r.messages.total,
            r.events_processed,
            r.events_processed as f64 / cpu / 1e6
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let max = value("--max")
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let engine: Vec<u32> = value("--engine")
        .unwrap_or_else(|| "300,1000".into())
        .split(',')
        .filter_map(|v| v.parse().ok())
        .collect();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "load average: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let rounds = value("--rounds").and_then(|v| v.parse().ok()).unwrap_or(20);
    let sizes: Vec<usize> = value("--sizes")
        .unwrap_or_else(|| "32,1000,32000,1000000,10000000".into())
        .split(',')
        .filter_map(|v| v.parse().ok())
        .collect();
    let heaps = value("--heap").is_none_or(|v| v != "no");
    queue_part(sizes.clone(), max, rounds, heaps);
    if value("--burst").is_none_or(|v| v != "no") {
        burst_part(sizes, max, (rounds / 4).max(3));
    }
    if !engine.is_empty() {
        engine_part(&engine);
    }
}
