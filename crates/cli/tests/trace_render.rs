//! `distsync trace render` and `distsync run --svg` on real traces from the simulator: every
//! scenario in scenarios/, a lossy and duplicating run, and a run with crashes, recoveries and a
//! partition. The outputs are checked by the viz crate's own checks (tests/common/checks.rs
//! there): the SVG counted element by element and parsed as XML, the Perfetto JSON's flows and
//! nesting, the ShiViz log re-read with the regex it declares.

#[path = "../../viz/tests/common/checks.rs"]
mod checks;
mod scratch;

use checks::{check_perfetto, check_shiviz, check_svg};
use distsync_viz::trace::{EventKind, Trace};
use scratch::Scratch;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `name` in a fresh scratch directory, removed when the returned value drops.
fn tmp(name: &str) -> Scratch {
    scratch::path("distsync-trace-", name)
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Renders `trace` three ways with the CLI and checks each output against the trace.
fn render_and_check(trace_path: &Path) -> Trace {
    let stem = trace_path
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let (svg, json, log) = (
        tmp(&format!("{stem}.svg")),
        tmp(&format!("{stem}.json")),
        tmp(&format!("{stem}.log")),
    );
    let o = distsync(&[
        "trace",
        "render",
        trace_path.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--perfetto",
        json.to_str().unwrap(),
        "--shiviz",
        log.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let file = std::fs::File::open(trace_path).unwrap();
    let trace = Trace::read(std::io::BufReader::new(file), "t").unwrap();
    check_svg(&trace, &std::fs::read_to_string(&svg).unwrap());
    check_perfetto(&trace, &std::fs::read_to_string(&json).unwrap());
    check_shiviz(&trace, &std::fs::read_to_string(&log).unwrap());
    trace
}

fn run_with_trace(scenario: &Path, name: &str) -> Scratch {
    let trace = tmp(name);
    let o = distsync(&[
        "run",
        scenario.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    // 0: every property held; 1: a monitor found a violation (some scenarios show one).
    assert!(matches!(o.status.code(), Some(0 | 1)), "{out}{err}");
    trace
}

#[test]
fn every_scenario_renders_and_passes_the_checks() {
    let mut scenarios: Vec<PathBuf> = std::fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    scenarios.sort();
    assert!(!scenarios.is_empty());
    for s in scenarios {
        let name = format!("{}.jsonl", s.file_stem().unwrap().to_str().unwrap());
        let trace = run_with_trace(&s, &name);
        render_and_check(&trace);
    }
}

#[test]
fn lossy_duplicating_runs_draw_every_drop_and_copy() {
    let trace = tmp("lossy.jsonl");
    let o = distsync(&[
        "simulate",
        "--algo",
        "lamport-mutex",
        "--nodes",
        "4",
        "--requests",
        "4",
        "--loss",
        "0.05",
        "--duplicate",
        "0.1",
        "--delay",
        "1ms..4ms",
        "--until",
        "2s",
        "--seed",
        "3",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{:?}", text(&o));
    let t = render_and_check(&trace);
    let drops = t
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Drop { .. }))
        .count();
    let dups = t
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::Deliver {
                    duplicate: true,
                    ..
                }
            )
        })
        .count();
    assert!(
        drops > 0 && dups > 0,
        "the run has drops ({drops}) and duplicates ({dups})"
    );
}

#[test]
fn crashes_recoveries_and_partitions_draw() {
    let scenario = tmp("faults.toml");
    std::fs::write(
        &scenario,
        r#"name = "faults"
algorithm = "central"
nodes = 4
seed = 5
until = "400ms"

[network]
delay = "1ms"

[workload]
kind = "poisson"
rate = 40.0
cs = "2ms"
requests = 6

[[event]]
at = "20ms"
crash = 1
[[event]]
at = "40ms"
partition = [[0, 1], [2, 3]]
[[event]]
at = "60ms"
heal = true
[[event]]
at = "90ms"
recover = 1
"#,
    )
    .unwrap();
    let trace = run_with_trace(&scenario, "faults.jsonl");
    let t = render_and_check(&trace);
    for kind in ["crash", "recover", "partition", "heal", "drop"] {
        assert!(
            t.events.iter().any(|e| e.kind.name() == kind),
            "the run has a {kind}"
        );
    }
}

#[test]
fn run_svg_is_the_same_drawing_as_trace_render() {
    let scenario = repo().join("scenarios/central-lock-manager.toml");
    let (trace, direct, rendered) = (tmp("same.jsonl"), tmp("direct.svg"), tmp("rendered.svg"));
    let o = distsync(&[
        "run",
        scenario.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "--svg",
        direct.to_str().unwrap(),
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{:?}", text(&o));
    let o = distsync(&[
        "trace",
        "render",
        trace.to_str().unwrap(),
        "--svg",
        rendered.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let a = std::fs::read(&direct).unwrap();
    assert!(!a.is_empty());
    assert_eq!(a, std::fs::read(&rendered).unwrap());
}

#[test]
fn a_window_keeps_what_overlaps_it() {
    let trace = run_with_trace(
        &repo().join("scenarios/ricart-agrawala-heavy.toml"),
        "window.jsonl",
    );
    let svg = tmp("window.svg");
    let o = distsync(&[
        "trace",
        "render",
        trace.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--from",
        "20ms",
        "--to",
        "45ms",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let t = Trace::read(
        std::io::BufReader::new(std::fs::File::open(&trace).unwrap()),
        "t",
    )
    .unwrap();
    let (from, to) = (20_000_000, 45_000_000);
    let mut expected = 0;
    for (_, fate) in t.messages() {
        for &d in &fate.deliveries {
            let got = t.events[d].time_ns;
            let sent = fate.send.map_or(got, |s| t.events[s].time_ns);
            if got >= from && sent <= to {
                expected += 1;
            }
        }
    }
    let all = t
        .events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Deliver { .. }))
        .count();
    assert!(expected > 0 && expected < all, "{expected} of {all}");
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let arrows = doc
        .descendants()
        .filter(|n| {
            n.attribute("class")
                .is_some_and(|c| c.split_whitespace().any(|t| t == "msg"))
        })
        .count();
    assert_eq!(arrows, expected);
}

#[test]
fn bad_traces_are_refused_naming_the_file_and_line() {
    let bad = tmp("bad.jsonl");
    std::fs::write(
        &bad,
        concat!(
            r#"{"event":"header","version":1,"algorithm":"central","family":"mutex","ids":[0,1],"seed":1}"#,
            "\n",
            r#"{"seq":0,"time_ns":0,"event":"start","node":0}"#,
            "\n",
            r#"{"seq":1,"time_ns":5,"event":"send","node":1,"lamport":1,"vector":[0,1],"to":0,"kind":"Request","msg":"Request"}"#,
            "\n"
        ),
    )
    .unwrap();
    let out = tmp("bad.svg");
    let o = distsync(&[
        "trace",
        "render",
        bad.to_str().unwrap(),
        "--svg",
        out.to_str().unwrap(),
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.jsonl:3: field `msg_id`: missing"),
        "{err}"
    );
    assert!(!err.contains("panicked"));

    let o = distsync(&[
        "trace",
        "render",
        "/nonexistent/run.jsonl",
        "--svg",
        "x.svg",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("/nonexistent/run.jsonl"), "{err}");

    let o = distsync(&["trace", "render", bad.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("nothing to write"), "{err}");

    let good = run_with_trace(
        &repo().join("scenarios/central-lock-manager.toml"),
        "ok.jsonl",
    );
    let o = distsync(&[
        "trace",
        "render",
        good.to_str().unwrap(),
        "--svg",
        out.to_str().unwrap(),
        "--from",
        "5ms",
        "--to",
        "2ms",
    ]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("--from 5 ms is after --to 2 ms"), "{err}");
}

/// `trace render --svg` of a window, alone, keeps in memory only what the window's drawing
/// needs (`Trace::read_window`) and draws the bytes the whole trace draws: for windows across
/// runs with duplicated and lost messages, crashes and recoveries, a partition and violations,
/// read in-process and through the binary. Every line is still read: a malformed line after
/// the window is refused, naming it.
#[test]
fn a_window_drawn_alone_is_the_drawing_of_the_whole_trace() {
    use distsync_viz::svg::{render, SvgOptions};
    let mut long = 0;
    for name in [
        "poisson-duplicates",
        "poisson-lossy",
        "ricart-agrawala-partition",
        "berkeley-master-crash",
        "maekawa-deadlock",
    ] {
        let trace = run_with_trace(
            &repo().join(format!("scenarios/{name}.toml")),
            &format!("{name}-window.jsonl"),
        );
        let open = || std::io::BufReader::new(std::fs::File::open(&trace).unwrap());
        let whole = Trace::read(open(), "t").unwrap();
        let end = whole.end_time_ns();
        let at = |k: u64| end / 7 * k;
        for i in 0..=7 {
            let tos = (i..=7).map(|j| Some(at(j))).chain([None]);
            for to in tos {
                let w = Trace::read_window(open(), "t", at(i), to).unwrap();
                assert_eq!((w.events, w.end_time_ns), (whole.events.len(), end));
                let opts = SvgOptions {
                    from_ns: Some(at(i)),
                    to_ns: to,
                };
                assert!(
                    render(&w.trace, &opts).unwrap() == render(&whole, &opts).unwrap(),
                    "{name}: window {}..{to:?} drawn differently",
                    at(i)
                );
            }
        }
        // A long run: a seventh of it keeps well under half of its events.
        if whole.events.len() >= 500 {
            let narrow = Trace::read_window(open(), "t", at(3), Some(at(4))).unwrap();
            assert!(
                narrow.trace.events.len() < whole.events.len() / 2,
                "{name}: {} of {} events kept for a seventh of the run",
                narrow.trace.events.len(),
                whole.events.len()
            );
            long += 1;
        }
        let svg = tmp(&format!("{name}-window.svg"));
        let (from, to) = (format!("{}ns", at(2)), format!("{}ns", at(5)));
        let o = distsync(&[
            "trace",
            "render",
            trace.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
            "--from",
            &from,
            "--to",
            &to,
        ]);
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
        let opts = SvgOptions {
            from_ns: Some(at(2)),
            to_ns: Some(at(5)),
        };
        assert!(std::fs::read_to_string(&svg).unwrap() == render(&whole, &opts).unwrap());
        if name == "poisson-duplicates" {
            let mut bad = std::fs::read_to_string(&trace).unwrap();
            let lines = bad.lines().count();
            bad.push_str("{\"seq\":\n");
            std::fs::write(&trace, bad).unwrap();
            let o = distsync(&[
                "trace",
                "render",
                trace.to_str().unwrap(),
                "--svg",
                svg.to_str().unwrap(),
                "--to",
                "1ms",
            ]);
            let (_, err) = text(&o);
            assert_eq!(o.status.code(), Some(2), "{err}");
            assert!(
                err.contains(&format!(
                    "{name}-window.jsonl:{}: not a JSON object",
                    lines + 1
                )),
                "{err}"
            );
        }
    }
    assert!(long >= 2, "only {long} long runs among the traces");
}
