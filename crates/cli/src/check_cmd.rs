//! `distsync check`: explore every interleaving (and, within bounds, every fault) of a small
//! configuration of any family, and prove its properties there or print a shortest trace that
//! breaks one of them.

use crate::progress::Progress;
use crate::{InputError, Outcome};
use distsync_check::{
    check_named, write_trace, Bound, CheckError, Config, FaultBounds, NamedOutcome,
};
use distsync_core::multicast::Order;
use distsync_core::{NodeId, Params, QuorumKind};
use distsync_web::check_config::{check_setup, CheckTable};
use serde_json::json;
use std::path::PathBuf;

/// Exit code of a result that is no proof: a bound stopped the exploration first.
pub const EXIT_BOUNDED: u8 = 3;
/// Exit code of a bounded result under `--require-proof`.
pub const EXIT_NO_PROOF: u8 = 4;

/// Arguments of `distsync check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// A scenario file: its algorithm, ids, parameters, links and `elect` events, with bounds,
    /// workload and faults from its `[check]` table (flags given here override them).
    scenario: Option<PathBuf>,
    /// The algorithm (a name from `distsync list`), when no scenario file is given.
    #[arg(long)]
    algo: Option<String>,
    /// Number of processes (ids 0..N-1), 1 to 8; exhaustive exploration is for 2 to 4.
    #[arg(long)]
    nodes: Option<usize>,
    /// Mutual exclusion: requests per competitor; multicast: multicasts per process; snapshot:
    /// transfers per process (default 1).
    #[arg(long)]
    requests: Option<u32>,
    /// Let messages on a link overtake each other (the default is FIFO links).
    #[arg(long)]
    no_fifo: bool,
    /// Stop after this many distinct states (the result is then no proof).
    #[arg(long)]
    max_states: Option<usize>,
    /// Do not explore beyond this many transitions from the start (the result is then no proof).
    #[arg(long)]
    max_depth: Option<usize>,
    /// Stop when the checker's memory exceeds this (e.g. 2GiB, 500MB; default half the
    /// machine's memory); the result is then no proof.
    #[arg(long)]
    max_memory: Option<String>,
    /// A result that is no proof (a bound was hit) fails with exit code 4.
    #[arg(long)]
    require_proof: bool,
    /// Up to K crashes, of any process at any moment.
    #[arg(long, value_name = "K")]
    crash: Option<u8>,
    /// Up to K recoveries of crashed processes (at most --crash).
    #[arg(long, value_name = "K")]
    recover: Option<u8>,
    /// Up to K messages lost.
    #[arg(long, value_name = "K")]
    loss: Option<u8>,
    /// Up to K messages duplicated.
    #[arg(long, value_name = "K")]
    duplicate: Option<u8>,
    /// One partition in two groups (any split) at any moment, and its heal.
    #[arg(long)]
    partition: bool,
    /// Any pending timer may fire at any moment (the default: only when no message is in
    /// flight, earliest deadline first).
    #[arg(long)]
    untimed: bool,
    /// Elections: the processes given the Start input (default: the lowest id).
    #[arg(long, value_delimiter = ',')]
    elect: Vec<u32>,
    /// Multicast: the orders to check (default: those the algorithm promises).
    #[arg(long, value_delimiter = ',', value_parser = ["fifo", "causal", "total"])]
    order: Vec<String>,
    /// Also check liveness under weak fairness: a fair cycle in which a request is never
    /// served (an election never ends...) is printed as a prefix and a loop.
    #[arg(long)]
    liveness: bool,
    /// Symmetry reduction: remember each state once up to a renaming of interchangeable
    /// processes (central's clients, causal-broadcast's processes); refused, with the reason,
    /// for algorithms whose rules compare ids.
    #[arg(long)]
    symmetry: bool,
    /// Worker threads (default: every core); the result is the same for any number.
    #[arg(long)]
    threads: Option<usize>,
    /// Write the shortest counterexample to FILE in the trace format (JSON Lines), for
    /// `distsync trace render`, `distsync clocks` and `distsync run SCENARIO --replay FILE`.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// The central algorithm's coordinator (default: the highest id).
    #[arg(long)]
    coordinator: Option<u32>,
    /// The process holding the token at start, for token algorithms (default: 0).
    #[arg(long)]
    holder: Option<u32>,
    /// Maekawa quorums: plane or grid (default: plane when N allows it).
    #[arg(long, value_parser = ["plane", "grid"])]
    quorums: Option<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn input_error(e: CheckError) -> InputError {
    let flag = match e.field.as_str() {
        "algo" | "nodes" | "requests" | "max-states" | "max-memory" | "coordinator" | "holder"
        | "quorums" | "crash" | "recover" | "partition" | "elect" | "threads" | "symmetry" => {
            format!("--{}", e.field)
        }
        other => format!("`{other}`"),
    };
    InputError(format!("{flag}: {}", e.message))
}

