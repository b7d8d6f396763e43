//! `distsync run` and `distsync simulate`: one simulated run, summarized or as JSON.

use crate::output;
use crate::progress::Progress;
use crate::trace_cmd;
use crate::{InputError, Outcome};
use distsync_algorithms::registry::Entry;
use distsync_core::{parse_duration, NodeId};
use distsync_sim::scenario::EventSpec;
use distsync_sim::{
    run, DelaySpec, Detect, ElectionSpec, MutexSpec, NetworkSpec, RunOptions, Scenario,
    WorkloadKind, WorkloadSpec,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Arguments of `distsync run`.
#[derive(clap::Args)]
pub struct RunArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
    /// Print the report as one JSON object instead of a summary.
    #[arg(long)]
    json: bool,
    /// Write every event as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Replace the scenario's seed.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::output::whole::<u64>)]
    seed: Option<u64>,
    /// Draw the run's space-time diagram to this SVG file (see `distsync trace render`).
    #[arg(long, value_name = "OUT.svg")]
    svg: Option<PathBuf>,
    /// Set a scenario field first: a dotted path and a value, like `nodes=8`,
    /// `network.loss=0.1`, `workload.cs=5ms` or `network.delay={"uniform":["1ms","5ms"]}`
    /// (JSON for tables and arrays). May be given several times.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Replace the scenario's simulated-time horizon.
    #[arg(long, value_parser = parse_duration_arg, allow_hyphen_values = true)]
    until: Option<Duration>,
    /// Replay a counterexample of the checker: FILE is the trace `distsync check SCENARIO
    /// --trace FILE` wrote, SCENARIO the same scenario file. Every step of the counterexample
    /// is made in turn (the delivery, timer, input, crash, loss, duplication or partition it
    /// names; no workload, loss or scripted event of the scenario's own), then the run goes on
    /// to its end; the report names the checker's step at which each property broke, and the
    /// exit code is 1 when one did.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
}

/// Arguments of `distsync simulate`.
#[derive(clap::Args)]
pub struct SimulateArgs {
    /// The algorithm (see `distsync list`).
    #[arg(long = "algo", value_name = "NAME")]
    algorithm: String,
    /// How many processes (ids 0..N-1).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::output::whole::<u32>, default_value_t = 5)]
    nodes: u32,
    /// Mutual exclusion: light (one request at a time), heavy (every node always waiting) or
    /// poisson:RATE (requests per second per node) [default: heavy].
    #[arg(long, value_parser = parse_load)]
    load: Option<Load>,
    /// Mutual exclusion: requests per node [default: 20].
    #[arg(long, allow_negative_numbers = true, value_parser = crate::output::whole::<u64>)]
    requests: Option<u64>,
    /// Message delay: "1ms", a uniform range "1ms..5ms", or an exponential mean "exp:2ms".
    #[arg(long, default_value = "1ms", value_parser = parse_delay)]
    delay: DelaySpec,
    /// Mutual exclusion: time inside the critical section [default: 10ms].
    #[arg(long, value_parser = parse_duration_arg)]
    cs: Option<Duration>,
    /// Per-link FIFO delivery (the default; refused together with --no-fifo).
    #[arg(long, conflicts_with = "no_fifo")]
    fifo: bool,
    /// Let messages on one link overtake each other.
    #[arg(long)]
    no_fifo: bool,
    /// Probability that a message is lost.
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    loss: f64,
    /// Probability that a message is delivered twice.
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    duplicate: f64,
    /// Simulated-time horizon (default 60s; for an election, 1s after the crash).
    #[arg(long, value_parser = parse_duration_arg, allow_hyphen_values = true)]
    until: Option<Duration>,
    /// The central algorithm's coordinator (default: the highest id); central only.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::output::whole::<u32>)]
    coordinator: Option<u32>,
    /// The initial token holder of token algorithms (default: node 0); token-ring,
    /// ricart-agrawala-token, suzuki-kasami and raymond only.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::output::whole::<u32>)]
    holder: Option<u32>,
    /// Elections: when the coordinator (the highest id) crashes; heartbeats and a timeout then
    /// start an election [default: 50ms].
    #[arg(long, value_parser = parse_duration_arg)]
    crash_at: Option<Duration>,
    /// The seed of every random choice.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::output::whole::<u64>, default_value_t = 1)]
    seed: u64,
    /// Print the report as one JSON object instead of a summary.
    #[arg(long)]
    json: bool,
    /// Write every event as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
}

