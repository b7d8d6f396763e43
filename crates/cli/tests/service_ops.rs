//! Operating the lock service (issue 35, item 7): `cluster up` holds its directory's lock (a
//! second `up` at once refuses, naming the holder, and `down` stops every node either started);
//! restart in place upgrades a directory made before per-role keys; and nodes negotiate a
//! protocol version (`DISTSYNC_TEST_PROTOCOL` makes a process speak another range): a node of
//! no common version is refused with a message naming both, one that shares a version joins.

mod lock_common;

use lock_common::*;
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The pids of the running processes whose command line names `dir`'s cluster file.
fn nodes_of(dir: &Path) -> Vec<u32> {
    let file = fs::canonicalize(dir.join("cluster.toml")).unwrap();
    let file = file.as_os_str().as_encoded_bytes().to_vec();
    let mut pids = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args.contains(&&b"node"[..]) && args.contains(&&file[..]) && alive(pid) {
            pids.push(pid);
        }
    }
    pids
}

/// Another command holding `dir`'s directory lock for `secs` seconds (flock(1) on the lock
/// file, as the cluster verbs take it), once it holds it.
fn hold_directory_lock(dir: &Path, secs: &str) -> std::process::Child {
    let holder = Command::new("flock")
        .arg("--no-fork")
        .arg(dir.join("cluster.lock"))
        .args(["sleep", secs])
        .spawn()
        .unwrap();
    wait_for("flock holds the lock", Duration::from_secs(5), || {
        Command::new("flock")
            .args(["-n"])
            .arg(dir.join("cluster.lock"))
            .arg("true")
            .status()
            .is_ok_and(|s| !s.success())
    });
    holder
}

fn up_args() -> Vec<&'static str> {
    vec![
        "up",
        "--nodes",
        "3",
        "--mutex",
        "ricart-agrawala",
        "--base-port",
        "0",
        "--heartbeat",
        "50ms",
        "--heartbeat-timeout",
        "500ms",
    ]
}

#[test]
fn a_second_cluster_up_in_the_same_directory_refuses_naming_the_holder() {
    let _g = lock_guard();
    let tmp = scratch("dir-lock");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    // Another command holds the directory (flock(1) on the lock file, as `up` takes it).
    fs::write(dir.join("cluster.lock"), "pid 4242: distsync cluster up").unwrap();
    let mut holder = hold_directory_lock(&dir, "30");
    let out = cluster(&dir, &up_args());
    let _ = holder.kill();
    let _ = holder.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("another command is at work in this directory")
            && err.contains("pid 4242: distsync cluster up"),
        "the holder is named: {err}"
    );
    assert!(!dir.join("cluster.toml").exists(), "nothing was written");

    // Two `up` at once for real: one starts the cluster, the other refuses (or finds it
    // running), and `down` leaves no node of the directory running.
    let spawn = || {
        Command::new(BIN)
            .arg("cluster")
            .args(up_args())
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b): (Output, Output) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let ok = [&a, &b].iter().filter(|o| o.status.success()).count();
    assert_eq!(
        ok,
        1,
        "exactly one `up` started the cluster: {}\n{}",
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr)
    );
    assert_eq!(nodes_of(&dir).len(), 3, "three nodes run");
    assert!(cluster(&dir, &["down"]).status.success());
    assert_eq!(nodes_of(&dir), Vec::<u32>::new(), "no node is left running");
}

