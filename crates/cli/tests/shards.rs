//! Sharded campaigns: `stress`, `sweep` and `compare` split with `--shard K/N` into results
//! files that `--merge` combines into exactly the bytes (and exit code, and files written) of the
//! unsharded run; bad shard specs and mismatched results files refused with exit 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod scratch;

fn distsync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `args` with `--shard K/3` for K = 1..3, each shard's results into a file of `dir`, and
/// returns the files (each shard exits 0).
fn shards(dir: &Path, verb_args: &[&str]) -> Vec<PathBuf> {
    (1..=3)
        .map(|k| {
            let spec = format!("{k}/3");
            let mut args = verb_args.to_vec();
            args.extend(["--shard", spec.as_str()]);
            let o = distsync(&args);
            assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
            let file = dir.join(format!("shard-{k}.json"));
            std::fs::write(&file, &o.stdout).unwrap();
            file
        })
        .collect()
}

/// `verb --merge FILES extra...`.
fn merge(verb: &str, files: &[PathBuf], extra: &[&str]) -> Output {
    let mut args = vec![verb, "--merge"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(extra);
    distsync(&args)
}

/// The unsharded run and the merge print the same bytes and exit alike.
fn same(whole: &Output, merged: &Output) {
    assert_eq!(
        merged.status.code(),
        whole.status.code(),
        "{}",
        text(&merged.stderr)
    );
    assert!(!whole.stdout.is_empty());
    assert_eq!(
        text(&merged.stdout),
        text(&whole.stdout),
        "{}",
        text(&merged.stderr)
    );
}

#[test]
fn a_stress_split_in_three_merges_to_the_unsharded_bytes_and_failure_files() {
    let dir = scratch::path("distsync-shards-stress-", "d");
    std::fs::create_dir(&*dir).unwrap();
    let found = dir.join("found");
    let found = found.to_str().unwrap();
    // Lamport's algorithm over reordering links breaks mutual exclusion in some of these runs:
    // the merge must also write the same failing scenarios and reproduce lines.
    let campaign = [
        "stress",
        "--algo",
        "lamport-mutex,ricart-agrawala",
        "--faults",
        "delay,reorder",
        "--seeds",
        "20",
        "--jobs",
        "2",
    ];
    let mut args = campaign.to_vec();
    args.extend(["--out", found]);
    let whole = distsync(&args);
    assert_eq!(whole.status.code(), Some(1), "{}", text(&whole.stderr));
    assert!(text(&whole.stdout).contains("reproduce: distsync run"));
    let mut written: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(found)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    written.sort();
    assert!(!written.is_empty());
    std::fs::remove_dir_all(found).unwrap();

    let files = shards(&dir, &campaign);
    // Each shard holds a third of the runs (20 runs: 7, 7, 6 per algorithm).
    for (file, runs) in files.iter().zip([7, 7, 6]) {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        assert_eq!(v["runs"].as_array().unwrap().len(), 2 * runs, "{file:?}");
    }
    let merged = merge("stress", &files, &["--out", found]);
    same(&whole, &merged);
    let mut again: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(found)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    again.sort();
    assert_eq!(again, written);

    // The JSON too, and the shards in any order.
    let mut json = args.clone();
    json.push("--json");
    let whole = distsync(&json);
    let reversed: Vec<PathBuf> = files.iter().rev().cloned().collect();
    same(
        &whole,
        &merge("stress", &reversed, &["--out", found, "--json"]),
    );
}

#[test]
fn a_sweep_split_in_three_merges_to_the_unsharded_table_json_and_plot() {
    let dir = scratch::path("distsync-shards-sweep-", "d");
    std::fs::create_dir(&*dir).unwrap();
    let campaign = [
        "sweep",
        "--algo",
        "ricart-agrawala,suzuki-kasami",
        "--param",
        "nodes=2..5",
        "--metric",
        "sync_delay_ns.mean",
        "--seeds",
        "2",
    ];
    let files = shards(&dir, &campaign);
    let whole = distsync(&campaign);
    same(&whole, &merge("sweep", &files, &[]));
    let mut json = campaign.to_vec();
    json.push("--json");
    same(&distsync(&json), &merge("sweep", &files, &["--json"]));
    let (a, b) = (dir.join("whole.svg"), dir.join("merged.svg"));
    let mut plot = campaign.to_vec();
    plot.extend(["--plot", a.to_str().unwrap()]);
    same(
        &distsync(&plot),
        &merge("sweep", &files, &["--plot", b.to_str().unwrap()]),
    );
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn a_comparison_split_in_three_merges_to_the_unsharded_bytes_for_both_families() {
    let dir = scratch::path("distsync-shards-compare-", "d");
    std::fs::create_dir(&*dir).unwrap();
    let mutex = ["compare", "--nodes", "3,5", "--full"];
    let files = shards(&dir, &["compare", "--nodes", "3,5"]);
    same(&distsync(&mutex), &merge("compare", &files, &["--full"]));
    same(
        &distsync(&["compare", "--nodes", "3,5", "--json"]),
        &merge("compare", &files, &["--json"]),
    );
    same(
        &distsync(&["compare", "--nodes", "3,5", "--summary"]),
        &merge("compare", &files, &["--summary"]),
    );
    let election = [
        "compare", "--family", "election", "--nodes", "4,5", "--seed", "7",
    ];
    let edir = dir.join("election");
    std::fs::create_dir(&edir).unwrap();
    let files = shards(&edir, &election);
    same(&distsync(&election), &merge("compare", &files, &[]));
    let (a, b) = (dir.join("whole.svg"), dir.join("merged.svg"));
    let mut plot = election.to_vec();
    plot.extend(["--plot", a.to_str().unwrap()]);
    same(
        &distsync(&plot),
        &merge("compare", &files, &["--plot", b.to_str().unwrap()]),
    );
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn bad_shard_specs_are_refused_naming_the_flag() {
    let verbs: [&[&str]; 3] = [
        &["stress", "--algo", "ricart-agrawala", "--seeds", "2"],
        &[
            "sweep",
            "--algo",
            "ricart-agrawala",
            "--param",
            "nodes=2..3",
        ],
        &["compare", "--nodes", "3"],
    ];
    for verb in verbs {
        for bad in ["0/3", "4/3", "1/0", "x", "1/", "-1/3"] {
            let spec = format!("--shard={bad}");
            let mut args = verb.to_vec();
            args.push(&spec);
            let o = distsync(&args);
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains("--shard"), "{args:?}: {err}");
            assert!(err.contains("K/N"), "{args:?}: {err}");
        }
    }
}

#[test]
fn merges_of_incomplete_duplicated_or_mixed_results_are_refused() {
    let dir = scratch::path("distsync-shards-bad-", "d");
    std::fs::create_dir(&*dir).unwrap();
    let campaign = ["stress", "--algo", "ricart-agrawala", "--seeds", "4"];
    let files = shards(&dir, &campaign);
    let name = |p: &PathBuf| p.to_str().unwrap().to_string();

    let o = merge("stress", &files[..2], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("shard 3/3 missing"), "{err}");

    let twice = [files[0].clone(), files[1].clone(), files[1].clone()];
    let o = merge("stress", &twice, &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("are both shard 2/3"), "{err}");

    // A shard of another campaign (another seed).
    let other_dir = dir.join("other");
    std::fs::create_dir(&other_dir).unwrap();
    let mut other = campaign.to_vec();
    other.extend(["--seed", "9"]);
    let others = shards(&other_dir, &other);
    let mixed = [files[0].clone(), files[1].clone(), others[2].clone()];
    let o = merge("stress", &mixed, &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("different campaigns (`seed` differs)"),
        "{err}"
    );
    assert!(err.contains(&name(&others[2])), "{err}");

    // Another verb's results, and a file that is not a results file at all.
    let o = merge("sweep", &files, &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("`stress` campaign's results"), "{err}");
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "{\"runs\": [").unwrap();
    let o = merge("stress", std::slice::from_ref(&junk), &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(&name(&junk)), "{err}");

    // A campaign flag beside --merge: the campaign comes from the files.
    let o = merge("stress", &files, &["--seeds", "5"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--seeds"), "{}", text(&o.stderr));
}

/// The scheduler manifests of docs/stress.md: as many shards as the scheduler starts, each task
/// mapped to a shard from 1 to N, a results file named by its shard and renamed when complete.
#[test]
fn the_kubernetes_and_slurm_manifests_run_every_shard_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let k8s = std::fs::read_to_string(root.join("contrib/k8s/stress-job.yaml")).unwrap();
    let value = |text: &str, key: &str| -> String {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .unwrap_or_else(|| panic!("no `{key}`"))
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(value(&k8s, "completionMode:"), "Indexed");
    let n = value(&k8s, "completions:");
    assert!(k8s.contains("K=$((JOB_COMPLETION_INDEX + 1))"), "{k8s}");
    assert!(k8s.contains(&format!("--shard \"$K/{n}\"")), "{k8s}");
    assert!(k8s.contains("distsync stress --merge /results/stress-*.json"));
    assert!(k8s.contains("mv \"/results/stress-$K.json.tmp\" \"/results/stress-$K.json\""));

    let slurm = std::fs::read_to_string(root.join("contrib/slurm/stress.sbatch")).unwrap();
    let array = value(&slurm, "#SBATCH --array=");
    assert_eq!(array, format!("1-{n}"), "the same N as the Kubernetes Job");
    assert!(slurm.contains(&format!("N={n}\n")), "{slurm}");
    assert!(slurm.contains("K=${SLURM_ARRAY_TASK_ID}"), "{slurm}");
    assert!(slurm.contains("--shard \"$K/$N\""), "{slurm}");
    assert!(slurm.contains("--dependency=afterok:$jobid"), "{slurm}");
    // The shell is valid.
    let ok = Command::new("bash")
        .args([
            "-n",
            root.join("contrib/slurm/stress.sbatch").to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(ok.success());
}
