//! `distsync bench`: the project's performance figures, each measured in this process beside
//! its anchor (measured in the same run, so that machine load moves both), with their ratio
//! and, at the full sizes, the ratio's goal and whether it was met (the last line lists the
//! rows that met theirs and those that did not). The goals: a1 >= 0.8 and a2 >= 0.6 of the
//! bare heap, b4 <= 2, c1 and c2 within 5 s of CPU at 1,000,000 (60 s at 10,000,000), d2 >=
//! 1.7x d1, e1 <= 2.
//!
//! Rows:
//! - a: the simulator's events per CPU second (Ricart-Agrawala and Lamport, N = 32, saturated,
//!   no trace) against a bare `BinaryHeap` event loop holding the simulator's mean number of
//!   pending events, of 72 bytes each (`distsync_sim::bench::heap_loop`). The note gives the
//!   range of the pairs' own ratios beside the median: a shared machine's speed changes in
//!   phases, which a wide range shows.
//! - b: events per CPU second as the pending queue grows: Ricart-Agrawala with every node
//!   requesting once (about N(N-1) messages in flight at the start) at N = 1,000 and 3,000, and
//!   at N = 6 every node requesting 20,000 times in turn (a small queue; requesting once, a run
//!   is so short that its set-up would be most of its time), each against the bare heap holding
//!   as many events; and how much each slows down from the smallest to the largest queue
//!   (target: at most 2x). Each size runs `--reps` times beside its anchor (medians shown), and
//!   its note gives the system share of its CPU time (the kernel giving a large run fresh
//!   pages, which some virtual machines make slow): b4 gives the growth in user time too.
//! - c: Chang-Roberts and Peterson on a ring of `--ring` processes in a random order, all
//!   starting: CPU seconds and peak resident memory, against the goal in CPU seconds.
//! - d: the checker's distinct states per second on Ricart-Agrawala, 3 nodes x 2 requests,
//!   non-FIFO links, on one thread (d1) and on every core (d2, against d1). d1's anchor,
//!   stateright on the same model, is a separate workspace (benches/checker-vs-stateright;
//!   scripts/bench-all.sh runs both).
//!
//! - e: tracing's cost: the run of row a1 (Ricart-Agrawala, N = 32, saturated) untraced and
//!   traced, the trace written to a sink that counts its bytes (its serialization measured, not
//!   the disk), paired runs, user CPU time; the ratio is traced / untraced (target: at most 2).
//!
//! The load average is printed beside every row: the machine may be shared.

