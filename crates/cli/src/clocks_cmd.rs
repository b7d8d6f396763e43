//! `distsync clocks TRACE --a SEQ --b SEQ`: does event a happen before event b, after it, or
//! concurrently? Answered from the vector timestamps the trace carries; the Lamport timestamps
//! are shown beside them (a -> b implies L(a) < L(b), not the converse).

use crate::{InputError, Outcome};
use distsync_core::Causality;
use distsync_sim::causality::{Event, Trace};
use std::path::PathBuf;

/// Arguments of `distsync clocks`.
#[derive(clap::Args)]
pub struct ClocksArgs {
    /// The trace file (JSON lines, as written by `distsync run --trace`).
    trace: PathBuf,
    /// The first event's id (its `seq` in the trace).
    #[arg(long = "a", value_name = "SEQ", value_parser = parse_seq, allow_hyphen_values = true)]
    a: u64,
    /// The second event's id.
    #[arg(long = "b", value_name = "SEQ", value_parser = parse_seq, allow_hyphen_values = true)]
    b: u64,
    /// Print the answer as one JSON object.
    #[arg(long)]
    json: bool,
}

/// An event id on the command line; a negative one is refused in words (clap would take `-1`
/// for a flag and say "unexpected argument").
fn parse_seq(s: &str) -> Result<u64, String> {
    s.trim().parse::<u64>().map_err(|_| {
        format!(
            "expected an event id, the `seq` of a trace line (0 or more, like 12); got {}",
            s.trim()
        )
    })
}

fn describe(e: &Event) -> String {
    let node = e.node.map(|n| format!(" at node {n}")).unwrap_or_default();
    let vector: Vec<String> = e
        .vector
        .as_ref()
        .map(|v| v.entries().iter().map(u64::to_string).collect())
        .unwrap_or_default();
    format!(
        "event {}: {}{node}, lamport {}, vector [{}]",
        e.seq,
        e.event,
        e.lamport.unwrap_or_default(),
        vector.join(", ")
    )
}

/// Runs `distsync clocks`.
pub fn clocks(args: ClocksArgs) -> Result<Outcome, InputError> {
    let trace = Trace::load(&args.trace)?;
    let r = trace.relation(args.a, args.b)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(Outcome::Ok);
    }
    println!("{}", describe(&r.a));
    println!("{}", describe(&r.b));
    let (la, lb) = (
        r.a.lamport.unwrap_or_default(),
        r.b.lamport.unwrap_or_default(),
    );
    let (a, b) = (r.a.seq, r.b.seq);
    let answer = match r.causality {
        Causality::Before => {
            format!("event {a} happened before event {b} (its vector is below); Lamport {la} < {lb}, as it must be")
        }
        Causality::After => {
            format!("event {b} happened before event {a} (its vector is below); Lamport {lb} < {la}, as it must be")
        }
        Causality::Equal => format!("events {a} and {b} are the same event"),
        Causality::Concurrent => {
            let lamport = match la.cmp(&lb) {
                std::cmp::Ordering::Less => format!(
                    "Lamport {la} < {lb} all the same: Lamport order does not imply happens-before"
                ),
                std::cmp::Ordering::Greater => format!(
                    "Lamport {lb} < {la} all the same: Lamport order does not imply happens-before"
                ),
                std::cmp::Ordering::Equal => format!("both have Lamport time {la}"),
            };
            format!(
                "events {a} and {b} are concurrent: neither vector is below the other; {lamport}"
            )
        }
    };
    println!("{answer}");
    Ok(Outcome::Ok)
}