/// "2GiB", "500MB", "1g", "1048576": a size in bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    distsync_web::check_config::parse_size(text)
}

/// The configuration and algorithm of a scenario file with its `[check]` table: the page's
/// "prove or refute" builds it with the same function, so both answer the same.
fn from_scenario(path: &PathBuf) -> Result<(String, Config, CheckTable, Vec<String>), InputError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError(format!("{origin}: cannot read it: {e}")))?;
    let scenario = distsync_sim::scenario::Scenario::from_toml(&text, &origin)
        .map_err(|e| InputError(e.to_string()))?;
    let setup = check_setup(&scenario, &origin).map_err(|e| InputError(e.message))?;
    Ok((setup.algorithm, setup.config, setup.table, setup.notes))
}

/// Runs `distsync check`.
pub fn check(args: CheckArgs) -> Result<Outcome, InputError> {
    if let Some(path) = &args.trace {
        crate::output::check_output_path("--trace", path)?;
    }
    let (algo, mut config, table) = match (&args.scenario, &args.algo) {
        (Some(path), None) => {
            let (algo, config, table, notes) = from_scenario(path)?;
            for note in notes {
                crate::output::note(format!("note: {note}"));
            }
            if args.nodes.is_some() {
                return Err(InputError(
                    "--nodes: the scenario file gives the processes".to_string(),
                ));
            }
            (algo, config, table)
        }
        (None, Some(algo)) => {
            let nodes = args.nodes.ok_or_else(|| {
                InputError("--nodes: how many processes to explore (2 to 4 is usual)".into())
            })?;
            let params = Params {
                coordinator: args.coordinator.map(NodeId),
                holder: args.holder.map(NodeId),
                quorums: args.quorums.as_deref().map(|q| match q {
                    "grid" => QuorumKind::Grid,
                    _ => QuorumKind::Plane,
                }),
                ..Params::default()
            };
            let config = Config {
                nodes,
                params,
                fifo: true,
                threads: 0,
                ..Config::default()
            };
            (algo.clone(), config, CheckTable::default())
        }
        (Some(_), Some(_)) => {
            return Err(InputError(
                "--algo: give either a scenario file or --algo, not both".into(),
            ))
        }
        (None, None) => {
            return Err(InputError(
                "--algo: which algorithm to check (or a scenario file)".into(),
            ))
        }
    };
    if args.scenario.is_some() {
        for (given, flag) in [
            (args.coordinator.is_some(), "--coordinator"),
            (args.holder.is_some(), "--holder"),
            (args.quorums.is_some(), "--quorums"),
        ] {
            if given {
                return Err(InputError(format!(
                    "{flag}: the scenario file gives the algorithm's parameters"
                )));
            }
        }
    }
    if args.no_fifo {
        config.fifo = false;
    }
    // The flags override what the scenario file (and its `[check]` table) gave.
    config.requests = args.requests.unwrap_or(config.requests);
    if let Some(text) = &args.max_memory {
        config.bounds.max_memory =
            Some(parse_size(text).map_err(|e| InputError(format!("--max-memory: {e}")))?);
    }
    config.bounds.max_states = args.max_states.unwrap_or(config.bounds.max_states);
    config.bounds.max_depth = args.max_depth.unwrap_or(config.bounds.max_depth);
    let f = config.faults;
    config.faults = FaultBounds {
        crash: args.crash.unwrap_or(f.crash),
        recover: args.recover.unwrap_or(f.recover),
        loss: args.loss.unwrap_or(f.loss),
        duplicate: args.duplicate.unwrap_or(f.duplicate),
        partition: args.partition || f.partition,
    };
    config.untimed = args.untimed || config.untimed;
    config.liveness = args.liveness || config.liveness;
    config.symmetry = args.symmetry || config.symmetry;
    if !args.elect.is_empty() {
        config.elect = args.elect.iter().map(|&i| NodeId(i)).collect();
    }
    if !args.order.is_empty() {
        config.orders = Some(
            args.order
                .iter()
                .map(|o| match o.as_str() {
                    "fifo" => Order::Fifo,
                    "causal" => Order::Causal,
                    _ => Order::Total,
                })
                .collect(),
        );
    }
    config.threads = args.threads.unwrap_or(config.threads);
    let require_proof = args.require_proof || table.require_proof.unwrap_or(false);
    check_family_flags(&algo, &args, &config)?;

    let progress = Progress::new(
        args.json,
        0,
        "{spinner} checking: {human_pos} states ({per_sec}), {msg} [{elapsed}]",
    );
    // Ctrl-C stops the exploration as a bound would: the outcome so far, then exit 130.
    crate::interrupt::catch_then(distsync_check::interrupt);
    let result = check_named(&algo, &config, &mut |p| {
        if let Some(bar) = progress.bar() {
            bar.set_position(p.states as u64);
            bar.set_message(format!(
                "depth {}, frontier {}, {} MB",
                p.depth,
                p.frontier,
                p.memory >> 20
            ));
        }
    });
    drop(progress);
    let outcome = result.map_err(input_error)?;
    if let Some(path) = &args.trace {
        if outcome.violation.is_some() {
            let mut file = std::fs::File::create(path).map_err(|e| {
                InputError(format!("--trace: cannot write {}: {e}", path.display()))
            })?;
            write_trace(&mut file, &outcome).map_err(|e| {
                InputError(format!("--trace: cannot write {}: {e}", path.display()))
            })?;
        } else {
            crate::output::note(format!(
                "note: no counterexample, so nothing was written to {}",
                path.display()
            ));
        }
    }
    if args.json {
        println!("{}", to_json(&outcome, &config));
    } else {
        print_text(&outcome, &config);
    }
    Ok(if outcome.violation.is_some() {
        Outcome::Violation
    } else if let Some(signal) = crate::interrupt::interrupted() {
        Outcome::Code(crate::interrupt::exit_code(signal))
    } else if outcome.proved {
        Outcome::Ok
    } else if require_proof {
        eprintln!(
            "error: --require-proof: {} stopped the exploration, so nothing is proved",
            outcome.stats.bound.map_or("a bound", Bound::flag)
        );
        Outcome::Code(EXIT_NO_PROOF)
    } else {
        Outcome::Code(EXIT_BOUNDED)
    })
}

