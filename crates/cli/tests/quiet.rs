//! `-q/--quiet`: the verbs that print notes on stderr (what was written where, hints, what a
//! default chose) print none, with the same standard output, files and exit code; errors still
//! show.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod scratch;

fn distsync(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `args` as given and with `quiet` (`-q` or `--quiet`, before or after the verb): the
/// first says `note` on stderr, the second nothing but warnings, and both print the same and
/// exit alike.
/// `setup` runs before each (to clear what the first wrote).
fn quiet_drops_the_note(dir: &Path, args: &[&str], quiet: &[&str], note: &str, setup: &dyn Fn()) {
    setup();
    let loud = distsync(dir, args);
    setup();
    let hushed = distsync(dir, quiet);
    let err = text(&loud.stderr);
    assert!(err.contains(note), "{args:?} says {note:?}: {err}");
    // Warnings still show; nothing else does.
    let quiet_err = text(&hushed.stderr);
    assert!(
        quiet_err.lines().all(|l| l.starts_with("warning: ")),
        "{quiet:?} prints no notes: {quiet_err}"
    );
    assert_eq!(hushed.status.code(), loud.status.code(), "{quiet:?}");
    // The same standard output (but for the measured time and memory, which vary).
    let timeless = |o: &Output| {
        let t = text(&o.stdout);
        let t = regex::Regex::new(r"[0-9.]+(ns|µs|us|ms|s),")
            .unwrap()
            .replace_all(&t, "TIME,");
        regex::Regex::new(r"[0-9]+ MB")
            .unwrap()
            .replace_all(&t, "MEMORY")
            .into_owned()
    };
    assert_eq!(timeless(&hushed), timeless(&loud), "{quiet:?}");
}

fn scratch_dir(name: &str) -> scratch::Scratch {
    let dir = scratch::path("distsync-quiet-", name);
    std::fs::create_dir(&*dir).unwrap();
    dir
}

#[test]
fn run_is_quiet_about_the_built_in_example_and_the_reproduce_hint() {
    let dir = scratch_dir("run");
    quiet_drops_the_note(
        &dir,
        &["run", "maekawa-plane"],
        &["-q", "run", "maekawa-plane"],
        "running the built-in example",
        &|| {},
    );
    let scenario = repo().join("scenarios/lamport-non-fifo.toml");
    let scenario = scenario.to_str().unwrap();
    quiet_drops_the_note(
        &dir,
        &["run", scenario],
        &["run", scenario, "--quiet"],
        "reproduce with",
        &|| {},
    );
}

#[test]
fn init_and_man_are_quiet_about_what_they_wrote() {
    let dir = scratch_dir("init");
    let file = dir.join("my.toml");
    let clear = || {
        let _ = std::fs::remove_file(&file);
    };
    quiet_drops_the_note(
        &dir,
        &["init", "ricart-agrawala", "--out", "my.toml"],
        &["init", "ricart-agrawala", "--out", "my.toml", "-q"],
        "wrote my.toml",
        &clear,
    );
    assert!(file.exists());
    let pages = dir.join("man");
    quiet_drops_the_note(
        &dir,
        &["man", "--out", "man"],
        &["--quiet", "man", "--out", "man"],
        "man pages",
        &|| {
            let _ = std::fs::remove_dir_all(&pages);
        },
    );
    assert!(pages.join("distsync-run.1").exists());
}

#[test]
fn trace_render_is_quiet_about_the_files_it_drew() {
    let dir = scratch_dir("trace");
    let scenario = repo().join("scenarios/ricart-agrawala-heavy.toml");
    let o = distsync(
        &dir,
        &["run", scenario.to_str().unwrap(), "--trace", "run.jsonl"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let args = [
        "trace",
        "render",
        "run.jsonl",
        "--svg",
        "run.svg",
        "--perfetto",
        "run.json",
    ];
    let mut quiet = args.to_vec();
    quiet.push("-q");
    quiet_drops_the_note(&dir, &args, &quiet, "space-time diagram", &|| {});
    assert!(dir.join("run.svg").exists() && dir.join("run.json").exists());
}

#[test]
fn check_is_quiet_about_the_trace_it_did_not_write() {
    let dir = scratch_dir("check");
    let args = [
        "check",
        "--algo",
        "ricart-agrawala",
        "--nodes",
        "2",
        "--trace",
        "cex.jsonl",
    ];
    let mut quiet = args.to_vec();
    quiet.push("-q");
    quiet_drops_the_note(&dir, &args, &quiet, "no counterexample", &|| {});
}

#[test]
fn errors_still_show_when_quiet() {
    let dir = scratch_dir("errors");
    let o = distsync(&dir, &["-q", "run", "no-such-file.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no-such-file.toml"), "{o:?}");
}

/// A warning is not a note: `cluster init -q` still says, as a warning, which host name this
/// machine cannot resolve (the cluster's machines and clients must), and writes the files; it
/// once printed it as a "note:" that `-q` nevertheless kept.
#[test]
fn cluster_init_warns_of_an_unresolved_name_when_quiet() {
    let dir = scratch_dir("init-warning");
    let o = distsync(
        &dir,
        &[
            "-q",
            "cluster",
            "init",
            "--mutex",
            "central",
            "--dir",
            "c",
            "--addr",
            "127.0.0.1:17601",
            "--addr",
            "node1.invalid:17602",
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.starts_with(
            "warning: --addr node1.invalid:17602: the host \"node1.invalid\" does not resolve"
        ),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(dir.join("c/cluster.toml").exists());
}
