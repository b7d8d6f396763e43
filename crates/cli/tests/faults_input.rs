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

fn scenario(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("distsync-faults-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn fields_of_other_algorithms_are_refused_with_the_field_named() {
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
    ] {
        let path = scenario(name, text);
        let o = distsync_to(&["run", &path], Stdio::piped());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("`{field}`")), "{name}: {err}");
        assert!(err.contains(name), "{name}: {err}");
    }
    // The same fields where they belong are accepted.
    let path = scenario(
        "token-holder.toml",
        "algorithm = \"suzuki-kasami\"\nnodes = 3\nholder = 1\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
    );
    assert_eq!(
        distsync_to(&["run", &path], Stdio::piped()).status.code(),
        Some(0)
    );
}

#[test]
fn output_that_cannot_be_written_is_an_error() {
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(_) = full() else {
        println!("skipped: /dev/full is not available on this system");
        return;
    };
    let path = scenario(
        "ok.toml",
        "algorithm = \"central\"\nnodes = 3\n[workload]\nkind = \"saturated\"\nrequests = 1\n",
    );
    for args in [
        vec!["run", &path],
        vec!["run", &path, "--json"],
        vec!["list"],
    ] {
        let o = distsync_to(&args, Stdio::from(full().unwrap()));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(
            err.contains("cannot write to standard output"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
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
