//! Violations in traces and pictures: the `violation` line, the red band across the processes
//! involved, `run --svg` windowed around the violation with the command that draws it again,
//! long runs windowed automatically, and `trace render`'s `--svg -` and `--from` checks.

use std::path::Path;
use std::process::{Command, Output};

fn distsync_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

fn scenario(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
        .display()
        .to_string()
}

/// A fresh scratch directory, removed when the returned value drops (also when the test fails).
fn workdir(name: &str) -> tempfile::TempDir {
    tempfile::TempDir::with_prefix(format!("distsync-viol-{name}-")).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_trace_has_a_violation_line_and_a_clean_run_has_none() {
    let tmp = workdir("line");
    let dir = tmp.path().to_path_buf();
    let o = distsync_in(
        &dir,
        &[
            "run",
            &scenario("lamport-non-fifo.toml"),
            "--trace",
            "t.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let text = std::fs::read_to_string(dir.join("t.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["event"] == "violation")
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["property"], "mutual-exclusion");
    assert_eq!(lines[0]["time_ns"], 179_774_440);
    assert!(lines[0]["detail"]
        .as_str()
        .unwrap()
        .contains("node 3 entered the critical section while node 1 was in it"));
    assert!(lines[0].get("node").is_none());
    let o = distsync_in(
        &dir,
        &["run", &scenario("lamport-light.toml"), "--trace", "c.jsonl"],
    );
    assert_eq!(o.status.code(), Some(0));
    let text = std::fs::read_to_string(dir.join("c.jsonl")).unwrap();
    assert!(!text.contains("\"violation\""));
}

#[test]
fn run_svg_draws_the_violation_in_a_window_around_it_and_says_how_to_draw_it_again() {
    let tmp = workdir("svg");
    let dir = tmp.path().to_path_buf();
    let o = distsync_in(
        &dir,
        &[
            "run",
            &scenario("lamport-non-fifo.toml"),
            "--svg",
            "run.svg",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("violation of mutual-exclusion at 179.77444 ms"),
        "{err}"
    );
    let svg = std::fs::read_to_string(dir.join("run.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let band = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("violation"))
        .expect("a violation mark");
    assert_eq!(band.attribute("data-property"), Some("mutual-exclusion"));
    let label = band
        .descendants()
        .find(|n| n.attribute("class") == Some("violation-label"))
        .unwrap();
    assert!(label
        .text()
        .unwrap()
        .starts_with("mutual exclusion broken: node 3 entered"));
    // The band spans P1 and P3, the two processes inside (lanes 1 and 3: y 136 and 264).
    let rect = band.descendants().find(|n| n.has_tag_name("rect")).unwrap();
    let y: f64 = rect.attribute("y").unwrap().parse().unwrap();
    let h: f64 = rect.attribute("height").unwrap().parse().unwrap();
    assert!(y < 136.0 && y > 72.0, "{y}");
    assert!(y + h > 264.0, "{y} + {h}");
    assert!(svg.contains("violation (property broken)"), "in the legend");
    // The drawing is a window around the violation, not the whole run.
    let width: f64 = doc
        .root_element()
        .attribute("width")
        .unwrap()
        .parse()
        .unwrap();
    assert!(width < 4000.0, "{width}");
    // The printed command draws the same picture from a trace.
    let command = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("this window: "))
        .unwrap_or_else(|| panic!("{err}"));
    for part in command.split(" && ") {
        let words: Vec<&str> = part.split_whitespace().collect();
        assert_eq!(words[0], "distsync");
        let words: Vec<&str> = words[1..]
            .iter()
            .map(|w| if *w == "run.svg" { "again.svg" } else { w })
            .collect();
        let o = distsync_in(&dir, &words);
        assert!(o.status.code().unwrap() <= 1, "{part}: {}", stderr(&o));
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("again.svg")).unwrap(),
        svg,
        "{command}"
    );
}

#[test]
fn long_runs_are_windowed_and_say_so() {
    let tmp = workdir("long");
    let dir = tmp.path().to_path_buf();
    let o = distsync_in(
        &dir,
        &[
            "run",
            &scenario("ricart-agrawala-heavy.toml"),
            "--set",
            "workload.requests=200",
            "--until",
            "1h",
            "--trace",
            "long.jsonl",
            "--svg",
            "long.svg",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("too many to draw legibly"), "{err}");
    assert!(
        err.contains("distsync trace render long.jsonl --svg long.svg --from 0s --to "),
        "{err}"
    );
    let svg = std::fs::read_to_string(dir.join("long.svg")).unwrap();
    let drawn = svg.matches("class=\"ev ").count();
    assert!(drawn <= 4_100, "{drawn} events drawn");
    // trace render does the same without --from/--to, and honours them when given.
    let o = distsync_in(&dir, &["trace", "render", "long.jsonl", "--svg", "-"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("too many to draw legibly"));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("<?xml") && out.trim_end().ends_with("</svg>"));
    assert_eq!(out, svg, "--svg - writes the drawing itself to stdout");
    let o = distsync_in(
        &dir,
        &[
            "trace",
            "render",
            "long.jsonl",
            "--svg",
            "-",
            "--from",
            "1s",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("too many"));
    // --from past the end is refused.
    let o = distsync_in(
        &dir,
        &[
            "trace",
            "render",
            "long.jsonl",
            "--svg",
            "x.svg",
            "--from",
            "1h",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--from 1h: after the trace's last event"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("x.svg").exists());
}

#[test]
fn legends_list_every_glyph_and_repeated_labels_are_thinned() {
    let tmp = workdir("legend");
    let dir = tmp.path().to_path_buf();
    let o = distsync_in(
        &dir,
        &[
            "run",
            &scenario("berkeley-master-crash.toml"),
            "--svg",
            "b.svg",
        ],
    );
    assert!(o.status.code().unwrap() <= 1, "{}", stderr(&o));
    let svg = std::fs::read_to_string(dir.join("b.svg")).unwrap();
    for item in [
        "send / delivery",
        "output",
        "timer expired",
        "clock adjusted",
    ] {
        assert!(
            svg.contains(&format!(">{item}</text>")),
            "legend lacks {item}"
        );
    }
    // "Master" is not said again every round: at most once per line and 600 pixels.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let width: f64 = doc
        .root_element()
        .attribute("width")
        .unwrap()
        .parse()
        .unwrap();
    let masters = svg.matches(">Master</text>").count();
    let bound = 5 * (width / 600.0).ceil() as usize;
    assert!(masters <= bound, "{masters} Master labels, at most {bound}");
    assert!(masters >= 1);
}

#[test]
fn leader_labels_keep_clear_of_the_arrows_their_process_sends_up() {
    let tmp = workdir("leader");
    let dir = tmp.path().to_path_buf();
    let o = distsync_in(
        &dir,
        &[
            "run",
            &scenario("bully-eight-processes.toml"),
            "--svg",
            "b.svg",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let svg = std::fs::read_to_string(dir.join("b.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    // Lanes: P0 at y 72, 64 apart; P6 and P7 tell the processes above them: label below.
    let labels: Vec<(String, f64)> = doc
        .descendants()
        .filter(|n| {
            n.has_tag_name("text")
                && n.parent().and_then(|p| p.attribute("class")) == Some("leader")
        })
        .map(|n| {
            (
                n.text().unwrap().to_string(),
                n.attribute("y").unwrap().parse().unwrap(),
            )
        })
        .collect();
    let lane_y = |p: f64| 72.0 + 64.0 * p;
    // P6's own announcement (leader 6 at y of lane 6) and P7's (leader 7, lane 7) sit below.
    assert!(
        labels
            .iter()
            .any(|(t, y)| t == "leader 6" && (*y - (lane_y(6.0) + 18.0)).abs() < 0.5),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .any(|(t, y)| t == "leader 7" && (*y - (lane_y(7.0) + 18.0)).abs() < 0.5),
        "{labels:?}"
    );
    // The others, who only receive from below, keep theirs above.
    assert!(
        labels
            .iter()
            .any(|(t, y)| t == "leader 6" && (*y - (lane_y(0.0) - 9.0)).abs() < 0.5),
        "{labels:?}"
    );
}

/// Found walking issue 16 on a fresh clone: clap took `-1ms` for a flag ("unexpected
/// argument", with a tip that does not work).
#[test]
fn negative_times_of_a_window_are_refused_naming_the_flag() {
    let tmp = workdir("negative");
    let dir = tmp.path().to_path_buf();
    let o = distsync_in(
        &dir,
        &[
            "run",
            &scenario("lamport-non-fifo.toml"),
            "--trace",
            "run.jsonl",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    for (flag, value) in [("--from", "-1ms"), ("--to", "-5ms")] {
        let o = distsync_in(
            &dir,
            &[
                "trace",
                "render",
                "run.jsonl",
                "--svg",
                "x.svg",
                flag,
                value,
            ],
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(flag) && err.contains(&format!("negative time {value}")),
            "{flag} {value}: {err}"
        );
        assert!(!err.contains("unexpected argument"), "{err}");
    }
    tmp.close().unwrap();
}

/// Found walking issue 16: the windowed run said "the run has N events" with N the trace's
/// lines, twice the report's `events_processed`.
#[test]
fn a_windowed_long_run_counts_the_traces_events_as_the_trace_does() {
    let tmp = workdir("long-count");
    let dir = tmp.path().to_path_buf();
    let o = distsync_in(
        &dir,
        &[
            "run",
            &scenario("ricart-agrawala-heavy.toml"),
            "--set",
            "workload.requests=60",
            "--until",
            "1h",
            "--trace",
            "long.jsonl",
            "--svg",
            "long.svg",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let processed = report["events_processed"].as_u64().unwrap();
    let lines = std::fs::read_to_string(dir.join("long.jsonl"))
        .unwrap()
        .lines()
        .count() as u64
        - 1; // the header
    assert_ne!(
        lines, processed,
        "the two counts differ, so the words must say which"
    );
    let err = stderr(&o);
    assert!(
        err.contains(&format!("the trace has {lines} events")),
        "{err}"
    );
    assert!(!err.contains("the run has"), "{err}");
    tmp.close().unwrap();
}

/// Found walking issue 16: `trace render --svg -` writes to standard output, but `run --svg -`
/// wrote a file named `-` (run's standard output is its report). It is refused, saying how.
#[test]
fn run_refuses_an_svg_on_standard_output_and_says_how() {
    let tmp = workdir("run-stdout");
    let dir = tmp.path().to_path_buf();
    let o = distsync_in(
        &dir,
        &["run", &scenario("ricart-agrawala-heavy.toml"), "--svg", "-"],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--svg -") && err.contains("trace render"),
        "{err}"
    );
    assert!(!dir.join("-").exists(), "a file named - was written");
    tmp.close().unwrap();
}

/// Left over from walking issue 16: `run --until -2s` and `simulate --until -2s` got clap's
/// "unexpected argument" (it took `-2s` for a flag). They are refused in words, naming the flag.
#[test]
fn a_negative_horizon_is_refused_naming_the_flag() {
    let tmp = workdir("negative-until");
    let dir = tmp.path().to_path_buf();
    let lamport = scenario("lamport-non-fifo.toml");
    let runs: [&[&str]; 2] = [
        &["run", &lamport, "--until", "-2s"],
        &["simulate", "--algo", "ricart-agrawala", "--until", "-2s"],
    ];
    for args in runs {
        let o = distsync_in(&dir, args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--until") && err.contains("negative duration -2s"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
    tmp.close().unwrap();
}

/// A single violation is said in the singular (the README quotes the line).
#[test]
fn one_violation_is_said_in_the_singular() {
    let tmp = workdir("singular");
    let dir = tmp.path().to_path_buf();
    let o = distsync_in(&dir, &["run", &scenario("lamport-non-fifo.toml")]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("1 violation found; reproduce with:"), "{err}");
    assert!(!err.contains("violation(s)"), "{err}");
    tmp.close().unwrap();
}
