//! `distsync stress`: exit codes (0 nothing found, 1 found, 2 bad input), the table, the JSON,
//! and a failure's scenario file that `distsync run` reproduces.

use std::process::{Command, Output};

mod scratch;

use scratch::Scratch;

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// `name` in a fresh scratch directory, removed when the returned value drops.
fn tmp(name: &str) -> Scratch {
    scratch::path("distsync-stress-verb-", name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn lamport_mutex_with_reordering_is_found_and_reproduced() {
    let out = tmp("lamport");
    let o = distsync(&[
        "stress",
        "--algo",
        "lamport-mutex",
        "--faults",
        "delay,reorder",
        "--seeds",
        "60",
        "--jobs",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{stdout}{}", text(&o.stderr));
    assert!(stdout.contains("mutual-exclusion"), "{stdout}");
    let line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("reproduce: "))
        .expect("a reproduce line");
    let file = line.strip_prefix("distsync run ").expect("the run command");
    assert!(file.starts_with(out.to_str().unwrap()), "{file}");
    // Running the file alone breaks the same property.
    let again = distsync(&["run", file]);
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stdout).contains("mutual-exclusion"));
}

#[test]
fn fifo_broadcast_breaks_causal_order_when_it_is_checked() {
    let out = tmp("fifo");
    let o = distsync(&[
        "stress",
        "--algo",
        "fifo-broadcast",
        "--faults",
        "delay,reorder",
        "--check",
        "causal",
        "--seeds",
        "40",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    let a = &v["algorithms"][0];
    assert_eq!(a["algorithm"], "fifo-broadcast");
    assert_eq!(a["runs"], 40);
    assert!(a["violations"]["causal-order"].as_u64().unwrap() > 0);
    let f = &a["failures"][0];
    assert!(f["reproduce"]
        .as_str()
        .unwrap()
        .starts_with("distsync run "));
    assert!(std::path::Path::new(f["file"].as_str().unwrap()).exists());
}

#[test]
fn nothing_found_exits_zero_with_the_table() {
    let o = distsync(&[
        "stress",
        "--algo",
        "ricart-agrawala,suzuki-kasami",
        "--seeds",
        "20",
        "--nodes",
        "2..4",
    ]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", text(&o.stderr));
    assert!(stdout.contains("ricart-agrawala"), "{stdout}");
    assert!(stdout.contains("suzuki-kasami"), "{stdout}");
    assert!(stdout.contains("nothing found"), "{stdout}");
    // Piped: no progress bar on stderr.
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
}

#[test]
fn bad_input_exits_two_naming_the_flag() {
    for (args, expected) in [
        (vec!["--algo", "lamport"], "lamport-mutex"),
        (
            vec!["--algo", "central", "--faults", "earthquake"],
            "--faults",
        ),
        (vec!["--algo", "central", "--nodes", "5..2"], "--nodes"),
        (vec!["--algo", "central", "--seeds", "0"], "--seeds"),
        (vec!["--algo", "central", "--check", "causal"], "--check"),
        (vec!["--family", "locks"], "--family"),
        (vec!["--algo", "central", "--jobs", "0"], "--jobs"),
    ] {
        let mut all = vec!["stress"];
        all.extend(args.iter());
        let o = distsync(&all);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Without `--out`, failures go to the user's state directory (`$XDG_STATE_HOME/distsync/stress`,
/// else `~/.local/state/distsync/stress`), never into the current directory.
#[test]
fn failures_go_to_the_state_directory_by_default() {
    let state = tmp("state");
    let home = tmp("home");
    let cwd = tmp("cwd");
    std::fs::create_dir_all(&*cwd).unwrap();
    std::fs::create_dir_all(&*home).unwrap();
    let stress = |xdg: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_distsync"));
        c.args([
            "stress",
            "--algo",
            "lamport-mutex",
            "--faults",
            "delay,reorder",
            "--seeds",
            "60",
        ])
        .current_dir(&*cwd)
        .env("HOME", &*home)
        .env_remove("XDG_STATE_HOME");
        if let Some(x) = xdg {
            c.env("XDG_STATE_HOME", x);
        }
        c.output().expect("the binary runs")
    };
    let reproduce = |o: &Output| {
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        text(&o.stdout)
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("reproduce: distsync run ")
                    .map(String::from)
            })
            .expect("a reproduce line")
    };
    let file = reproduce(&stress(Some(state.to_str().unwrap())));
    assert!(
        file.starts_with(state.join("distsync/stress").to_str().unwrap()),
        "{file}"
    );
    assert!(std::path::Path::new(&file).is_file(), "{file}");
    let file = reproduce(&stress(None));
    assert!(
        file.starts_with(home.join(".local/state/distsync/stress").to_str().unwrap()),
        "{file}"
    );
    assert_eq!(
        std::fs::read_dir(&*cwd).unwrap().count(),
        0,
        "the current directory stays empty"
    );
}

/// `--draw-assumptions`: lamport-mutex drawn with and without FIFO links fails only without
/// them, each failure said to be outside the assumptions (with the page that states it), and
/// the command exits 0; the same failures asked for with `--faults delay,reorder` exit 1.
#[test]
fn drawn_assumptions_tell_failures_outside_them_from_bugs() {
    let out = tmp("drawn");
    let o = distsync(&[
        "stress",
        "--algo",
        "lamport-mutex",
        "--draw-assumptions",
        "--seeds",
        "80",
        "--jobs",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}{}", text(&o.stderr));
    assert!(stdout.contains("assumptions drawn"), "{stdout}");
    assert!(
        stdout.contains("outside assumptions: links that are not FIFO — docs/faults.md"),
        "{stdout}"
    );
    assert!(stdout.contains("0 inside the assumptions"), "{stdout}");
    assert!(stdout.contains("drawn: not FIFO"), "{stdout}");
    assert!(!stdout.contains("INSIDE"), "{stdout}");
    assert!(
        stdout.contains("nothing found inside the assumptions"),
        "{stdout}"
    );
    // The file says why, and replays the failure.
    let line = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("reproduce: distsync run "))
        .expect("a reproduce line");
    let file = std::fs::read_to_string(line).unwrap();
    assert!(
        file.contains("# Outside the assumptions: links that are not FIFO (docs/faults.md)."),
        "{file}"
    );
    let again = distsync(&["run", line]);
    assert_eq!(again.status.code(), Some(1));
}
