//! A run cut by its horizon (`until`) with requests still pending is said to be cut, with exit
//! code 3 as for a stop by the runaway guard's caps, not reported as starvation (exit 1): a
//! horizon too short is not a failure of the algorithm. A real violation beside it still exits 1.

use std::process::{Command, Output};

mod scratch;

fn run(name: &str, text: &str, flags: &[&str]) -> Output {
    let file = scratch::path("distsync-horizon-", name);
    std::fs::write(&*file, text).unwrap();
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .arg("run")
        .arg(&*file)
        .args(flags)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Ten requests per node, each 10ms in the critical section, and 25ms to serve them all.
const SHORT: &str = "algorithm = \"ricart-agrawala\"\nnodes = 3\nuntil = \"25ms\"\n\
                     [workload]\nkind = \"saturated\"\nrequests = 10\ncs = \"10ms\"\n";

#[test]
fn a_run_cut_by_its_horizon_is_said_to_be_cut_with_exit_3() {
    let o = run("short.toml", SHORT, &[]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(3), "{out}{err}");
    assert!(out.contains("ended (horizon)"), "{out}");
    assert!(
        out.contains("stopped:    at its horizon (`until`) of 25ms"),
        "{out}"
    );
    assert!(
        out.contains("not judged, the run was stopped first: starvation"),
        "{out}"
    );
    assert!(out.contains("violations: none"), "{out}");
    assert!(err.contains("raise `until`"), "{err}");
    assert!(!err.contains("reproduce"), "{err}");
    // The JSON report keeps the finding as it was (a machine reads ended_by beside it).
    let o = run("short.toml", SHORT, &["--json"]);
    assert_eq!(o.status.code(), Some(3));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["ended_by"], "horizon");
    // With a horizon long enough, the same run passes.
    let o = run("long.toml", &SHORT.replace("25ms", "10s"), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
}

#[test]
fn a_violation_before_the_horizon_still_exits_1() {
    // Lamport's algorithm over links that reorder: mutual exclusion breaks (seed 30), and the
    // horizon then cuts the rest of the workload.
    let scenario = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/lamport-non-fifo.toml"),
    )
    .unwrap();
    let o = run("lamport.toml", &scenario, &["--until", "200ms"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}{}", text(&o.stderr));
    assert!(out.contains("mutual-exclusion"), "{out}");
}