/// A load given on the command line.
#[derive(Clone, Copy, Debug)]
pub enum Load {
    Light,
    Heavy,
    Poisson(f64),
}

fn parse_load(s: &str) -> Result<Load, String> {
    match s {
        "light" => Ok(Load::Light),
        "heavy" | "saturated" => Ok(Load::Heavy),
        _ => match s.strip_prefix("poisson:") {
            Some(rate) => match rate.parse::<f64>() {
                Ok(r) if r > 0.0 && r.is_finite() => Ok(Load::Poisson(r)),
                _ => Err(format!(
                    "expected a positive rate after `poisson:`, got `{rate}`"
                )),
            },
            None => Err("expected light, heavy or poisson:RATE (e.g. poisson:5)".into()),
        },
    }
}

/// A duration on the command line; a negative one is refused in words (without
/// `allow_hyphen_values`, clap would take `-2s` for a flag and say "unexpected argument").
fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    if s.trim().starts_with('-') {
        return Err(format!(
            "expected a duration of 0 or more, like 2s; got the negative duration {}",
            s.trim()
        ));
    }
    parse_duration(s).map_err(|e| e.to_string())
}

fn parse_delay(s: &str) -> Result<DelaySpec, String> {
    if let Some(mean) = s.strip_prefix("exp:") {
        return Ok(DelaySpec::Exponential(parse_duration_arg(mean)?));
    }
    if let Some((lo, hi)) = s.split_once("..") {
        let (lo, hi) = (parse_duration_arg(lo)?, parse_duration_arg(hi)?);
        if lo > hi {
            return Err(format!("a range goes from low to high, got `{s}`"));
        }
        return Ok(DelaySpec::Uniform(lo, hi));
    }
    parse_duration_arg(s).map(DelaySpec::Constant)
}

fn parse_probability(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        Ok(p) => Err(format!("expected a probability between 0 and 1, got {p}")),
        Err(_) => Err(format!("expected a probability between 0 and 1, got `{s}`")),
    }
}

pub fn run_file(args: RunArgs) -> Result<Outcome, InputError> {
    let (mut scenario, origin) = load_file_or_example(&args.scenario)?;
    let mut again = format!("distsync run {origin}");
    for assignment in &args.set {
        scenario = set_field(&scenario, assignment)?;
        again.push_str(&format!(" --set '{assignment}'"));
    }
    if let Some(until) = args.until {
        scenario.until = Some(until);
        again.push_str(&format!(
            " --until {}",
            distsync_core::format_duration(until)
        ));
    }
    if let Some(path) = &args.replay {
        for (given, flag) in [
            (args.seed.is_some(), "--seed"),
            (args.svg.is_some(), "--svg"),
        ] {
            if given {
                return Err(InputError(format!(
                    "{flag}: not with --replay (a replay makes the checker's choices, none at random; draw its trace with `distsync trace render`)"
                )));
            }
        }
        return replay(&scenario, path, args.json, args.trace.as_deref());
    }
    execute(
        &scenario,
        &origin,
        args.seed,
        args.trace.as_deref(),
        args.svg.as_deref(),
        args.json,
        Some(&again),
    )
}

/// Most events a replayed counterexample runs on for after its last step.
const REPLAY_RUN_ON: u64 = 1_000_000;

