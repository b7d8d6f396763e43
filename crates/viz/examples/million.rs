//! Times each renderer on the benchmark's synthetic trace of one million events, reporting both
//! wall-clock time and the process's CPU time (user + system, from /proc/self/stat on Linux).
//! CPU time is the figure to compare on a busy machine: it does not count time spent waiting
//! for a core. The best of three runs is reported, with the size of each output.
//!
//! `cargo run --release -p distsync-viz --example million [EVENTS]`

use distsync_viz::svg::{render, SvgOptions};
use distsync_viz::trace::Trace;
use distsync_viz::{perfetto, shiviz};
use std::time::Instant;

#[path = "../benches/synthetic/mod.rs"]
mod synthetic;

/// CPU seconds used by this process so far, if the system says.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // Clock ticks are 1/100 s on Linux.
    Some((utime + stime) / 100.0)
}

fn measure<T>(name: &str, size: impl Fn(&T) -> usize, f: impl Fn() -> T) {
    let (mut best_wall, mut best_cpu) = (f64::INFINITY, f64::INFINITY);
    let mut bytes = 0;
    for _ in 0..3 {
        let (w0, c0) = (Instant::now(), cpu_seconds());
        let out = f();
        let wall = w0.elapsed().as_secs_f64();
        if let (Some(a), Some(b)) = (c0, cpu_seconds()) {
            best_cpu = best_cpu.min(b - a);
        }
        best_wall = best_wall.min(wall);
        bytes = size(&out);
        drop(out);
    }
    let cpu = if best_cpu.is_finite() {
        format!("{best_cpu:.2} s CPU")
    } else {
        "CPU time unknown".to_string()
    };
    println!(
        "{name:<9} {best_wall:>6.2} s wall  {cpu:>12}  output {:>5} MB",
        bytes / 1_000_000
    );
}

fn main() {
    let events: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let text = synthetic::synthetic(events);
    let trace = Trace::parse(&text, "synthetic").expect("the synthetic trace parses");
    println!(
        "synthetic trace: {} events, {} processes, {} MB of JSON lines (best of 3 runs)",
        trace.events.len(),
        synthetic::NODES,
        text.len() / 1_000_000
    );
    measure(
        "parse",
        |t: &Trace| t.events.len(),
        || Trace::parse(&text, "synthetic").unwrap(),
    );
    measure("svg", String::len, || {
        render(&trace, &SvgOptions::default()).unwrap()
    });
    measure("perfetto", String::len, || perfetto::render(&trace));
    measure("shiviz", String::len, || shiviz::render(&trace));
}