/// Flags that do not apply to the algorithm's family are refused.
fn check_family_flags(algo: &str, args: &CheckArgs, config: &Config) -> Result<(), InputError> {
    let Some(entry) = distsync_algorithms::registry::lookup(algo) else {
        return Ok(()); // check_named names the unknown algorithm
    };
    let refuse = |flag: &str, wants: &str| {
        Err(InputError(format!(
            "{flag}: applies to {wants}; {algo} is in the {} family",
            entry.family.name()
        )))
    };
    let election = distsync_sim::takes(entry, "event.elect");
    if !args.elect.is_empty() && !election {
        return refuse("--elect", "elections");
    }
    if !args.order.is_empty() && !distsync_sim::takes(entry, "multicast") {
        return refuse("--order", "multicast");
    }
    if args.requests.is_some() && election {
        return refuse(
            "--requests",
            "mutual exclusion, multicast and snapshots (elections start with --elect)",
        );
    }
    if args.coordinator.is_some() && !distsync_sim::reads(entry, "coordinator") {
        return refuse("--coordinator", "central and the election algorithms");
    }
    if args.quorums.is_some() && !algo.starts_with("maekawa") {
        return refuse("--quorums", "maekawa and maekawa-basic");
    }
    let _ = config;
    Ok(())
}

fn result_name(o: &NamedOutcome) -> &'static str {
    match (&o.violation, o.proved) {
        (Some(_), _) => "violation",
        (None, true) => "proved",
        (None, false) => "no-violation-within-bound",
    }
}