/// `distsync run SCENARIO --replay FILE`: the checker's counterexample in FILE, step by step in
/// a stepped session of the scenario, then on to the run's end.
fn replay(
    scenario: &Scenario,
    path: &Path,
    json: bool,
    trace: Option<&Path>,
) -> Result<Outcome, InputError> {
    use distsync_sim::session::RunStop;
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError(format!("--replay: cannot read {shown}: {e}")))?;
    let stepping = distsync_web::check_api::stepping_scenario(scenario);
    let replayed = distsync_web::check_api::follow_trace(&stepping, &text, &shown)
        .map_err(|e| InputError(format!("--replay: {e}")))?;
    let mut session = replayed.session;
    let last = replayed.steps.last().map_or(0, |s| s.0);
    // A property of the end (deadlock, agreement, completion) is judged when the run ends.
    loop {
        match session.run(REPLAY_RUN_ON, None) {
            Ok(RunStop::Violation) => continue,
            Ok(_) => break,
            Err(e) => return Err(InputError(format!("--replay: after the last step: {e}"))),
        }
    }
    let report = session.report();
    if let Some(out) = trace {
        std::fs::write(out, session.trace_jsonl())
            .map_err(|e| InputError(format!("--trace: cannot write {}: {e}", out.display())))?;
    }
    print_report(&report, json)?;
    let mut said = Vec::new();
    for (number, words, broken) in &replayed.steps {
        for property in broken {
            if !said.contains(property) {
                eprintln!("replay: {property} broke at the checker's step {number} ({words})");
                said.push(property.clone());
            }
        }
    }
    for v in &report.violations {
        if !said.contains(&v.property) {
            eprintln!(
                "replay: {} found when the run ended, after the checker's last step ({last}) of {shown}",
                v.property
            );
            said.push(v.property.clone());
        }
    }
    if report.violations.is_empty() {
        crate::output::note(format!(
            "note: the {last} steps of {shown} replayed, and no property broke"
        ));
        Ok(Outcome::Ok)
    } else {
        Ok(Outcome::Violation)
    }
}

/// The scenario file at `path`; when no such file exists and `path` is a bare name of a
/// built-in example (`distsync examples`, with or without `.toml`), that example, said on
/// stderr. A file of that name always wins over the example.
fn load_file_or_example(path: &std::path::Path) -> Result<(Scenario, String), InputError> {
    let origin = path.display().to_string();
    if !path.exists() && path.components().count() == 1 {
        let wanted = origin.strip_suffix(".toml").unwrap_or(&origin);
        if let Some((name, text)) = crate::scenario_cmd::EXAMPLES
            .iter()
            .find(|(name, _)| *name == wanted)
        {
            crate::output::note(format!(
                "note: no file `{origin}` here; running the built-in example `{name}` \
                 (`distsync examples {name}` prints it)"
            ));
            return Ok((Scenario::from_toml(text, name)?, name.to_string()));
        }
    }
    Ok((Scenario::load(path)?, origin))
}

/// The scenario with `PATH=VALUE` applied: the value is read as JSON (a number, `true`, an
/// array, a table) and otherwise taken as a string (`5ms`, `poisson`).
pub fn set_field(scenario: &Scenario, assignment: &str) -> Result<Scenario, InputError> {
    let Some((path, text)) = assignment.split_once('=') else {
        return Err(InputError(format!(
            "--set: expected PATH=VALUE, like network.loss=0.1 or workload.cs=5ms; got `{assignment}`"
        )));
    };
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(InputError(format!(
            "--set `{assignment}`: the path must be field names joined by dots, like network.loss"
        )));
    }
    let value =
        serde_json::from_str(text.trim()).unwrap_or_else(|_| serde_json::Value::from(text.trim()));
    distsync_sim::sweep::with_param(scenario, path, &value)
        .map_err(|e| InputError(format!("--set `{assignment}`: {e}")))
}

/// The flags given that `algorithm` (`entry`) does not read, each with who reads it.
fn foreign_flags(args: &SimulateArgs, entry: &Entry) -> Option<String> {
    let name = args.algorithm.as_str();
    let election = distsync_sim::takes(entry, "event.elect");
    let mutex = "mutual-exclusion algorithms";
    let checks = [
        ("--load", args.load.is_some(), !election, mutex),
        ("--requests", args.requests.is_some(), !election, mutex),
        ("--cs", args.cs.is_some(), !election, mutex),
        ("--coordinator", args.coordinator.is_some(), !election && distsync_sim::reads(entry, "coordinator"), "central (an election run's coordinator is the highest id, which crashes at --crash-at)"),
        ("--holder", args.holder.is_some(), distsync_sim::reads(entry, "holder"), "the token algorithms (token-ring, ricart-agrawala-token, suzuki-kasami, raymond)"),
        ("--crash-at", args.crash_at.is_some(), election, "election runs"),
    ];
    checks
        .into_iter()
        .find(|(_, given, applies, _)| *given && !*applies)
        .map(|(flag, _, _, owner)| {
            format!(
                "{flag}: this flag applies to {owner}, and `{name}` does not read it; remove it"
            )
        })
}

