//! Runs that cannot mean what they say are refused (issue 10, item 11): fields of other
//! algorithms, and output that cannot be written.

use std::process::{Command, Output, Stdio};

fn distsync_to(args: &[&str], stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .stdout(stdout)
        .output()
        .expect("the binary runs")
}

/// A fresh scratch directory for a test's scenario files, removed when the value drops.
fn scratch() -> tempfile::TempDir {
    tempfile::TempDir::with_prefix("distsync-faults-input-").unwrap()
}

fn scenario(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn fields_of_other_algorithms_are_refused_with_the_field_named() {
    let tmp = scratch();
    for (name, text, field) in [
        (
            "mutex-timeout.toml",
            "algorithm = \"ricart-agrawala\"\nnodes = 3\nanswer_timeout = \"10ms\"\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
            "answer_timeout",
        ),
        (
            "ra-holder.toml",
            "algorithm = \"ricart-agrawala\"\nnodes = 3\nholder = 1\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
            "holder",
        ),
        (
            "election-tree.toml",
            "algorithm = \"bully\"\nnodes = 3\ntree = [[0, 1], [1, 2]]\n[[event]]\nat = \"0ms\"\nelect = 0\n",
            "tree",
        ),
        (
            "election-quorums.toml",
            "algorithm = \"ring\"\nnodes = 3\nquorums = \"grid\"\n[[event]]\nat = \"0ms\"\nelect = 0\n",
            "quorums",
        ),
        (
            "election-holder.toml",
            "algorithm = \"chang-roberts\"\nnodes = 3\nholder = 0\n[[event]]\nat = \"0ms\"\nelect = 0\n",
            "holder",
        ),
        (
            "ra-coordinator.toml",
            "algorithm = \"ricart-agrawala\"\nnodes = 3\ncoordinator = 1\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
            "coordinator",
        ),
        (
            "clock-coordinator.toml",
            "algorithm = \"cristian\"\nnodes = 3\ncoordinator = 1\n",
            "coordinator",
        ),
    ] {
        let path = scenario(&tmp, name, text);
        let o = distsync_to(&["run", &path], Stdio::piped());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("`{field}`")), "{name}: {err}");
        assert!(err.contains(name), "{name}: {err}");
    }
    // The same fields where they belong are accepted.
    let path = scenario(
        &tmp,
        "token-holder.toml",
        "algorithm = \"suzuki-kasami\"\nnodes = 3\nholder = 1\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
    );
    assert_eq!(
        distsync_to(&["run", &path], Stdio::piped()).status.code(),
        Some(0)
    );
}

#[test]
fn sweep_and_compare_refuse_what_they_cannot_compare() {
    let o = distsync_to(
        &[
            "sweep",
            "--algo",
            "central",
            "--param",
            "algorithm=ricart-agrawala,lamprot-mutex",
        ],
        Stdio::piped(),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("lamprot-mutex") && err.contains("--param"),
        "{err}"
    );
    let o = distsync_to(&["compare", "--nodes", "1"], Stdio::piped());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--nodes") && err.contains("at least 2"),
        "{err}"
    );
}