fn faults_text(c: &Config) -> String {
    let f = &c.faults;
    let mut parts = Vec::new();
    for (k, name) in [
        (f.crash, "crash"),
        (f.recover, "recovery"),
        (f.loss, "loss"),
        (f.duplicate, "duplication"),
    ] {
        if k > 0 {
            parts.push(format!("up to {k} {name}{}", if k == 1 { "" } else { "s" }));
        }
    }
    if f.partition {
        parts.push("one partition and heal".into());
    }
    if parts.is_empty() {
        "no faults".into()
    } else {
        parts.join(", ")
    }
}

fn to_json(o: &NamedOutcome, c: &Config) -> serde_json::Value {
    let s = &o.stats;
    json!({
        "algorithm": o.algorithm,
        "family": o.family.name(),
        "nodes": c.nodes,
        "requests": c.requests,
        "fifo": c.fifo,
        "timers": if c.untimed { "untimed" } else { "deadline" },
        "liveness": c.liveness,
        "symmetry": c.symmetry,
        "faults": {
            "crash": c.faults.crash,
            "recover": c.faults.recover,
            "loss": c.faults.loss,
            "duplicate": c.faults.duplicate,
            "partition": c.faults.partition,
        },
        "result": result_name(o),
        "states": s.states,
        "transitions": s.transitions,
        "depth": s.depth,
        "terminal_states": s.terminal_states,
        "bound_hit": s.bound_hit,
        "bound": s.bound,
        "max_states": c.bounds.max_states,
        "max_depth": c.bounds.max_depth,
        "threads": s.threads,
        "peak_memory_bytes": s.peak_memory,
        "elapsed_ms": s.elapsed.as_secs_f64() * 1e3,
        "violation": o.violation,
    })
}

fn print_text(o: &NamedOutcome, c: &Config) {
    let s = &o.stats;
    println!(
        "checking {}: {} nodes, {} links, {}, timers {}",
        o.algorithm,
        c.nodes,
        if c.fifo { "FIFO" } else { "non-FIFO" },
        faults_text(c),
        if c.untimed {
            "at any moment (untimed)"
        } else {
            "by deadline"
        }
    );
    if c.symmetry {
        println!(
            "symmetry reduction: states are counted up to a renaming of interchangeable processes"
        );
    }
    if o.needs_fifo && !c.fifo {
        println!(
            "note: {} assumes FIFO links; they are off here",
            o.algorithm
        );
    }
    let figures = format!(
        "{} states, {} transitions, depth {}, {} terminal, {:.2?}, {} thread{}, {} MB",
        s.states,
        s.transitions,
        s.depth,
        s.terminal_states,
        s.elapsed,
        s.threads,
        if s.threads == 1 { "" } else { "s" },
        s.peak_memory >> 20
    );
    match &o.violation {
        Some(v) => {
            println!("VIOLATION of {}: {}", v.property, v.detail);
            println!(
                "shortest trace ({} step{}):",
                v.steps.len(),
                if v.steps.len() == 1 { "" } else { "s" }
            );
            for (i, step) in v.steps.iter().enumerate() {
                if v.loop_start == Some(i) {
                    println!("  -- loop: from here the run repeats for ever --");
                }
                println!("{step}");
            }
            println!("process states at the end:");
            for (i, f) in v.final_states.iter().enumerate() {
                println!("  {i}: {f}");
            }
            println!("({figures})");
        }
        None if o.proved => {
            println!("PROVED: every property holds in every reachable state ({figures})");
            if s.terminal_states == 0 {
                println!(
                    "note: no run terminates (messages circulate for ever), so the properties \
                     of terminal states hold vacuously; progress (the goal stays reachable \
                     from every state) is what speaks for liveness here"
                );
            }
        }
        None => println!(
            "NO VIOLATION within the bound: {} stopped the exploration; this is not a proof, \
             and progress was not checked ({figures})",
            s.bound.map_or("a bound", Bound::flag)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_read_with_their_units() {
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("1048576"), Ok(1 << 20));
        assert!(parse_size("2 parsecs").unwrap_err().contains("parsecs"));
        assert!(parse_size("0").is_err());
    }
}