/// A run from flags: of mutual exclusion (a workload) for an algorithm whose scenarios take
/// one, of an election (a crash and the election after it) for one whose scenarios take
/// `elect` events; any other algorithm is pointed to a scenario file of its family.
pub fn simulate(args: SimulateArgs) -> Result<Outcome, InputError> {
    let entry = distsync_algorithms::registry::lookup(&args.algorithm);
    let election = entry.is_some_and(|e| distsync_sim::takes(e, "event.elect"));
    // An unknown name goes on as mutual exclusion, so that the run reports it with a
    // suggestion.
    let mutex = entry.is_none_or(|e| distsync_sim::takes(e, "workload"));
    if let Some(entry) = entry.filter(|_| mutex || election) {
        if let Some(message) = foreign_flags(&args, entry) {
            return Err(InputError(message));
        }
    }
    match entry {
        _ if mutex => simulate_mutex(args),
        _ if election => simulate_election(args),
        // Neither: a registered algorithm of another family.
        entry => Err(InputError(format!(
            "--algo: `simulate` builds mutual-exclusion and election runs; `{}` is {} algorithm, so run a scenario file instead, like `distsync run {}`",
            args.algorithm,
            crate::output::a(entry.map_or("", |e| e.family.name())),
            entry.map_or("", distsync_sim::example_file)
        ))),
    }
}

/// An election run from flags: heartbeats watch the coordinator (the highest id), which crashes
/// at `--crash-at`; the processes notice by timeout and elect a new one.
fn simulate_election(args: SimulateArgs) -> Result<Outcome, InputError> {
    if args.nodes < 2 {
        return Err(InputError(format!(
            "--nodes: an election run crashes the coordinator, so it needs at least 2 nodes, got {}",
            args.nodes
        )));
    }
    let highest = args.nodes - 1;
    let crash_at = args.crash_at.unwrap_or(Duration::from_millis(50));
    let scenario = Scenario {
        algorithm: args.algorithm,
        nodes: Some(args.nodes),
        seed: args.seed,
        network: NetworkSpec {
            delay: args.delay,
            fifo: !args.no_fifo,
            loss: args.loss,
            duplicate: args.duplicate,
            ..NetworkSpec::default()
        },
        until: Some(args.until.unwrap_or(crash_at + Duration::from_secs(1))),
        election: ElectionSpec {
            detect: Some(Detect::Timeout),
            ..ElectionSpec::default()
        },
        events: vec![EventSpec {
            at: crash_at,
            crash: Some(NodeId(highest)),
            ..EventSpec::default()
        }],
        ..Scenario::default()
    };
    execute(
        &scenario,
        "command line",
        None,
        args.trace.as_deref(),
        None,
        args.json,
        None,
    )
}

fn simulate_mutex(args: SimulateArgs) -> Result<Outcome, InputError> {
    let (kind, rate) = match args.load.unwrap_or(Load::Heavy) {
        Load::Light => (WorkloadKind::Light, None),
        Load::Heavy => (WorkloadKind::Saturated, None),
        Load::Poisson(r) => (WorkloadKind::Poisson, Some(r)),
    };
    let scenario = Scenario {
        algorithm: args.algorithm,
        nodes: Some(args.nodes),
        seed: args.seed,
        until: Some(args.until.unwrap_or(Duration::from_secs(60))),
        mutex: MutexSpec {
            coordinator: args.coordinator.map(NodeId),
            holder: args.holder.map(NodeId),
            ..MutexSpec::default()
        },
        network: NetworkSpec {
            delay: args.delay,
            fifo: !args.no_fifo,
            loss: args.loss,
            duplicate: args.duplicate,
            ..NetworkSpec::default()
        },
        workload: Some(WorkloadSpec {
            kind,
            rate,
            cs: args.cs.unwrap_or(Duration::from_millis(10)),
            requests: Some(args.requests.unwrap_or(20)),
            gap: None,
        }),
        ..Scenario::default()
    };
    execute(
        &scenario,
        "command line",
        None,
        args.trace.as_deref(),
        None,
        args.json,
        None,
    )
}