use crate::{InputError, Outcome};
use distsync_algorithms::mutex::RicartAgrawala;
use distsync_check::{check, Config, Verdict};
use distsync_sim::bench::{self, Rate, ANCHOR_EVENT_BYTES};
use distsync_sim::{run, RunOptions, Scenario};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Arguments of `distsync bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// The rows to measure: a (simulator vs bare heap), b (cost against pending-queue size),
    /// c (elections on a large ring), d (checker), e (tracing's cost); all by default.
    #[arg(long, value_delimiter = ',', value_parser = ["a", "b", "c", "d", "e"])]
    rows: Vec<String>,
    /// Tiny sizes, for a smoke test (the figures mean little).
    #[arg(long)]
    quick: bool,
    /// Ring size of row c (default 1,000,000; 200 with --quick).
    #[arg(long, value_name = "N")]
    ring: Option<u32>,
    /// Paired repetitions of the simulator and its anchor in rows a and b; the medians are
    /// shown, and row a's note gives the range of the pairs' ratios (default 5 in row a and 3
    /// in row b; 1 with --quick).
    #[arg(long, value_name = "K")]
    reps: Option<usize>,
    /// Print the rows as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// One line of the table.
#[derive(Serialize)]
struct Row {
    /// a1, a2, b1...
    id: String,
    /// What is measured (the same with --quick).
    name: &'static str,
    /// The sizes of this run.
    size: String,
    /// The figure, and its unit.
    figure: f64,
    unit: &'static str,
    /// The anchor: what it is, and its figure when measured here.
    anchor_name: String,
    anchor: Option<f64>,
    /// figure / anchor, or as the row explains.
    ratio: Option<f64>,
    /// More about the row (memory, events, the result checked).
    note: String,
    /// The 1-minute load average when the row was measured.
    load: Option<f64>,
    /// The row's target (issue 38's table), when it has one at this size.
    #[serde(skip_serializing_if = "Option::is_none")]
    goal: Option<Goal>,
    /// Whether the ratio reached the goal (absent when the row has no goal).
    #[serde(skip_serializing_if = "Option::is_none")]
    met: Option<bool>,
}

/// A row's target, on its ratio.
#[derive(Serialize, Clone, Copy)]
#[serde(rename_all = "snake_case")]
enum Goal {
    /// The ratio must be at least this.
    AtLeast(f64),
    /// The ratio must be at most this.
    AtMost(f64),
}

impl Goal {
    fn met(self, ratio: Option<f64>) -> Option<bool> {
        let r = ratio?;
        Some(match self {
            Goal::AtLeast(g) => r >= g,
            Goal::AtMost(g) => r <= g,
        })
    }

    fn text(self) -> String {
        match self {
            Goal::AtLeast(g) => format!(">= {g}"),
            Goal::AtMost(g) => format!("<= {g}"),
        }
    }
}

impl Row {
    /// A simulator row beside the bare heap holding as many events: the simulator's events
    /// per second, the heap's, and the number of events pending.
    fn against_heap(
        id: String,
        name: &'static str,
        size: String,
        (sim, anchor, pending): (f64, f64, usize),
        note: String,
        load: Option<f64>,
    ) -> Row {
        Row {
            id,
            name,
            size,
            figure: sim,
            unit: "events/s",
            anchor_name: format!(
                "bare BinaryHeap loop, {pending} pending x {ANCHOR_EVENT_BYTES} B"
            ),
            anchor: Some(anchor),
            ratio: ratio(sim, anchor),
            note,
            load,
            goal: None,
            met: None,
        }
    }

    /// Sets the row's goal and whether its ratio meets it.
    fn with_goal(mut self, goal: Option<Goal>) -> Row {
        self.goal = goal;
        self.met = goal.and_then(|g| g.met(self.ratio));
        self
    }
}

/// The CPU model, as `/proc/cpuinfo` names it.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string())
}

fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// Runs `scenario` (no trace) until at least `min_cpu` CPU seconds have passed (at least once);
/// the events applied and the CPU time they took, and how much of that time was the system's.
fn sim_rate(scenario: &Scenario, min_cpu: f64) -> Result<(Rate, f64), InputError> {
    let mut rate = Rate {
        count: 0,
        cpu_s: 0.0,
    };
    let mut system_s = 0.0;
    while rate.count == 0 || rate.cpu_s < min_cpu {
        let system_before = bench::system_seconds();
        let (report, cpu) = bench::timed(|| run(scenario, RunOptions::default()));
        system_s += bench::system_seconds() - system_before;
        let report = report?;
        if !report.violations.is_empty() {
            return Err(InputError(format!(
                "bench: {} broke a property: {:?}",
                scenario.algorithm, report.violations
            )));
        }
        rate.count += report.events_processed;
        rate.cpu_s += cpu;
    }
    Ok((rate, system_s))
}

fn millions(x: f64) -> String {
    format!("{:.2} M", x / 1e6)
}

/// Row a: the simulator against the bare heap, paired repetitions, medians.
fn row_a(quick: bool, reps: usize, rows: &mut Vec<Row>) -> Result<(), InputError> {
    // The goals are issue 38's, at N = 32 (a quick run's tiny sizes have none).
    let cases: [(&str, &'static str, u32, u64, Option<Goal>); 2] = if quick {
        [
            ("a1", "simulator: ricart-agrawala, saturated", 4, 5, None),
            ("a2", "simulator: lamport-mutex, saturated", 4, 5, None),
        ]
    } else {
        [
            (
                "a1",
                "simulator: ricart-agrawala, saturated",
                32,
                100,
                Some(Goal::AtLeast(0.8)),
            ),
            (
                "a2",
                "simulator: lamport-mutex, saturated",
                32,
                60,
                Some(Goal::AtLeast(0.6)),
            ),
        ]
    };
    let min_cpu = if quick { 0.0 } else { 0.5 };
    for (id, name, n, requests, goal) in cases {
        let algorithm = name
            .split_once(": ")
            .and_then(|(_, rest)| rest.split(',').next())
            .expect("a named algorithm");
        let load = load_average();
        let s = bench::mutex_heavy(algorithm, n, requests);
        let pending = bench::mean_pending(&s)
            .expect("a mutual-exclusion algorithm")?
            .round() as usize;
        let (mut sims, mut anchors) = (Vec::new(), Vec::new());
        let mut events = 0;
        for rep in 0..reps {
            let (sim, _) = sim_rate(&s, min_cpu)?;
            events = sim.count;
            let anchor = bench::heap_loop(pending, sim.count, rep as u64 + 1);
            sims.push(sim.per_second());
            anchors.push(anchor.per_second());
        }
        // Each pair's own ratio: the median ratio lies within their range, and a wide range
        // says the machine changed speed during the row (a shared host's fast and slow phases).
        let pair_ratios: Vec<f64> = sims.iter().zip(&anchors).map(|(s, a)| s / a).collect();
        let lowest = pair_ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let highest = pair_ratios.iter().copied().fold(0.0, f64::max);
        let (sim, anchor) = (median(sims), median(anchors));
        rows.push(
            Row::against_heap(
                id.into(),
                name,
                format!("N={n}, {requests} requests each, no trace"),
                (sim, anchor, pending),
                format!(
                    "median of {reps} paired runs of {events} events (CPU time); the pairs' own \
                     ratios {lowest:.3} to {highest:.3}"
                ),
                load,
            )
            .with_goal(goal),
        );
    }
    Ok(())
}

/// Row b: events per second against the pending-queue size, each size run `reps` times beside
/// its anchor (medians shown).
fn row_b(quick: bool, reps: usize, rows: &mut Vec<Row>) -> Result<(), InputError> {
    let sizes: [u32; 3] = if quick {
        [6, 30, 60]
    } else {
        [6, 1_000, 3_000]
    };
    // The smallest size requests many times, not once: a run of six nodes requesting once is
    // about 70 events, which cost less than the run's own set-up (building the engine, the
    // report), so its rate would be mostly set-up and flatter the growth in b4.
    let smallest_requests: u64 = if quick { 20 } else { 20_000 };
    // Per size: the median rate in CPU time, and in user time alone.
    let mut sim_rates = Vec::new();
    let mut user_rates = Vec::new();
    let mut heap_rates = Vec::new();
    for (i, n) in sizes.into_iter().enumerate() {
        let load = load_average();
        let (s, name, pending, size) = if i == 0 {
            let s = bench::mutex_heavy("ricart-agrawala", n, smallest_requests);
            let pending = bench::mean_pending(&s)
                .expect("a mutual-exclusion algorithm")?
                .round() as usize;
            (
                s,
                "simulator: ricart-agrawala, every node requesting in turn",
                pending,
                format!("N={n}, {smallest_requests} requests each, ~{pending} pending"),
            )
        } else {
            let pending = (n as usize) * (n as usize - 1);
            (
                bench::mutex_once("ricart-agrawala", n),
                "simulator: ricart-agrawala, every node requesting once",
                pending,
                format!("N={n}, ~{pending} pending at the start"),
            )
        };
        let min_cpu = if quick { 0.0 } else { 0.5 };
        let (mut sims, mut users, mut anchors) = (Vec::new(), Vec::new(), Vec::new());
        let (mut cpus, mut systems) = (Vec::new(), Vec::new());
        let mut events = 0;
        for rep in 0..reps {
            let (sim, system_s) = sim_rate(&s, min_cpu)?;
            events = sim.count;
            sims.push(sim.per_second());
            users.push(
                Rate {
                    count: sim.count,
                    cpu_s: sim.cpu_s - system_s,
                }
                .per_second(),
            );
            cpus.push(sim.cpu_s);
            systems.push(system_s);
            // Enough events for the large heaps to be measured past their first pops.
            let anchor_events = sim.count.clamp(100_000, 4_000_000);
            anchors.push(bench::heap_loop(pending, anchor_events, 7 + rep as u64).per_second());
        }
        let (sim, anchor) = (median(sims), median(anchors));
        sim_rates.push(sim);
        user_rates.push(median(users));
        heap_rates.push(anchor);
        rows.push(Row::against_heap(
            format!("b{}", i + 1),
            name,
            size,
            (sim, anchor, pending),
            format!(
                "median of {reps} paired runs of {events} events: {:.2} s CPU, of which {:.2} s system",
                median(cpus),
                median(systems)
            ),
            load,
        ));
    }
    let growth = |r: &[f64]| ratio(r[0], r[r.len() - 1]).unwrap_or(0.0);
    let (sim_growth, heap_growth) = (growth(&sim_rates), growth(&heap_rates));
    rows.push(
        Row {
            id: "b4".into(),
            name: "per-event cost growth, smallest to largest queue",
            size: format!("N={} -> N={}", sizes[0], sizes[2]),
            figure: sim_growth,
            unit: "x slower (simulator)",
            anchor_name: "bare BinaryHeap, same queue sizes (target: simulator <= 2x)".into(),
            anchor: Some(heap_growth),
            ratio: ratio(sim_growth, heap_growth),
            note: format!(
                "cost per event at the largest queue / at the smallest, in CPU time; in user time \
             alone {:.2}x (system time is mostly the kernel giving the large run fresh pages)",
                growth(&user_rates)
            ),
            load: load_average(),
            goal: None,
            met: None,
        }
        .with_goal((!quick).then_some(Goal::AtMost(2.0))),
    );
    Ok(())
}

/// Row c: elections on a large ring, every process starting.
fn row_c(ring: u32, rows: &mut Vec<Row>) -> Result<(), InputError> {
    // Issue 38's goals: 5 s of CPU at a million, 60 s at ten million; other sizes have none.
    let goal_s = match ring {
        1_000_000 => Some(5.0),
        10_000_000 => Some(60.0),
        _ => None,
    };
    for (id, algorithm, name) in [
        (
            "c1",
            "chang-roberts",
            "elections: chang-roberts, ring, all start",
        ),
        ("c2", "peterson", "elections: peterson, ring, all start"),
    ] {
        let load = load_average();
        let s = bench::ring_election(algorithm, ring, 1);
        bench::reset_peak_rss();
        let wall = Instant::now();
        let (report, cpu) = bench::timed(|| run(&s, RunOptions::default()));
        let wall = wall.elapsed().as_secs_f64();
        let report = report?;
        let peak = bench::peak_rss_mib();
        let e = report.sections.election.as_ref();
        let elected = e.is_some_and(|e| e.agreed && e.leader == Some(ring - 1));
        let note = format!(
            "{}; {} events ({:.2} M/s); wall {wall:.1} s; peak RSS {}",
            if elected && report.violations.is_empty() {
                format!("leader {} agreed by all", ring - 1)
            } else {
                "ELECTION DID NOT COMPLETE".to_string()
            },
            report.events_processed,
            report.events_processed as f64 / cpu.max(1e-9) / 1e6,
            peak.map_or("n/a".to_string(), |m| format!("{m:.0} MiB")),
        );
        rows.push(
            Row {
                id: id.into(),
                name,
                size: format!("{ring} processes in a random order"),
                figure: cpu,
                unit: "s CPU",
                anchor_name: "goal: 5 s CPU at 1,000,000, 60 s at 10,000,000".into(),
                anchor: goal_s,
                ratio: goal_s.and_then(|g| ratio(cpu, g)),
                note,
                load,
                goal: None,
                met: None,
            }
            .with_goal(goal_s.map(|_| Goal::AtMost(1.0))),
        );
    }
    Ok(())
}

/// Row d: the checker's states per second.
fn row_d(quick: bool, rows: &mut Vec<Row>) -> Result<(), InputError> {
    let (nodes, requests) = if quick { (2, 1) } else { (3, 2) };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // d2's anchor is d1: a second core must add speed (issue 38: at least 1.7x on two cores).
    let mut one_thread: Option<f64> = None;
    for (id, threads) in [("d1", 1), ("d2", cores)] {
        let load = load_average();
        let config = Config {
            nodes,
            requests,
            fifo: false,
            threads,
            ..Config::default()
        };
        let start = Instant::now();
        let (outcome, cpu) = bench::timed(|| check::<RicartAgrawala>(&config, &mut |_| {}));
        let wall = start.elapsed().as_secs_f64();
        let outcome = outcome.map_err(|e| InputError(format!("bench: the checker failed: {e}")))?;
        let proved = matches!(outcome.verdict, Verdict::Proved);
        let states = outcome.stats.states as f64;
        let figure = states / wall.max(1e-9);
        let goal = (threads > 1 && !quick).then_some(Goal::AtLeast(1.7));
        rows.push(
            Row {
                id: id.into(),
                name: if threads == 1 {
                    "checker: ricart-agrawala, non-FIFO, 1 thread"
                } else {
                    "checker: ricart-agrawala, non-FIFO, every core"
                },
                size: format!("{nodes} nodes x {requests} requests, {threads} thread(s)"),
                figure,
                unit: "states/s (wall)",
                anchor_name: if threads == 1 {
                    "stateright 0.31, same model: benches/checker-vs-stateright (goal 5x)".into()
                } else {
                    "d1, the same checker on 1 thread".into()
                },
                anchor: if threads == 1 { None } else { one_thread },
                ratio: if threads == 1 {
                    None
                } else {
                    one_thread.and_then(|one| ratio(figure, one))
                },
                note: format!(
                    "{} states in {wall:.2} s wall, {cpu:.2} s CPU; {}",
                    outcome.stats.states,
                    if proved { "proved" } else { "NOT PROVED" }
                ),
                load,
                goal: None,
                met: None,
            }
            .with_goal(goal),
        );
        if threads == 1 {
            one_thread = Some(figure);
        }
    }
    Ok(())
}

/// A trace writer that keeps nothing and counts the bytes (the count shared with the row).
struct CountingSink(Arc<AtomicU64>);

impl std::io::Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Row e: the same run untraced and traced, paired, user CPU time; medians and the pairs' own
/// ratios.
fn row_e(quick: bool, reps: usize, rows: &mut Vec<Row>) -> Result<(), InputError> {
    let (n, requests) = if quick { (4, 5) } else { (32, 300) };
    let s = bench::mutex_heavy("ricart-agrawala", n, requests);
    let load = load_average();
    let (mut plain, mut traced, mut pair_ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut events, mut bytes) = (0, 0);
    for _ in 0..reps {
        let (report, untraced_s) = bench::user_timed(|| run(&s, RunOptions::default()));
        let report = report?;
        let counted = Arc::new(AtomicU64::new(0));
        let sink = CountingSink(Arc::clone(&counted));
        let (with_trace, traced_s) = bench::user_timed(|| {
            run(
                &s,
                RunOptions {
                    trace: Some(Box::new(sink)),
                    ..RunOptions::default()
                },
            )
        });
        let with_trace = with_trace?;
        // A trace only watches: the traced run's report is the untraced one's.
        if serde_json::to_string(&report)? != serde_json::to_string(&with_trace)? {
            return Err(InputError(
                "bench: the traced run's report differs from the untraced run's".to_string(),
            ));
        }
        events = report.events_processed;
        bytes = counted.load(Ordering::Relaxed);
        plain.push(untraced_s);
        traced.push(traced_s);
        if let Some(r) = ratio(traced_s, untraced_s) {
            pair_ratios.push(r);
        }
    }
    let lowest = pair_ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let highest = pair_ratios.iter().copied().fold(0.0, f64::max);
    let (plain, traced) = (median(plain), median(traced));
    rows.push(
        Row {
            id: "e1".into(),
            name: "tracing: ricart-agrawala, saturated, traced",
            size: format!("N={n}, {requests} requests each, {events} events"),
            figure: traced,
            unit: "s user CPU",
            anchor_name: "the same run untraced, paired".into(),
            anchor: Some(plain),
            ratio: ratio(traced, plain),
            note: format!(
                "median of {reps} pairs; the pairs' own ratios {lowest:.2} to {highest:.2}; \
             {:.0} MB of trace ({:.0} B per event) into a counting sink",
                bytes as f64 / 1e6,
                bytes as f64 / events.max(1) as f64
            ),
            load,
            goal: None,
            met: None,
        }
        .with_goal((!quick).then_some(Goal::AtMost(2.0))),
    );
    Ok(())
}

/// "goal >= 0.8 met " / "goal <= 2 NOT MET ", or nothing for a row without a goal.
fn goal_text(r: &Row) -> String {
    match (r.goal, r.met) {
        (Some(g), Some(true)) => format!("goal {} met  ", g.text()),
        (Some(g), _) => format!("goal {} NOT MET  ", g.text()),
        (None, _) => String::new(),
    }
}

/// One line naming the rows that reached their goal and those that did not.
fn goals_summary(rows: &[Row]) -> String {
    let with_goal: Vec<&Row> = rows.iter().filter(|r| r.goal.is_some()).collect();
    if with_goal.is_empty() {
        return "goals: no row of this run has one (they are set at the full sizes)".to_string();
    }
    let list = |met: bool| {
        with_goal
            .iter()
            .filter(|r| r.met == Some(met))
            .map(|r| r.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (met, missed) = (list(true), list(false));
    format!(
        "goals: {} of {} met{}{}",
        with_goal.iter().filter(|r| r.met == Some(true)).count(),
        with_goal.len(),
        if met.is_empty() {
            String::new()
        } else {
            format!(" ({met})")
        },
        if missed.is_empty() {
            String::new()
        } else {
            format!("; not met: {missed}")
        }
    )
}

fn show(x: f64, unit: &str) -> String {
    if unit.ends_with("events/s") || unit.starts_with("states/s") {
        format!("{} {unit}", millions(x))
    } else {
        format!("{x:.2} {unit}")
    }
}

/// `distsync bench`.
pub fn bench_cmd(args: BenchArgs) -> Result<Outcome, InputError> {
    let all = args.rows.is_empty();
    let wants = |r: &str| all || args.rows.iter().any(|x| x == r);
    if args.reps == Some(0) {
        return Err(InputError(
            "--reps 0: at least 1 paired repetition is needed to measure anything".to_string(),
        ));
    }
    let reps = args.reps.unwrap_or(if args.quick { 1 } else { 5 });
    // Row b's largest size takes seconds a run, so it is repeated fewer times by default.
    let reps_b = args.reps.unwrap_or(if args.quick { 1 } else { 3 });
    let ring = args
        .ring
        .unwrap_or(if args.quick { 200 } else { 1_000_000 });
    if ring < 3 {
        return Err(InputError(format!(
            "--ring {ring}: a ring needs at least 3 processes"
        )));
    }
    let mut rows = Vec::new();
    let mut printed = 0;
    // Each group of rows is printed as soon as it is measured (the large rows take minutes).
    let mut flush = |rows: &Vec<Row>| {
        if !args.json {
            for r in &rows[printed..] {
                let anchor = r.anchor.map_or(String::new(), |a| {
                    show(a, r.unit).replace("(simulator)", "")
                });
                println!(
                    "{:<3} {:<52} {:<40}\n    figure {:<28} anchor {:<22} ratio {:<6} {}load {}\n    anchor: {}; {}",
                    r.id,
                    r.name,
                    r.size,
                    show(r.figure, r.unit),
                    anchor,
                    r.ratio.map_or("-".into(), |x| format!("{x:.3}")),
                    goal_text(r),
                    r.load.map_or("n/a".into(), |l| format!("{l:.2}")),
                    r.anchor_name,
                    r.note
                );
            }
        }
        printed = rows.len();
    };
    if !args.json {
        println!(
            "distsync bench{}: every figure beside its anchor, measured in this process",
            if args.quick {
                " --quick (tiny sizes)"
            } else {
                ""
            }
        );
        println!(
            "machine: {}, {} cores, load {}",
            cpu_model(),
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            load_average().map_or("n/a".into(), |l| format!("{l:.2}"))
        );
    }
    if wants("a") {
        row_a(args.quick, reps, &mut rows)?;
        flush(&rows);
    }
    if wants("b") {
        row_b(args.quick, reps_b, &mut rows)?;
        flush(&rows);
    }
    if wants("c") {
        row_c(ring, &mut rows)?;
        flush(&rows);
    }
    if wants("d") {
        row_d(args.quick, &mut rows)?;
        flush(&rows);
    }
    if wants("e") {
        row_e(args.quick, reps, &mut rows)?;
        flush(&rows);
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("rows serialize")
        );
    } else {
        println!("{}", goals_summary(&rows));
    }
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, ratio: Option<f64>, goal: Option<Goal>) -> Row {
        Row {
            id: id.into(),
            name: "a row",
            size: String::new(),
            figure: 1.0,
            unit: "events/s",
            anchor_name: String::new(),
            anchor: None,
            ratio,
            note: String::new(),
            load: None,
            goal: None,
            met: None,
        }
        .with_goal(goal)
    }

    #[test]
    fn a_goal_is_met_at_its_bound_and_missed_past_it() {
        assert_eq!(
            row("a1", Some(0.8), Some(Goal::AtLeast(0.8))).met,
            Some(true)
        );
        assert_eq!(
            row("a1", Some(0.79), Some(Goal::AtLeast(0.8))).met,
            Some(false)
        );
        assert_eq!(
            row("e1", Some(2.0), Some(Goal::AtMost(2.0))).met,
            Some(true)
        );
        assert_eq!(
            row("e1", Some(2.01), Some(Goal::AtMost(2.0))).met,
            Some(false)
        );
        // No ratio measured: neither met nor missed.
        assert_eq!(row("d2", None, Some(Goal::AtLeast(1.7))).met, None);
        assert_eq!(row("b1", Some(0.5), None).met, None);
    }

    #[test]
    fn the_summary_names_the_rows_that_met_their_goal_and_those_that_did_not() {
        let rows = [
            row("a1", Some(0.59), Some(Goal::AtLeast(0.8))),
            row("a2", Some(0.61), Some(Goal::AtLeast(0.6))),
            row("b1", Some(0.5), None),
            row("e1", Some(5.5), Some(Goal::AtMost(2.0))),
        ];
        assert_eq!(
            goals_summary(&rows),
            "goals: 1 of 3 met (a2); not met: a1, e1"
        );
        assert_eq!(goal_text(&rows[0]), "goal >= 0.8 NOT MET  ");
        assert_eq!(goal_text(&rows[1]), "goal >= 0.6 met  ");
        assert_eq!(goal_text(&rows[2]), "");
        assert!(goals_summary(&rows[2..3]).starts_with("goals: no row"));
    }
}
