//! `distsync bench`: the quick run measures and prints every row with its anchor, as a table
//! and as JSON; `--rows` chooses rows; a bad flag is an input error. No figure is asserted (the
//! machine decides them).

use std::process::{Command, Output};

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The rows of `distsync bench --quick --json ARGS`, which must succeed.
fn bench_json(args: &[&str]) -> Vec<serde_json::Value> {
    let o = distsync(&[&["bench", "--quick", "--json"], args].concat());
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    rows.as_array().expect("an array of rows").clone()
}

/// The ids of `rows`, in order.
fn ids(rows: &[serde_json::Value]) -> Vec<&str> {
    rows.iter().map(|r| r["id"].as_str().unwrap()).collect()
}

const ROWS: [(&str, &str); 10] = [
    ("a1", "simulator: ricart-agrawala, saturated"),
    ("a2", "simulator: lamport-mutex, saturated"),
    (
        "b1",
        "simulator: ricart-agrawala, every node requesting in turn",
    ),
    (
        "b2",
        "simulator: ricart-agrawala, every node requesting once",
    ),
    (
        "b3",
        "simulator: ricart-agrawala, every node requesting once",
    ),
    ("b4", "per-event cost growth, smallest to largest queue"),
    ("c1", "elections: chang-roberts, ring, all start"),
    ("c2", "elections: peterson, ring, all start"),
    ("d1", "checker: ricart-agrawala, non-FIFO, 1 thread"),
    ("e1", "tracing: ricart-agrawala, saturated, traced"),
];

#[test]
fn a_quick_run_prints_every_row_beside_its_anchor() {
    let o = distsync(&["bench", "--quick"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for (id, name) in ROWS {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no row {id}:\n{out}"));
        assert!(line.contains(name), "row {id} is not `{name}`: {line}");
    }
    assert!(
        out.contains("checker: ricart-agrawala, non-FIFO, every core"),
        "{out}"
    );
    // The simulator rows name their anchor, measured in the same run, and a ratio.
    assert!(out.contains("bare BinaryHeap loop"), "{out}");
    // The machine the figures came from, and the goals' verdict (a quick run's tiny sizes
    // have no goal).
    assert!(
        out.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("machine: ") && l.contains(" cores, load ")),
        "{out}"
    );
    assert!(
        out.lines()
            .last()
            .is_some_and(|l| l.starts_with("goals: no row of this run has one")),
        "{out}"
    );
    assert!(out.contains("leader 199 agreed by all"), "{out}");
    assert!(out.contains("proved"), "{out}");
    assert!(
        !out.contains("DID NOT COMPLETE") && !out.contains("NOT PROVED"),
        "{out}"
    );
}

#[test]
fn rows_are_chosen_and_json_has_the_figures() {
    let rows = bench_json(&["--rows", "c", "--ring", "50"]);
    assert_eq!(ids(&rows), ["c1", "c2"]);
    for r in &rows {
        assert!(r["figure"].as_f64().unwrap() >= 0.0);
        // The goal is set at 1,000,000 and 10,000,000 processes, not at 50.
        assert!(r["anchor"].is_null() && r.get("goal").is_none(), "{r}");
        assert!(
            r["anchor_name"]
                .as_str()
                .unwrap()
                .contains("goal: 5 s CPU at 1,000,000"),
            "{r}"
        );
        assert!(
            r["note"]
                .as_str()
                .unwrap()
                .contains("leader 49 agreed by all"),
            "{r}"
        );
    }
}

#[test]
fn bad_flags_are_input_errors() {
    let o = distsync(&["bench", "--rows", "z"]);
    assert_eq!(o.status.code(), Some(2));
    let o = distsync(&["bench", "--ring", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--ring 2"));
    // No repetition would measure nothing: refused, not quietly taken as one.
    let o = distsync(&["bench", "--quick", "--rows", "a", "--reps", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--reps 0"));
    assert!(o.stdout.is_empty());
}

/// Row b repeats each size `--reps` times and shows medians, with the share of system time
/// (the kernel giving a large run fresh pages), and b4 the growth in user time alone beside the
/// growth in CPU time.
#[test]
fn row_b_is_repeated_and_shows_its_system_time() {
    let rows = bench_json(&["--rows", "b", "--reps", "2"]);
    assert_eq!(ids(&rows), ["b1", "b2", "b3", "b4"]);
    for r in &rows[..3] {
        let note = r["note"].as_str().unwrap();
        assert!(note.starts_with("median of 2 paired runs of "), "{r}");
        // "...: C s CPU, of which S s system", with S within C.
        let seconds: Vec<f64> = note
            .split(' ')
            .filter_map(|w| w.parse::<f64>().ok())
            .collect();
        let [.., cpu, system] = seconds[..] else {
            panic!("no CPU and system seconds in {note}")
        };
        assert!((0.0..=cpu + 0.01).contains(&system), "{note}");
    }
    let b4 = rows[3]["note"].as_str().unwrap();
    assert!(b4.contains("in user time alone "), "{b4}");
}

/// Row a repeats each pair `--reps` times and gives, beside the median ratio, the range of the
/// pairs' own ratios: the median lies within it (a wide range says the machine changed speed
/// during the row).
#[test]
fn row_a_gives_the_range_of_its_pairs_ratios() {
    let rows = bench_json(&["--rows", "a", "--reps", "3"]);
    assert_eq!(ids(&rows), ["a1", "a2"]);
    for r in &rows {
        let note = r["note"].as_str().unwrap();
        assert!(note.starts_with("median of 3 paired runs of "), "{r}");
        let (_, range) = note
            .split_once("the pairs' own ratios ")
            .unwrap_or_else(|| panic!("no range of the pairs' ratios in {note}"));
        let (low, high) = range.split_once(" to ").expect("LOW to HIGH");
        let (low, high): (f64, f64) = (low.parse().unwrap(), high.parse().unwrap());
        let ratio = r["ratio"].as_f64().unwrap();
        // Printed to three places: the median may sit on either end once rounded.
        assert!(
            0.0 < low && low <= high && low - 0.0005 <= ratio && ratio <= high + 0.0005,
            "{ratio} outside {low} to {high}: {r}"
        );
    }
}

/// Row e runs the same scenario untraced and traced, paired: the anchor is the untraced run's
/// user CPU time, the ratio traced / untraced, and the note gives the trace's size (the trace
/// was written, and the reports compared equal, or the row would have failed).
#[test]
fn row_e_pairs_the_traced_run_with_the_untraced_one() {
    let rows = bench_json(&["--rows", "e", "--reps", "2"]);
    assert_eq!(ids(&rows), ["e1"]);
    let r = &rows[0];
    let (figure, anchor) = (r["figure"].as_f64().unwrap(), r["anchor"].as_f64().unwrap());
    assert_eq!(r["unit"], "s user CPU", "{r}");
    assert!(figure >= 0.0 && anchor >= 0.0, "{r}");
    if anchor > 0.0 {
        let ratio = r["ratio"].as_f64().unwrap();
        assert!((ratio - figure / anchor).abs() < 1e-9, "{r}");
    }
    let note = r["note"].as_str().unwrap();
    assert!(note.starts_with("median of 2 pairs"), "{note}");
    let per_event: f64 = note
        .split(" B per event")
        .next()
        .and_then(|s| s.rsplit(['(', ' ']).next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no bytes per event in {note}"));
    assert!(per_event > 50.0, "{note}");
}