fn execute(
    scenario: &Scenario,
    origin: &str,
    seed: Option<u64>,
    trace: Option<&Path>,
    svg: Option<&Path>,
    json: bool,
    command: Option<&str>,
) -> Result<Outcome, InputError> {
    // A trace into a regular file (or a new one) goes to a temporary file beside it first, so
    // that a failed run never clobbers an existing trace; anything else (a device, a pipe) is
    // written in place, and never replaced.
    // Where the drawing goes is checked before the run, not after all its work.
    if let Some(out) = svg {
        let rerun = command.map_or_else(|| "distsync simulate ...".to_string(), str::to_string);
        trace_cmd::check_svg_out(out, trace, &rerun)?;
    }
    let sink = trace.map(TraceSink::open).transpose()?;
    let writer: Option<Box<dyn std::io::Write>> = match &sink {
        Some(sink) => {
            Some(Box::new(sink.file.try_clone().map_err(|e| {
                format!("cannot write the trace {}: {e}", sink.shown)
            })?))
        }
        None => None,
    };
    // For --svg, the trace is also kept in memory and drawn after the run.
    let captured = svg.map(|_| trace_cmd::Captured::default());
    let writer: Option<Box<dyn std::io::Write>> = match (writer, &captured) {
        (Some(file), Some(copy)) => Some(Box::new(trace_cmd::Tee(file, copy.clone()))),
        (None, Some(copy)) => Some(Box::new(copy.clone())),
        (writer, None) => writer,
    };
    let bar = Progress::new(
        json,
        1000,
        "{spinner} simulating {bar:40} {percent}% of simulated time ({msg}), {elapsed} elapsed, ETA {eta}",
    );
    // The engine reports every 65,536 events: enough to show the events and their rate.
    let started = std::time::Instant::now();
    let mut calls = 0u64;
    let progress: Option<Box<dyn FnMut(u64, u64)>> = bar.bar().cloned().map(|bar| {
        Box::new(move |now: u64, until: u64| {
            calls += 1;
            let events = calls * 65_536;
            let rate = events as f64 / started.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!(
                "{} simulated, {events} events, {:.0}k events/s",
                distsync_core::format_duration(Duration::from_nanos(now)),
                rate / 1000.0
            ));
            bar.set_position((now as f64 / until.max(1) as f64 * 1000.0) as u64)
        }) as Box<dyn FnMut(u64, u64)>
    });
    let result = run(
        scenario,
        RunOptions {
            seed,
            trace: writer,
            origin: origin.to_string(),
            progress,
        },
    );
    drop(bar);
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            if let Some(sink) = sink {
                sink.abandon();
            }
            return Err(match e {
                distsync_sim::SimError::Trace(io) => InputError(format!(
                    "cannot write the trace {}: {io}",
                    trace.map_or(String::new(), |t| t.display().to_string())
                )),
                other => other.into(),
            });
        }
    };
    if let Some(sink) = sink {
        sink.commit()?;
    }
    // A trace too large to keep for a drawing: the run's report first, then the refusal.
    let mut too_large = None;
    if let (Some(out), Some(copy)) = (svg, &captured) {
        let rerun = command.map_or_else(|| "distsync simulate ...".to_string(), str::to_string);
        match trace_cmd::svg_of_run(copy, origin, out, trace, &rerun) {
            Err(e) if copy.over() => too_large = Some(e),
            drawn => drawn?,
        }
    }
    print_report(&report, json)?;
    if let Some(e) = too_large {
        return Err(e);
    }
    if report.violations.is_empty() {
        Ok(Outcome::Ok)
    } else if stopped_short(&report) {
        // Not a verdict on the algorithm: the run did not end by itself within the caps or the
        // horizon.
        match report
            .violations
            .iter()
            .find(|v| v.property == distsync_sim::guard::CAP_STOP)
        {
            Some(v) => eprintln!(
                "the run was stopped by the runaway guard (`[limits]`), not by a failure of the \
                 algorithm: {}",
                v.detail
            ),
            None => eprintln!(
                "the run reached its horizon (`until`) with work pending, not a failure of the \
                 algorithm: raise `until` (or `--until`) to let it finish"
            ),
        }
        Ok(Outcome::Code(STOPPED_SHORT))
    } else {
        let again = match command {
            Some(command) => format!("{command} --seed {}", report.seed),
            None => format!("the same flags with --seed {}", report.seed),
        };
        let n = report.violations.len();
        let noun = if n == 1 { "violation" } else { "violations" };
        crate::output::note(format!("{n} {noun} found; reproduce with: {again}"));
        Ok(Outcome::Violation)
    }
}

