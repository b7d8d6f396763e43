//! Ctrl-C (SIGINT) in a campaign: `stress`, `sweep`, `compare` and `check` print the summary of
//! the work done so far, `stress` writes the failures already found, and each exits 130;
//! `run --trace FILE` interrupted leaves no `FILE.partial-PID` behind. Each test starts the
//! verb as a child process, waits until it is under way and sends it SIGINT.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod scratch;

fn start(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Waits until `ready` holds (at most a minute), then a little longer so that the campaign has
/// work done, sends SIGINT and collects the output.
fn interrupt_when(child: Child, ready: impl Fn(u32) -> bool, then: Duration) -> Output {
    let pid = child.id();
    let started = Instant::now();
    while !ready(pid) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the child never got under way"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(then);
    // SAFETY: kill(2) on the pid of our own child, which has not been waited for yet.
    let r = unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    assert_eq!(r, 0, "SIGINT sent");
    child.wait_with_output().expect("the child ends")
}

/// The campaign is under way once the thread that watches for signals runs beside the main one.
fn watching(pid: u32) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/task")).is_ok_and(|d| d.count() >= 2)
}

fn interrupted(o: &Output) -> (String, String) {
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(130), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("interrupted"),
        "the interruption is told on stderr: {stderr}"
    );
    (stdout, stderr)
}

#[test]
fn an_interrupted_stress_prints_its_summary_and_writes_the_failures_found() {
    let out = scratch::path("distsync-interrupt-stress-", "found");
    let child = start(&[
        "stress",
        "--algo",
        "lamport-mutex",
        "--faults",
        "delay,reorder",
        "--seeds",
        "2000000",
        "--jobs",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let o = interrupt_when(child, watching, Duration::from_millis(1500));
    let (stdout, stderr) = interrupted(&o);
    assert!(
        stderr.contains("interrupted by Ctrl-C (SIGINT) after"),
        "{stderr}"
    );
    // The table's row: lamport-mutex, its faults, then the runs made (fewer than asked).
    let row = stdout
        .lines()
        .find(|l| l.starts_with("lamport-mutex "))
        .unwrap_or_else(|| panic!("a summary row: {stdout}"));
    let runs: u64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(runs > 0 && runs < 2_000_000, "{row}");
    // Lamport's algorithm over reordering links fails in about one run in five: the failures
    // found so far are written, and the summary says how to reproduce them.
    assert!(stdout.contains("reproduce: distsync run"), "{stdout}");
    let written = std::fs::read_dir(&*out).unwrap().count();
    assert!(
        written > 0,
        "failing scenarios written to {}",
        out.display()
    );
}

#[test]
fn an_interrupted_sweep_prints_the_points_made() {
    let child = start(&[
        "sweep",
        "--algo",
        "ricart-agrawala",
        "--param",
        "seed=1..5000",
        "--seeds",
        "20",
    ]);
    let o = interrupt_when(child, watching, Duration::from_millis(1500));
    let (stdout, stderr) = interrupted(&o);
    assert!(
        stderr.contains("points all of whose runs were made"),
        "{stderr}"
    );
    assert!(stdout.starts_with("algorithm"), "{stdout}");
    // Ricart-Agrawala on 5 nodes: 2(N-1) = 8 messages per entry, whatever the seed; some
    // points were made, and not all.
    let made = stdout.lines().skip(1).count();
    assert!(made > 0 && made < 5000, "{stdout}");
    for line in stdout.lines().skip(1) {
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            (cells[0], cells[2], cells[3]),
            ("ricart-agrawala", "8.000", "0")
        );
    }
}

#[test]
fn an_interrupted_comparison_prints_the_rows_made() {
    let sizes: Vec<String> = (3..200).map(|n| n.to_string()).collect();
    let sizes = sizes.join(",");
    let child = start(&[
        "compare",
        "--nodes",
        &sizes,
        "--algo",
        "ricart-agrawala",
        "--full",
    ]);
    let o = interrupt_when(child, watching, Duration::from_millis(1500));
    let (stdout, stderr) = interrupted(&o);
    assert!(stderr.contains("the rows of those runs"), "{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("ricart-agrawala    3  light")),
        "{stdout}"
    );
}

#[test]
fn an_interrupted_check_prints_what_it_explored() {
    let child = start(&[
        "check",
        "--algo",
        "ricart-agrawala",
        "--nodes",
        "4",
        "--requests",
        "3",
        "--threads",
        "1",
    ]);
    let o = interrupt_when(child, watching, Duration::from_millis(1500));
    let (stdout, _) = interrupted(&o);
    assert!(
        stdout.contains("NO VIOLATION within the bound: an interrupt stopped the exploration"),
        "{stdout}"
    );
}

#[test]
fn an_interrupted_run_leaves_no_partial_trace() {
    let dir = scratch::path("distsync-interrupt-run-", "d");
    std::fs::create_dir(&*dir).unwrap();
    let scenario = dir.join("long.toml");
    std::fs::write(
        &scenario,
        "algorithm = \"ricart-agrawala\"\nnodes = 30\nuntil = \"100000s\"\n\
         [workload]\nkind = \"saturated\"\ncs = \"1ms\"\n",
    )
    .unwrap();
    let trace = dir.join("t.jsonl");
    let child = start(&[
        "run",
        scenario.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let staged = |_: u32| partial_files(&dir) > 0;
    let o = interrupt_when(child, staged, Duration::from_millis(300));
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    assert_eq!(partial_files(&dir), 0, "a partial trace left behind");
    assert!(!trace.exists());
}

fn partial_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".partial-")
        })
        .count()
}
