//! The human summary of a report.

use distsync_core::format_duration;
use distsync_sim::{Report, Stats};
use std::fmt::Write;
use std::time::Duration;

fn dur(ns: f64) -> String {
    format_duration(Duration::from_nanos(ns.round() as u64))
}

fn stats(s: &Stats) -> String {
    if s.count == 0 {
        return "none measured".to_string();
    }
    format!(
        "mean {} (p50 {}, p99 {}, max {}; {} samples)",
        dur(s.mean),
        dur(s.p50 as f64),
        dur(s.p99 as f64),
        dur(s.max as f64),
        s.count
    )
}

/// `n` things, in the singular for one: `count(1, "node")` is "1 node", `count(3, "node")`
/// "3 nodes".
pub fn count(n: u64, thing: &str) -> String {
    if n == 1 {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// A whole number from the command line, with a clear message for a negative one or for text
/// (clap would otherwise take `-3` for a flag).
pub fn whole<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    let t = s.trim();
    if t.starts_with('-') && t[1..].chars().all(|c| c.is_ascii_digit() || c == '.') && t.len() > 1 {
        return Err(format!(
            "expected a whole number of 0 or more, got the negative number {t}"
        ));
    }
    t.parse::<T>()
        .map_err(|_| format!("expected a whole number of 0 or more, got `{t}`"))
}

/// A noun with its indefinite article: "an election", "a mutex".
pub fn a(noun: &str) -> String {
    let article = if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {noun}")
}

/// Set by `-q/--quiet`: no notes.
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `-q/--quiet` was given: [`note`] prints nothing, and no progress bar is drawn.
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `-q/--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// A note on standard error (what was written where, a hint, what a default chose), unless
/// `-q/--quiet`. Errors, warnings and why a verb exits non-zero are not notes: they always show.
pub fn note(text: impl std::fmt::Display) {
    if !quiet() {
        eprintln!("{text}");
    }
}

/// Whether `v` says the run was cut short rather than something about the algorithm: the
/// runaway guard's stop, an end-of-run check that such a stop fails by itself
/// (`guard::CUT_SHORT`: requests unserved, an election still running...), or requests left
/// unserved when the run reached its horizon (`until`). (An election that has not terminated at
/// the horizon is still judged: heartbeats keep every election run going to its horizon.)
pub fn not_judged(r: &Report, v: &distsync_sim::Violation) -> bool {
    use distsync_sim::guard::{CAP_STOP, CUT_SHORT};
    let capped = r.violations.iter().any(|v| v.property == CAP_STOP);
    v.property == CAP_STOP
        || (capped && CUT_SHORT.contains(&v.property.as_str()))
        || (r.ended_by == "horizon" && v.property == "starvation")
}

/// Writes `text` to standard output, flushed; a write error (a full disk, `> /dev/full`) is
/// an error with a message, not lost data. (A reader that closed the pipe ends the process
/// quietly by SIGPIPE before this returns.)
pub fn write_stdout(text: &str) -> Result<(), String> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .map_err(|e| format!("cannot write to standard output: {e}"))
}

/// Checks, before any work, that the file an output flag names can be made there: not a
/// directory, in a directory that exists. `flag` names it in the error (`--plot`), so a long
/// campaign or a large trace is not read for nothing.
pub fn check_output_path(flag: &str, path: &std::path::Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!(
            "{flag} {}: it is a directory; name the file to write",
            path.display()
        ));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !parent.is_dir() {
        return Err(format!(
            "{flag} {}: the directory {} does not exist",
            path.display(),
            parent.display()
        ));
    }
    Ok(())
}

/// A few lines a person reads after a run.
pub fn summary(r: &Report) -> String {
    let mut out = String::new();
    let name = r
        .name
        .as_deref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}{name}: {}, seed {}, ended ({}) at {} after {}",
        r.algorithm,
        count(r.nodes as u64, "node"),
        r.seed,
        r.ended_by,
        dur(r.end_time_ns as f64),
        count(r.events_processed, "event")
    );
    let kinds: Vec<String> = r
        .messages
        .by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let _ = writeln!(
        out,
        "messages:   {} sent ({}); {} delivered, {} dropped, {} duplicated; longest causal chain {}",
        r.messages.total,
        if kinds.is_empty() { "none".to_string() } else { kinds.join(", ") },
        r.messages.delivered,
        r.messages.dropped,
        r.messages.duplicated,
        r.longest_chain
    );
    if let Some(m) = &r.sections.mutex {
        let _ = writeln!(
            out,
            "entries:    {} ({:.2} messages per entry)",
            m.entries, m.messages_per_entry
        );
        let _ = writeln!(out, "sync delay: {}", stats(&m.sync_delay_ns));
        let _ = writeln!(out, "response:   {}", stats(&m.response_time_ns));
        let _ = writeln!(
            out,
            "throughput: {:.1} entries/s; unserved {}, abandoned {}, max bypass {}",
            m.throughput_per_s, m.unserved_requests, m.abandoned_requests, m.max_bypass
        );
    }
    if let Some(e) = &r.sections.election {
        let leader = e.leader.map_or("none".to_string(), |l| l.to_string());
        let live = e.known_by.len();
        let _ = writeln!(
            out,
            "leader:     {leader} ({} by the {}); {}, {} disturbed",
            if e.agreed { "agreed" } else { "NOT agreed" },
            if live == 1 {
                "1 live node".to_string()
            } else {
                format!("{live} live nodes")
            },
            count(e.elections, "election"),
            e.disturbed
        );
        let kinds: Vec<String> = e
            .messages
            .by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "election:   {} messages ({}); completed in {}; longest chain {}{}",
            e.messages.total,
            if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join(", ")
            },
            e.completion_time_ns
                .map_or("-".to_string(), |ns| dur(ns as f64)),
            e.longest_chain,
            e.rounds.map_or(String::new(), |r| format!("; {r} rounds"))
        );
    }
    if let Some(c) = &r.sections.clock {
        let worst = |v: Option<u64>| v.map_or("-".to_string(), |ns| dur(ns as f64));
        let _ = writeln!(
            out,
            "clocks:     skew {} and error {} at the end; worst after the first sync: skew {}, error {}",
            dur(c.max_skew_ns as f64),
            dur(c.max_error_ns as f64),
            worst(c.worst_skew_ns),
            worst(c.worst_error_ns)
        );
        let _ = writeln!(
            out,
            "sync:       {} rounds, {} adjustments, {} bounds checked (worst at {:.2} of its bound){}",
            c.rounds,
            c.adjustments,
            c.bound_checks,
            c.worst_bound_ratio,
            if c.no_majority > 0 { format!("; no majority {} times", c.no_majority) } else { String::new() }
        );
    }
    if let Some(m) = &r.sections.multicast {
        let _ = writeln!(
            out,
            "multicast:  {} multicasts, {} deliveries, {} undelivered, {:.2} messages per multicast; delivery delay {}",
            m.multicasts,
            m.deliveries,
            m.undelivered,
            m.messages_per_multicast,
            stats(&m.delivery_delay_ns)
        );
        let _ = writeln!(
            out,
            "order:      {} FIFO inversions, {} causal inversions, {} total-order disagreements",
            m.fifo_inversions, m.causal_inversions, m.order_disagreements
        );
    }
    if let Some(s) = &r.sections.snapshot {
        let _ = writeln!(
            out,
            "snapshots:  {} completed, {} consistent (money in the system {}); {} transfers, {} markers",
            s.completed, s.consistent, s.money, s.transfers, s.markers
        );
    }
    if let Some(l) = &r.link {
        let _ = writeln!(
            out,
            "link:       {} data frames ({} retransmissions), {} acks, {} duplicates discarded (reliable links; not in the counts above)",
            l.data_frames, l.retransmissions, l.acks, l.duplicates_discarded
        );
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning:    {w}");
    }
    // A stop by the runaway guard's caps or by the horizon is said as such, not as a property
    // of the algorithm, and so are the end-of-run checks that the stop alone fails (requests
    // unserved, an election cut short).
    use distsync_sim::guard::CAP_STOP;
    let (stops, violations): (Vec<_>, Vec<_>) = r.violations.iter().partition(|v| not_judged(r, v));
    if r.ended_by == "horizon" && !stops.is_empty() {
        let _ = writeln!(
            out,
            "stopped:    at its horizon (`until`) of {}, with work pending",
            dur(r.end_time_ns as f64)
        );
    }
    for v in &stops {
        if v.property == CAP_STOP {
            let _ = writeln!(
                out,
                "stopped:    by the runaway guard at {}: {}",
                dur(v.time_ns as f64),
                v.detail
            );
        } else {
            // Its detail may list every process: a line is enough here (`--json` has it all).
            let mut detail: String = v.detail.chars().take(160).collect();
            if detail.len() < v.detail.len() {
                detail.push_str("...");
            }
            let _ = writeln!(
                out,
                "            not judged, the run was stopped first: {}: {detail}",
                v.property
            );
        }
    }
    if violations.is_empty() {
        let _ = writeln!(out, "violations: none");
    } else {
        let _ = writeln!(out, "violations: {}", violations.len());
        for v in &violations {
            let _ = writeln!(
                out,
                "  {} at {}: {}",
                v.property,
                dur(v.time_ns as f64),
                v.detail
            );
        }
    }
    out
}