fn run_err(name: &str, text: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let tmp = scratch();
    let path = scenario(&tmp, name, text);
    let mut args = vec!["run", path.as_str()];
    args.extend_from_slice(extra);
    let o = distsync_to(&args, Stdio::piped());
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn events_after_the_horizon_are_refused_naming_the_event() {
    // A request at 20ms in a run that ends at 10ms would never happen.
    let (code, _, err) = run_err(
        "late-request.toml",
        "algorithm = \"central\"\nnodes = 3\nuntil = \"10ms\"\n[[event]]\nat = \"1ms\"\nrequest = 0\n[[event]]\nat = \"20ms\"\nrequest = 1\n",
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    for needle in [
        "late-request.toml",
        "`event[1].at`",
        "20ms",
        "until",
        "10ms",
    ] {
        assert!(err.contains(needle), "missing {needle}: {err}");
    }
    // Without `until`, the default horizon (60s) is the one named.
    let (code, _, err) = run_err(
        "late-default.toml",
        "algorithm = \"bully\"\nnodes = 3\n[[event]]\nat = \"90s\"\nelect = 0\n",
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("late-default.toml") && err.contains("`event[0].at`") && err.contains("60s"),
        "{err}"
    );
    // `--until` that cuts a scripted event off is refused the same way.
    let (code, _, err) = run_err(
        "cut-by-flag.toml",
        "algorithm = \"central\"\nnodes = 3\n[[event]]\nat = \"5s\"\nrequest = 1\n",
        &["--until", "1s"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`event[0].at`") && err.contains("1s"), "{err}");
    // An event exactly at the horizon still happens (the request is then left unserved: the
    // run is cut by its horizon, exit 3, not a refusal).
    let (code, out, err) = run_err(
        "at-horizon.toml",
        "algorithm = \"central\"\nnodes = 3\nuntil = \"10ms\"\n[[event]]\nat = \"10ms\"\nrequest = 0\n",
        &["--json"],
    );
    assert_ne!(code, Some(2), "{err}");
    assert!(!err.contains("after the run's horizon"), "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["mutex"]["unserved_requests"], 1, "{out}");
}

#[test]
fn a_run_with_nothing_to_do_is_refused_or_says_so() {
    // Refused (exit 2, the missing thing named): nothing would ever happen.
    for (name, text, needle) in [
        ("idle-mutex.toml", "algorithm = \"ricart-agrawala\"\nnodes = 3\n", "workload"),
        (
            "idle-mutex-none.toml",
            "algorithm = \"central\"\nnodes = 3\n[workload]\nkind = \"none\"\n",
            "workload",
        ),
        (
            "idle-mutex-zero.toml",
            "algorithm = \"suzuki-kasami\"\nnodes = 3\n[workload]\nkind = \"saturated\"\nrequests = 0\n",
            "workload",
        ),
        ("idle-election.toml", "algorithm = \"bully\"\nnodes = 3\n", "elect"),
        ("idle-multicast.toml", "algorithm = \"causal-broadcast\"\nnodes = 3\n", "multicast"),
    ] {
        let (code, out, err) = run_err(name, text, &[]);
        assert_eq!(code, Some(2), "{name}: {out}{err}");
        assert!(err.contains(name) && err.contains(needle), "{name}: {err}");
        assert!(err.contains("nothing"), "{name}: {err}");
    }
    // Said (a warning on stderr and in the report): something runs, but not the algorithm's
    // subject. An election watched by heartbeats that nothing disturbs...
    let (code, _, err) = run_err(
        "quiet-election.toml",
        "algorithm = \"bully\"\nnodes = 3\ndetect = \"timeout\"\nuntil = \"1s\"\n",
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning") && err.contains("no election"),
        "{err}"
    );
    // ...and a bank whose snapshot is never taken.
    let (code, _, err) = run_err(
        "no-snapshot.toml",
        "algorithm = \"chandy-lamport\"\nnodes = 3\nuntil = \"1s\"\n[app]\nkind = \"bank\"\nbalance = 100\nrate = 10.0\ntransfers = 3\n",
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("warning") && err.contains("snapshot"), "{err}");
    // Clock synchronization needs no event: it synchronizes every `sync_interval`.
    let (code, _, err) = run_err(
        "clock-alone.toml",
        "algorithm = \"cristian\"\nnodes = 3\nuntil = \"3s\"\n",
        &[],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("nothing"), "{err}");
}

#[test]
fn simulate_refuses_flags_of_another_algorithm() {
    for (args, flag) in [
        (vec!["--algo", "bully", "--holder", "1"], "--holder"),
        (
            vec!["--algo", "bully", "--coordinator", "1"],
            "--coordinator",
        ),
        (vec!["--algo", "ring", "--load", "light"], "--load"),
        (vec!["--algo", "ring", "--requests", "3"], "--requests"),
        (vec!["--algo", "chang-roberts", "--cs", "5ms"], "--cs"),
        (
            vec!["--algo", "ricart-agrawala", "--crash-at", "10ms"],
            "--crash-at",
        ),
        (
            vec!["--algo", "ricart-agrawala", "--coordinator", "1"],
            "--coordinator",
        ),
        (
            vec!["--algo", "ricart-agrawala", "--holder", "1"],
            "--holder",
        ),
        (vec!["--algo", "central", "--holder", "1"], "--holder"),
        (
            vec!["--algo", "suzuki-kasami", "--coordinator", "0"],
            "--coordinator",
        ),
    ] {
        let mut all = vec!["simulate"];
        all.extend(args.iter());
        let o = distsync_to(&all, Stdio::piped());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {err}");
        assert!(
            err.contains(flag) && err.contains(args[1]),
            "{all:?}: {err}"
        );
    }
    // The same flags where they apply are taken.
    for args in [
        vec!["--algo", "central", "--coordinator", "1", "--requests", "2"],
        vec![
            "--algo",
            "suzuki-kasami",
            "--holder",
            "2",
            "--load",
            "light",
            "--requests",
            "2",
        ],
        vec!["--algo", "bully", "--crash-at", "10ms"],
    ] {
        let mut all = vec!["simulate"];
        all.extend(args.iter());
        let o = distsync_to(&all, Stdio::piped());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{all:?}: {err}");
    }
}

#[test]
fn a_trace_that_cannot_be_written_is_an_error_and_a_device_is_never_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata("/dev/full").expect("/dev/full, Linux's always-full device");
    assert!(meta.file_type().is_char_device());
    let tmp = scratch();
    let path = scenario(
        &tmp,
        "trace-ok.toml",
        "algorithm = \"central\"\nnodes = 3\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
    );
    // First through a symbolic link in a scratch directory: a rename would replace the link
    // (and, given /dev/full itself, the device) with a regular file.
    let links = tempfile::TempDir::with_prefix("distsync-trace-full-").unwrap();
    let dir = links.path().to_path_buf();
    let link = dir.join("trace.jsonl");
    std::os::unix::fs::symlink("/dev/full", &link).unwrap();
    let link_text = link.display().to_string();
    let o = distsync_to(&["run", &path, "--trace", &link_text], Stdio::piped());
    let err = String::from_utf8_lossy(&o.stderr);
    let kept = std::fs::symlink_metadata(&link).unwrap();
    assert!(
        kept.file_type().is_symlink(),
        "the link to /dev/full was replaced by a {:?}",
        kept.file_type()
    );
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot write the trace") && err.contains(&link_text),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // No staged file is left beside it.
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    // Then /dev/full itself (safe now that a link to it was written in place): an error, and
    // the device is still a device.
    let o = distsync_to(&["run", &path, "--trace", "/dev/full"], Stdio::piped());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(std::fs::metadata("/dev/full")
        .unwrap()
        .file_type()
        .is_char_device());
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/dev/full") && err.contains("cannot write the trace"),
        "{err}"
    );
    // A trace into a link to a regular file goes to the file, and the link stays a link.
    let target = dir.join("real.jsonl");
    let link2 = dir.join("via-link.jsonl");
    std::fs::write(&target, "old").unwrap();
    std::os::unix::fs::symlink(&target, &link2).unwrap();
    let o = distsync_to(
        &["run", &path, "--trace", &link2.display().to_string()],
        Stdio::piped(),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(std::fs::symlink_metadata(&link2)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&target)
        .unwrap()
        .contains("\"start\""));
}

#[test]
fn list_and_run_into_a_full_device_exit_two() {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full, Linux's always-full device, opens");
    let tmp = scratch();
    let path = scenario(
        &tmp,
        "ok2.toml",
        "algorithm = \"central\"\nnodes = 3\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
    );
    for args in [vec!["run", &path], vec!["list"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = distsync_to(&args, Stdio::from(full));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
}

/// A duration longer than a run's clock can hold (2^64 ns, about 584 years) is refused where it
/// is written, naming the field; it once wrapped around when converted to nanoseconds, so that
/// a uniform delay of ["1s", "18446744074s"] ran with bounds out of order and panicked.
#[test]
fn durations_past_the_clock_are_refused_naming_the_field() {
    let text = "algorithm = \"ricart-agrawala\"\nnodes = 3\nuntil = \"1s\"\n[network]\ndelay = { uniform = [\"1s\", \"18446744074s\"] }\n[workload]\nkind = \"saturated\"\nrequests = 1\n";
    let (code, _, err) = run_err("delay-past-the-clock.toml", text, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for needle in ["delay-past-the-clock.toml", "18446744074s", "584 years"] {
        assert!(err.contains(needle), "missing {needle}: {err}");
    }
    // The same set from the command line, and for another duration field.
    let ok = "algorithm = \"central\"\nnodes = 3\nuntil = \"1s\"\n[workload]\nkind = \"saturated\"\nrequests = 1\n";
    for (name, set, given) in [
        (
            "flag-past-the-clock.toml",
            "network.delay=\"20000000000s\"",
            "20000000000s",
        ),
        (
            "cs-past-the-clock.toml",
            "workload.cs=\"6000000h\"",
            "6000000h",
        ),
    ] {
        let (code, _, err) = run_err(name, ok, &["--set", set]);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(given) && err.contains("584 years"), "{err}");
    }
    // The longest duration that fits is taken.
    let (code, _, err) = run_err(
        "longest.toml",
        ok,
        &["--set", "workload.cs=\"18446744073s\""],
    );
    assert_ne!(code, Some(2), "{err}");
}

/// Runs `distsync ARGS` with standard output on /dev/full (Linux's always-full device) and
/// standard error captured, killed after a minute (a server that did not stop on the write
/// error would otherwise hold the test): its exit code (`None` if killed) and standard error.
fn into_full_stdout(args: &[&str]) -> (Option<i32>, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full, Linux's always-full device, opens");
    let mut child = Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if child.try_wait().unwrap().is_none() {
        let _ = child.kill();
    }
    let o = child.wait_with_output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every verb that prints to standard output, and clap's own help text, reports a full
/// standard output as a write error with exit code 2: never a panic (101), never a silent 0.
/// The verbs of a running cluster: `every_cluster_verb_reports_a_full_stdout_as_a_write_error`.
#[test]
fn every_verb_reports_a_full_stdout_as_a_write_error() {
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full");
    let tmp = scratch();
    let path = scenario(
        &tmp,
        "ok.toml",
        "algorithm = \"ricart-agrawala\"\nnodes = 3\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
    );
    let trace = tmp.path().join("run.jsonl").display().to_string();
    let o = distsync_to(&["run", &path, "--trace", &trace], Stdio::null());
    assert_eq!(o.status.code(), Some(0));
    // Two process events (the ones with clocks) for `clocks`.
    let seqs: Vec<String> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"lamport\""))
        .take(2)
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"].to_string())
        .collect();
    let stress_out = tmp.path().join("stress").display().to_string();
    let init_dir = tmp.path().join("cluster").display().to_string();
    let verbs: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["run", "--help"],
        vec!["list"],
        vec!["list", "--json"],
        vec!["run", &path],
        vec!["run", &path, "--json"],
        vec!["validate", &path],
        vec!["init", "central"],
        vec!["examples"],
        vec!["examples", "bully-eight-processes"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["simulate", "--algo", "central", "--nodes", "3"],
        vec!["clocks", "--a", &seqs[0], "--b", &seqs[1], &trace],
        vec!["compare", "--family", "mutex", "--nodes", "3"],
        vec!["sweep", "--algo", "central", "--param", "nodes=2,3"],
        vec!["check", "--algo", "central", "--nodes", "2"],
        vec!["trace", "render", &trace, "--svg", "-"],
        vec!["trace", "render", &trace, "--svg", "-", "--from", "1ms"],
        vec![
            "stress",
            "--algo",
            "central",
            "--seeds",
            "2",
            "--out",
            &stress_out,
        ],
        vec![
            "stress", "--algo", "central", "--seeds", "2", "--shard", "1/2",
        ],
        vec!["bench", "--quick", "--rows", "a"],
        vec!["web", "--listen", "127.0.0.1:0"],
        vec!["time", "serve", "--listen", "127.0.0.1:0"],
        vec!["time", "query", "127.0.0.1:1", "--timeout", "100ms"],
        vec!["cluster", "init", "--mutex", "central", "--dir", &init_dir]
            .into_iter()
            .chain(["--addr", "127.0.0.1:17101", "--addr", "127.0.0.1:17102"])
            .collect(),
    ];
    for args in verbs {
        let (code, err) = into_full_stdout(&args);
        assert_eq!(code, Some(2), "distsync {args:?}: {err}");
        assert!(
            err.contains("cannot write to standard output"),
            "distsync {args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "distsync {args:?}: {err}");
    }
    // `trace render` writes files and talks on stderr: a full stdout does not concern it.
    let svg = tmp.path().join("run.svg").display().to_string();
    let o = distsync_to(
        &["trace", "render", &trace, "--svg", &svg],
        Stdio::from(full().unwrap()),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("space-time diagram"), "{err}");
}

/// A running cluster's directory, brought down when the test ends (even on failure).
struct ClusterDir(std::path::PathBuf);

impl Drop for ClusterDir {
    fn drop(&mut self) {
        let _ = Command::new(env!("CARGO_BIN_EXE_distsync"))
            .args(["cluster", "down", "--dir"])
            .arg(&self.0)
            .output();
    }
}

/// The verbs of a running cluster (a local one, with clocks) report a full standard output as a
/// write error with exit code 2, as every other verb does: `cluster up`, `status`, `snapshot`,
/// `restart`, `stop`, `start` and `down`, `leader`, every `store` subcommand and `time status`.
/// (`lock`, `elect` and `node` print nothing there themselves: the command's output is the
/// command's.)
#[test]
fn every_cluster_verb_reports_a_full_stdout_as_a_write_error() {
    let tmp = scratch();
    let up = |dir: &std::path::Path| -> Vec<String> {
        let dir = dir.display().to_string();
        [
            "cluster",
            "up",
            "--nodes",
            "3",
            "--mutex",
            "ricart-agrawala",
            "--dir",
            &dir,
        ]
        .into_iter()
        .map(String::from)
        .chain(["--clock", "cristian"].map(String::from))
        .collect()
    };
    // `cluster up` into a full stdout: the error, and the nodes it started do not stay.
    let failed = ClusterDir(tmp.path().join("up-full"));
    let args = up(&failed.0);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, err) = into_full_stdout(&args);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot write to standard output"), "{err}");
    drop(failed);

    let running = ClusterDir(tmp.path().join("running"));
    let o = Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(up(&running.0))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = running.0.display().to_string();
    let client = running.0.join("client.toml").display().to_string();
    let node_file = running.0.join("cluster.toml").display().to_string();
    let verbs: Vec<Vec<&str>> = vec![
        vec!["cluster", "status", "--dir", &dir],
        vec!["leader", "--cluster", &client],
        vec![
            "time",
            "status",
            "--cluster",
            &node_file,
            "--timeout",
            "500ms",
        ],
        vec!["store", "--cluster", &client, "put", "a", "10"],
        vec!["store", "--cluster", &client, "add", "a", "5"],
        vec!["store", "--cluster", &client, "interest", "1%"],
        vec!["store", "--cluster", &client, "transfer", "a", "b", "1"],
        vec!["store", "--cluster", &client, "get", "a"],
        vec!["store", "--cluster", &client, "status"],
        vec![
            "store",
            "--cluster",
            &client,
            "send",
            "--from",
            "0",
            "--to",
            "1",
            "5",
        ],
        vec!["cluster", "snapshot", "--dir", &dir],
        vec!["cluster", "restart", "--id", "1", "--dir", &dir],
        vec!["cluster", "stop", "--id", "1", "--dir", &dir],
        vec!["cluster", "start", "--id", "1", "--dir", &dir],
        vec!["cluster", "down", "--dir", &dir],
    ];
    for args in verbs {
        let (code, err) = into_full_stdout(&args);
        assert_eq!(code, Some(2), "distsync {args:?}: {err}");
        assert!(
            err.contains("cannot write to standard output"),
            "distsync {args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "distsync {args:?}: {err}");
    }
}

/// Output files are checked before the work: a missing directory or a directory as the file is
/// refused at once, naming the flag (exit 2), with nothing written and nothing printed; before,
/// `trace render` read the whole trace and wrote its other outputs first, and `compare`, `sweep`
/// and `check` ran to the end.
#[test]
fn output_paths_are_checked_before_the_work() {
    let tmp = scratch();
    let path = scenario(
        &tmp,
        "ok.toml",
        "algorithm = \"ricart-agrawala\"\nnodes = 3\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
    );
    let trace = tmp.path().join("run.jsonl").display().to_string();
    let o = distsync_to(&["run", &path, "--trace", &trace], Stdio::null());
    assert_eq!(o.status.code(), Some(0));
    let svg = tmp.path().join("run.svg").display().to_string();
    let missing = tmp.path().join("no-such-dir/out").display().to_string();
    let dir = tmp.path().display().to_string();
    for (flag, bad) in [(&missing, "does not exist"), (&dir, "it is a directory")] {
        let cases: Vec<(&str, Vec<&str>)> = vec![
            (
                "--perfetto",
                vec!["trace", "render", &trace, "--svg", &svg, "--perfetto", flag],
            ),
            (
                "--shiviz",
                vec!["trace", "render", &trace, "--svg", &svg, "--shiviz", flag],
            ),
            (
                "--svg",
                vec!["trace", "render", &trace, "--svg", flag, "--from", "1ms"],
            ),
            (
                "--plot",
                vec![
                    "compare", "--family", "mutex", "--nodes", "3", "--plot", flag,
                ],
            ),
            (
                "--plot",
                vec![
                    "sweep",
                    "--algo",
                    "central",
                    "--param",
                    "nodes=2,3",
                    "--plot",
                    flag,
                ],
            ),
            (
                "--trace",
                vec![
                    "check", "--algo", "central", "--nodes", "2", "--trace", flag,
                ],
            ),
        ];
        for (name, args) in cases {
            let o = distsync_to(&args, Stdio::piped());
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains(&format!("{name} {flag}")) && err.contains(bad),
                "{args:?}: {err}"
            );
            assert!(o.stdout.is_empty(), "{args:?}: work done before the check");
            assert!(
                !std::path::Path::new(&svg).exists(),
                "{args:?}: --svg written before the check"
            );
        }
    }
}