/// `cluster start` and `cluster restart` take the directory's lock as `up` does: while another
/// command holds it they wait, starting nothing; and two of them at once leave exactly the
/// cluster's nodes running, none that `down` does not know.
#[test]
fn cluster_start_and_restart_take_the_directory_lock() {
    let _g = lock_guard();
    let tmp = scratch("dir-lock-start");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    let out = cluster(&dir, &up_args());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(cluster(&dir, &["stop", "--id", "1"]).status.success());
    assert_eq!(nodes_of(&dir).len(), 2);
    let run = |args: &[&str]| {
        Command::new(BIN)
            .arg("cluster")
            .args(args)
            .arg("--dir")
            .arg(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // Another command holds the directory: `start` waits for it and starts nothing meanwhile.
    let mut holder = hold_directory_lock(&dir, "2");
    let waiting = run(&["start", "--id", "1"]);
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(
        nodes_of(&dir).len(),
        2,
        "`cluster start` started node 1 while another command held the directory"
    );
    holder.wait().unwrap();
    let out = waiting.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(nodes_of(&dir).len(), 3);

    // Two at once, for real: one starts node 1, the other finds it running.
    assert!(cluster(&dir, &["stop", "--id", "1"]).status.success());
    let (a, b) = (run(&["start", "--id", "1"]), run(&["start", "--id", "1"]));
    let (a, b): (Output, Output) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let ok = [&a, &b].iter().filter(|o| o.status.success()).count();
    assert_eq!(
        ok,
        1,
        "exactly one `start` started node 1: {}\n{}",
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr)
    );
    let other = if a.status.success() { &b } else { &a };
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("already running"),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
    assert_eq!(nodes_of(&dir).len(), 3, "three nodes run");
    // Two restarts of every node at once: one after the other, three nodes in the end.
    let (a, b) = (run(&["restart"]), run(&["restart"]));
    let (a, b): (Output, Output) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for o in [&a, &b] {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(
        nodes_of(&dir).len(),
        3,
        "three nodes run after two restarts"
    );
    assert!(cluster(&dir, &["down"]).status.success());
    assert_eq!(nodes_of(&dir), Vec::<u32>::new(), "no node is left running");
}

#[test]
fn restart_in_place_gives_an_old_directory_a_client_key_of_its_own() {
    let _g = lock_guard();
    let tmp = scratch("rekey");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    cluster_up_ok(
        &dir,
        &[
            "--nodes",
            "2",
            "--mutex",
            "ricart-agrawala",
            "--base-port",
            "0",
        ],
    );
    assert!(cluster(&dir, &["down"]).status.success());
    // Made before per-role keys: no client key, and a client file holding the node key.
    let file = dir.join("cluster.toml");
    let text = fs::read_to_string(&file).unwrap();
    let old: String = text
        .lines()
        .filter(|l| !l.starts_with("client_secret"))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(&file, &old).unwrap();
    let node_key = old
        .lines()
        .find(|l| l.starts_with("secret"))
        .unwrap()
        .to_string();
    fs::write(dir.join("old-client.toml"), &old).unwrap();
    let out = cluster_up_ok(&dir, &[]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("upgraded") && said.contains("per-role keys"),
        "{said}"
    );
    let now = fs::read_to_string(&file).unwrap();
    assert!(now.contains(&node_key), "the node key is kept");
    let client_key = now
        .lines()
        .find(|l| l.starts_with("client_secret"))
        .expect("a client key")
        .trim_start_matches("client_secret = ")
        .to_string();
    assert!(!node_key.contains(&client_key), "a key of its own");
    let client = fs::read_to_string(dir.join("client.toml")).unwrap();
    assert!(client.contains(&client_key) && !client.contains(&node_key));
    let lock = |file: &Path| {
        Command::new(BIN)
            .args(["lock", "--timeout", "10s", "--cluster"])
            .arg(file)
            .args(["k", "--", "true"])
            .output()
            .unwrap()
    };
    let out = lock(&dir.join("client.toml"));
    assert!(
        out.status.success(),
        "the new client file works: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The old client file held the node key: no longer accepted from a client.
    let out = Command::new(BIN)
        .args(["lock", "--timeout", "3s", "--cluster"])
        .arg(dir.join("old-client.toml"))
        .args(["k", "--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "the node key opens no client link");
    // Up again in place: nothing more to upgrade.
    assert!(cluster(&dir, &["down"]).status.success());
    let out = cluster_up_ok(&dir, &[]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("upgraded"));
    assert_eq!(fs::read_to_string(&file).unwrap(), now);
}

/// `distsync cluster ARGS --dir DIR` speaking the protocol versions `range`.
fn cluster_speaking(dir: &Path, range: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("cluster")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .env("DISTSYNC_TEST_PROTOCOL", range)
        .output()
        .unwrap()
}

#[test]
fn a_node_of_no_common_version_is_refused_naming_both_and_one_sharing_a_version_joins() {
    let _g = lock_guard();
    let tmp = scratch("versions");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    three_nodes_up(&dir);
    wait_for_status(&dir, "a view of all three", Duration::from_secs(20), |s| {
        s.matches("[0, 1, 2]").count() == 3 && !s.contains("changing")
    });
    // Node 2 upgraded to a release that speaks version 5 only: refused both ways.
    assert!(cluster(&dir, &["stop", "--id", "2"]).status.success());
    // A client of version 5 only, while node 2 is down: every node refuses it, and it says why.
    let out = Command::new(BIN)
        .args(["lock", "--timeout", "3s", "--cluster"])
        .arg(dir.join("client.toml"))
        .args(["--node", "0", "v", "--", "true"])
        .env("DISTSYNC_TEST_PROTOCOL", "5")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("the node speaks protocol version 4, this side protocol version 5"),
        "exit {:?}: {err}",
        out.status.code()
    );
    let out = cluster_speaking(&dir, "5", &["start", "--id", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = |i: u32| fs::read_to_string(dir.join(format!("node-{i}.log"))).unwrap();
    wait_for(
        "node 0 refuses node 2's version",
        Duration::from_secs(10),
        || {
            log(0)
                .contains("the other side speaks protocol version 5, this node protocol version 4")
        },
    );
    wait_for(
        "node 2 is told node 0's version",
        Duration::from_secs(10),
        || log(2).contains("the node speaks protocol version 4, this side protocol version 5"),
    );
    let status = cluster(&dir, &["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.lines()
            .find(|l| l.starts_with("node 2:"))
            .is_some_and(|l| l.contains("protocol version")),
        "status names the versions: {text}"
    );
    // The same release speaking versions 4 and 5 (a rolling upgrade's new node): it joins.
    assert!(cluster(&dir, &["stop", "--id", "2"]).status.success());
    let out = cluster_speaking(&dir, "4-5", &["start", "--id", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for_status(
        &dir,
        "node 2 back in the view",
        Duration::from_secs(20),
        |s| s.matches("[0, 1, 2]").count() == 3 && !s.contains("changing"),
    );
    let out = Command::new(BIN)
        .args(["lock", "--timeout", "10s", "--cluster"])
        .arg(dir.join("client.toml"))
        .args(["--node", "2", "v", "--", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An authenticated client that sends malformed frames, one per connection, 300 times: the
/// node closes each connection and says so at a bounded rate (five lines a window, then one
/// summary line counting the rest), not a line each (503 KB for 3,000 before).
#[test]
fn malformed_frames_from_a_client_are_logged_at_a_bounded_rate() {
    let _g = lock_guard();
    let tmp = scratch("malformed");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    cluster_up_ok(
        &dir,
        &[
            "--nodes",
            "2",
            "--mutex",
            "ricart-agrawala",
            "--base-port",
            "0",
        ],
    );
    let client = distsync_net::Cluster::load(&dir.join("client.toml")).unwrap();
    let addr = client.addrs[0];
    let rt = distsync_net::runtime().unwrap();
    rt.block_on(async {
        for _ in 0..300 {
            let s = distsync_net::tokio::net::TcpStream::connect(addr)
                .await
                .unwrap();
            let (mut r, mut w) = distsync_net::connection::initiate(
                s,
                client.client_secret(),
                distsync_net::auth::Role::Client,
            )
            .await
            .unwrap();
            w.send(&vec![0xffu8; 64]).await.unwrap();
            let end = r.recv::<distsync_net::wire::ClientReply>().await;
            assert!(!matches!(end, Ok(Some(_))), "no reply to garbage");
        }
    });
    let count = |text: &str| -> (usize, u64) {
        let single = text
            .lines()
            .filter(|l| l.contains("closing client connection: malformed message"))
            .count();
        let summed = text
            .lines()
            .filter_map(|l| {
                let at = l.find("more closed client connections")?;
                l[..at].split_whitespace().last()?.parse::<u64>().ok()
            })
            .sum::<u64>();
        (single, summed)
    };
    let log = dir.join("node-0.log");
    wait_for(
        "every closed connection is counted in the log",
        Duration::from_secs(20),
        || {
            let (single, summed) = count(&fs::read_to_string(&log).unwrap());
            single as u64 + summed >= 300
        },
    );
    let text = fs::read_to_string(&log).unwrap();
    let (single, summed) = count(&text);
    assert_eq!(single as u64 + summed, 300, "{text}");
    assert!(single <= 15, "{single} lines for 300 malformed frames");
}

/// A key file that other users can read is used, with a warning naming it and the fix; once
/// private (or in a private directory, as `cluster up` makes), no warning.
#[test]
fn a_key_file_readable_by_others_is_warned_about() {
    use std::os::unix::fs::PermissionsExt;
    let _g = lock_guard();
    let tmp = scratch("readable");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    cluster_up_ok(
        &dir,
        &[
            "--nodes",
            "2",
            "--mutex",
            "ricart-agrawala",
            "--base-port",
            "0",
        ],
    );
    let open = dir.join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o755)).unwrap();
    let file = open.join("client.toml");
    fs::copy(dir.join("client.toml"), &file).unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
    let leader = |file: &Path| {
        Command::new(BIN)
            .args(["leader", "--cluster"])
            .arg(file)
            .output()
            .unwrap()
    };
    let out = leader(&file);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning")
            && err.contains("open/client.toml: readable by other users (mode 644")
            && err.contains("chmod 600"),
        "{err}"
    );
    fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
    let out = leader(&file);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("readable by other users"),
        "a private file is not warned about"
    );
    let out = leader(&dir.join("client.toml"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("readable by other users"));
}

/// maekawa-basic can deadlock by design: the service refuses to run it, with the reason and
/// what to use instead, before anything is written or started.
#[test]
fn the_service_refuses_maekawa_basic_with_the_reason() {
    let tmp = scratch("maekawa-basic");
    let dir = tmp.path().to_path_buf();
    let out = cluster(
        &dir,
        &[
            "up",
            "--nodes",
            "3",
            "--mutex",
            "maekawa-basic",
            "--base-port",
            "0",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--mutex")
            && err.contains("can deadlock by design")
            && err.contains("`maekawa`"),
        "{err}"
    );
    assert!(!dir.join("cluster.toml").exists(), "nothing was written");
}

/// Every node's epoch mark at the last round (no epoch left for a view, and a majority vouches
/// for it, so nothing lowers it): `cluster status` says the cluster is not serving and why, and
/// exits 1 (it showed the nodes up and exited 0).
#[test]
fn cluster_status_says_so_and_exits_1_when_no_epoch_is_left() {
    let _g = lock_guard();
    let tmp = scratch("wedged");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    three_nodes_up(&dir);
    assert!(cluster(&dir, &["down"]).status.success());
    for i in 0..3 {
        fs::write(dir.join(format!("node-{i}.epoch")), "epoch 4294967295\n").unwrap();
    }
    cluster_up_ok(&dir, &[]);
    let until = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let out = cluster(&dir, &["status"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if text.contains("NOT SERVING: no epoch left above the highest seen") {
            assert_eq!(out.status.code(), Some(1), "{text}");
            break;
        }
        assert!(
            std::time::Instant::now() < until,
            "status never said so: {text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let j = cluster(&dir, &["status", "--json"]);
    assert_eq!(j.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert!(
        j["nodes"].as_array().unwrap().iter().any(|n| n["problem"]
            .as_str()
            .is_some_and(|p| p.contains("no epoch left"))),
        "{j}"
    );
}
