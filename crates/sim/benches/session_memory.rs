//! What a stepping session holds per step, at 10,000, 100,000 and 1,000,000 steps of a
//! 5-process Ricart-Agrawala run (the page's heaviest common case: Run at full speed). Bytes are
//! counted by a counting allocator (live bytes after the steps, less those before the session),
//! not timed. Run with `cargo bench -p distsync-sim --bench session_memory`; docs/web.md has the
//! figures.

use distsync_sim::session::Session;
use distsync_sim::Scenario;

#[path = "../tests/support/counting.rs"]
mod counting;

fn main() {
    // `cargo test --benches` runs benches once as tests: keep that quick.
    let quick = std::env::args().any(|a| a == "--test");
    let scenario = Scenario::from_toml(
        r#"
        algorithm = "ricart-agrawala"
        nodes = 5
        until = "100000h"
        [network]
        delay = { uniform = ["500us", "1500us"] }
        [workload]
        kind = "saturated"
        cs = "1ms"
        requests = 100000000
        "#,
        "bench",
    )
    .expect("valid");
    let base = counting::live();
    let mut session = Session::new(&scenario, "bench").expect("valid");
    let sizes: &[usize] = if quick {
        &[1_000]
    } else {
        &[10_000, 100_000, 1_000_000]
    };
    println!("session n=5 ricart-agrawala, saturated: bytes held per step");
    for &n in sizes {
        let done = session.choices().len();
        session.run((n - done) as u64, None).expect("runs");
        assert_eq!(session.choices().len(), n);
        let held = counting::live() - base;
        let trace = session.trace_jsonl().len();
        println!(
            "{n:>9} steps: {:>6.0} bytes/step ({:.1} MB held; the trace is {:.0} bytes/step)",
            held as f64 / n as f64,
            held as f64 / 1e6,
            trace as f64 / n as f64
        );
    }
}