/// The exit code of a run stopped by the runaway guard's `max_pending` or `max_events`, or by
/// its horizon (`until`) with work pending, with nothing else found: neither a pass (0) nor a
/// violation (1).
pub const STOPPED_SHORT: u8 = 3;

/// Whether the run was cut short (by the guard's caps or its horizon) and its findings are only
/// what such a cut fails by itself ([`output::not_judged`]).
/// A run's warnings on standard error, then its report on standard output: the JSON report
/// (`--json`) or the summary.
fn print_report(report: &distsync_sim::Report, json: bool) -> Result<(), InputError> {
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
    let text = if json {
        serde_json::to_string_pretty(report)? + "\n"
    } else {
        output::summary(report)
    };
    output::write_stdout(&text)?;
    Ok(())
}

fn stopped_short(report: &distsync_sim::Report) -> bool {
    !report.violations.is_empty()
        && report
            .violations
            .iter()
            .all(|v| output::not_judged(report, v))
}

/// Where a trace is written: a regular file by way of a staged copy renamed over it at the end,
/// anything else (`/dev/full`, a pipe) in place.
struct TraceSink {
    /// The path as the user gave it, for messages.
    shown: String,
    /// The open file the trace goes to.
    file: std::fs::File,
    /// For a regular file: the staged copy and the file it replaces (a symbolic link's target,
    /// so that the link stays a link).
    staged: Option<(PathBuf, PathBuf)>,
}

impl TraceSink {
    fn open(path: &Path) -> Result<TraceSink, InputError> {
        let shown = path.display().to_string();
        let fail = |e: std::io::Error| InputError(format!("cannot write the trace {shown}: {e}"));
        // `metadata` follows symbolic links: what matters is what the path leads to.
        match std::fs::metadata(path) {
            Ok(meta) if !meta.is_file() => {
                if meta.is_dir() {
                    return Err(InputError(format!(
                        "cannot write the trace {shown}: it is a directory"
                    )));
                }
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(fail)?;
                Ok(TraceSink {
                    shown,
                    file,
                    staged: None,
                })
            }
            found => {
                let target = match found {
                    Ok(_) => std::fs::canonicalize(path).map_err(fail)?,
                    Err(_) => path.to_path_buf(),
                };
                let mut name = target.file_name().unwrap_or_default().to_os_string();
                name.push(format!(".partial-{}", std::process::id()));
                let staged = target.with_file_name(name);
                // Removed if a signal ends the run (and by `abandon` or the drop if it fails).
                crate::interrupt::remove_on_signal(&staged);
                let file = std::fs::File::create(&staged).map_err(fail)?;
                Ok(TraceSink {
                    shown,
                    file,
                    staged: Some((staged, target)),
                })
            }
        }
    }

    /// The run failed: the staged copy goes, the file it would replace stays as it was.
    fn abandon(self) {
        // The drop removes it.
    }

    /// The run succeeded: everything written reaches the file.
    fn commit(mut self) -> Result<(), InputError> {
        let shown = std::mem::take(&mut self.shown);
        let fail = |e: std::io::Error| InputError(format!("cannot write the trace {shown}: {e}"));
        match self.staged.take() {
            Some((staged, target)) => {
                let renamed = std::fs::rename(&staged, target);
                if renamed.is_err() {
                    let _ = std::fs::remove_file(&staged);
                }
                crate::interrupt::keep(&staged);
                renamed.map_err(fail)
            }
            None => Ok(()),
        }
    }
}

impl Drop for TraceSink {
    /// Unless committed, the staged copy goes: a run that fails, returns early or panics leaves
    /// no `FILE.partial-PID` behind.
    fn drop(&mut self) {
        if let Some((staged, _)) = self.staged.take() {
            let _ = std::fs::remove_file(&staged);
            crate::interrupt::keep(&staged);
        }
    }
}
