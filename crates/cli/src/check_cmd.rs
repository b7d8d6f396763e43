//! `distsync check`: explore every interleaving of a small mutual-exclusion configuration, and
//! prove mutual exclusion, absence of deadlock and completion there, or print a shortest trace
//! that breaks one of them.

use crate::progress::Progress;
use crate::{InputError, Outcome};
use distsync_check::{check_named, Bounds, CheckError, Config, NamedOutcome, Property};
use distsync_core::{NodeId, Params, QuorumKind};
use serde_json::json;

/// Arguments of `distsync check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// The algorithm (a mutual-exclusion name from `distsync list`).
    #[arg(long)]
    algo: String,
    /// Number of processes (ids 0..N-1); exhaustive exploration is for small N (2 to 4).
    #[arg(long)]
    nodes: usize,
    /// How many times each competing process requests the critical section, one at a time.
    #[arg(long, default_value_t = 1)]
    requests: u32,
    /// Let messages on a link overtake each other (the default is FIFO links).
    #[arg(long)]
    no_fifo: bool,
    /// Stop after this many distinct states (the result is then no proof).
    #[arg(long, default_value_t = Bounds::default().max_states)]
    max_states: usize,
    /// Do not explore beyond this many transitions from the start (the result is then no proof).
    #[arg(long, default_value_t = Bounds::default().max_depth)]
    max_depth: usize,
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

const PROPERTIES: [Property; 5] = [
    Property::MutualExclusion,
    Property::Deadlock,
    Property::Completion,
    Property::Progress,
    Property::OutputContract,
];

fn input_error(e: CheckError) -> InputError {
    let flag = match e.field.as_str() {
        "algo" | "nodes" | "requests" | "max-states" | "coordinator" | "holder" | "quorums" => {
            format!("--{}", e.field)
        }
        other => other.to_string(),
    };
    InputError(format!("{flag}: {}", e.message))
}

/// Runs `distsync check`.
pub fn check(args: CheckArgs) -> Result<Outcome, InputError> {
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
        nodes: args.nodes,
        requests: args.requests,
        fifo: !args.no_fifo,
        params,
        bounds: Bounds {
            max_states: args.max_states,
            max_depth: args.max_depth,
        },
    };
    let progress = Progress::new(
        args.json,
        args.max_states as u64,
        "{spinner} checking {bar:40} {pos}/{len} states, {msg} [{elapsed}]",
    );
    let result = check_named(&args.algo, &config, &mut |p| {
        if let Some(bar) = progress.bar() {
            bar.set_position(p.states as u64);
            bar.set_message(format!("depth {}, frontier {}", p.depth, p.frontier));
        }
    });
    drop(progress);
    let outcome = result.map_err(input_error)?;
    if args.json {
        println!("{}", to_json(&outcome, &config));
    } else {
        print_text(&outcome, &config);
    }
    Ok(if outcome.violation.is_some() {
        Outcome::Violation
    } else {
        Outcome::Ok
    })
}

fn result_name(o: &NamedOutcome) -> &'static str {
    match (&o.violation, o.proved) {
        (Some(_), _) => "violation",
        (None, true) => "proved",
        (None, false) => "no-violation-within-bound",
    }
}

fn to_json(o: &NamedOutcome, c: &Config) -> serde_json::Value {
    let s = &o.stats;
    json!({
        "algorithm": o.algorithm,
        "nodes": c.nodes,
        "requests": c.requests,
        "fifo": c.fifo,
        "result": result_name(o),
        "properties": PROPERTIES.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "states": s.states,
        "transitions": s.transitions,
        "depth": s.depth,
        "terminal_states": s.terminal_states,
        "bound_hit": s.bound_hit,
        "max_states": c.bounds.max_states,
        "max_depth": c.bounds.max_depth,
        "elapsed_ms": s.elapsed.as_secs_f64() * 1e3,
        "violation": o.violation.as_ref().map(|(property, detail, steps, finals)| json!({
            "property": property.name(),
            "detail": detail,
            "steps": steps.iter().map(|st| json!({
                "step": st.number,
                "transition": st.transition,
                "sent": st.sent,
                "outputs": st.outputs,
            })).collect::<Vec<_>>(),
            "final_states": finals,
        })),
    })
}

fn print_text(o: &NamedOutcome, c: &Config) {
    let s = &o.stats;
    println!(
        "checking {}: {} nodes, {} request{} each, {} links",
        o.algorithm,
        c.nodes,
        c.requests,
        if c.requests == 1 { "" } else { "s" },
        if c.fifo { "FIFO" } else { "non-FIFO" }
    );
    if o.needs_fifo && !c.fifo {
        println!(
            "note: {} assumes FIFO links; they are off here",
            o.algorithm
        );
    }
    let figures = format!(
        "{} states, {} transitions, depth {}, {} terminal, {:.2?}",
        s.states, s.transitions, s.depth, s.terminal_states, s.elapsed
    );
    match &o.violation {
        Some((property, detail, steps, finals)) => {
            println!("VIOLATION of {property}: {detail}");
            println!(
                "shortest trace ({} step{}):",
                steps.len(),
                if steps.len() == 1 { "" } else { "s" }
            );
            for step in steps {
                println!("{step}");
            }
            println!("process states at the end:");
            for (i, f) in finals.iter().enumerate() {
                println!("  {i}: {f}");
            }
            println!("({figures})");
        }
        None if o.proved => {
            println!(
                "PROVED: mutual exclusion, no deadlock, completion, progress and the output \
                 contract hold in every reachable state ({figures})"
            );
            if s.terminal_states == 0 {
                println!(
                    "note: no run terminates (messages circulate for ever), so deadlock and \
                     completion hold vacuously; progress (every request can still be served \
                     from every state) is what speaks for liveness here"
                );
            }
        }
        None => println!(
            "NO VIOLATION within the bound (max-states {}, max-depth {}); this is not a proof, \
             and progress was not checked ({figures})",
            c.bounds.max_states, c.bounds.max_depth
        ),
    }
}
