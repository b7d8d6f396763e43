//! Adding and removing a member without a new cluster (issue 37): `cluster add --addr` and
//! `cluster remove ID`, admin requests to the leader, which commits the new roster with a view
//! change a majority of the current roster accepts. Fencing tokens rise across every change, a
//! removed node is refused, and a change goes through while a node is down. Key rotation
//! without a restart: `cluster rekey`.

mod lock_common;

use lock_common::*;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// `lock` on `node` (through the cluster file of `dir`); the fencing token it was granted.
fn token_via(dir: &Path, node: u32) -> u64 {
    let out = Command::new(BIN)
        .args([
            "lock",
            "--timeout",
            "30s",
            "--node",
            &node.to_string(),
            "--cluster",
        ])
        .arg(dir.join("cluster.toml"))
        .args(["x", "-c", "echo $DISTSYNC_FENCING_TOKEN"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lock via node {node}: {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {said:?}"))
}

/// Waits until every node of `ids` is in one open view whose members are `ids` (the other
/// nodes of the file may be down: `cluster status` then exits 1).
fn wait_for_members(dir: &Path, ids: &[u32]) -> String {
    let members = format!("{ids:?}");
    let mut text = String::new();
    let ready = |s: &str| {
        ids.iter().all(|i| {
            s.lines().any(|l| {
                l.starts_with(&format!("node {i}: "))
                    && l.contains(", up; ")
                    && l.contains(&format!(" {members}, holding"))
            })
        })
    };
    wait_for(
        &format!("one open view of {members}"),
        Duration::from_secs(30),
        || {
            text = String::from_utf8_lossy(&cluster(dir, &["status"]).stdout).to_string();
            ready(&text)
        },
    );
    text
}

fn ok(out: &std::process::Output, what: &str) -> String {
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{what}: {said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

#[test]
fn a_cluster_grows_by_a_node_and_shrinks_back_with_tokens_rising() {
    let _g = lock_guard();
    let tmp = scratch("grow");
    let dir = tmp.path().join("nodes");
    fs::create_dir(&dir).unwrap();
    let _down = Down(dir.clone());
    three_nodes_up(&dir);
    let before = token_via(&dir, 0);

    // Grown by node 3: the leader commits the roster, the files list it, the node starts and
    // joins the view.
    let port = free_ports(1)[0];
    let addr = format!("127.0.0.1:{port}");
    let said = ok(&cluster(&dir, &["add", "--addr", &addr]), "cluster add");
    assert!(
        said.contains(&format!("node 3 at {addr}: added to the roster")),
        "{said}"
    );
    let file = fs::read_to_string(dir.join("cluster.toml")).unwrap();
    assert!(file.contains(&addr), "{file}");
    assert!(
        fs::read_to_string(dir.join("client.toml"))
            .unwrap()
            .contains(&addr),
        "the client file lists the new node"
    );
    let four = fs::copy(dir.join("cluster.toml"), tmp.path().join("four.toml"));
    four.unwrap();
    wait_for_members(&dir, &[0, 1, 2, 3]);
    // A lock granted on the new roster, through the new node: its token is above every token
    // granted before the change (a later view's epoch).
    let grown = token_via(&dir, 3);
    assert!(grown > before, "{grown} > {before}");
    assert!(
        grown >> 32 > before >> 32,
        "a later view: {grown:x} {before:x}"
    );
    let again = token_via(&dir, 1);
    assert!(again > grown, "{again} > {grown}");

    // Shrunk back: node 3 stopped, then removed by the next leader.
    let said = ok(&cluster(&dir, &["remove", "3"]), "cluster remove");
    assert!(said.contains("node 3: removed from the roster"), "{said}");
    assert!(!fs::read_to_string(dir.join("cluster.toml"))
        .unwrap()
        .contains(&addr));
    wait_for_members(&dir, &[0, 1, 2]);
    let shrunk = token_via(&dir, 0);
    assert!(shrunk > again, "{shrunk} > {again}");

    // The removed node started again from the old four-node file (another directory: it
    // never heard of its removal) is refused by every node, and grants nothing.
    let old = tmp.path().join("old");
    fs::create_dir(&old).unwrap();
    fs::copy(tmp.path().join("four.toml"), old.join("cluster.toml")).unwrap();
    let mut removed = Command::new(BIN)
        .args(["node", "--id", "3", "--cluster"])
        .arg(old.join("cluster.toml"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let refused = "refused connection: node 3 is not a peer of node 0";
    wait_for("node 0 refuses node 3", Duration::from_secs(20), || {
        fs::read_to_string(dir.join("node-0.log")).is_ok_and(|l| l.contains(refused))
    });
    let out = Command::new(BIN)
        .args(["lock", "--timeout", "2s", "--node", "3", "--cluster"])
        .arg(old.join("cluster.toml"))
        .args(["y", "-c", "true"])
        .output()
        .unwrap();
    let _ = removed.kill();
    let _ = removed.wait();
    // Node 3 answers its client but, refused by the others, forms no majority: no grant.
    assert!(
        !out.status.success(),
        "a lock through the removed node: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for_members(&dir, &[0, 1, 2]);
}

#[test]
fn a_node_is_added_while_another_is_down() {
    let _g = lock_guard();
    let tmp = scratch("add-down");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    three_nodes_up(&dir);
    let before = token_via(&dir, 2);
    ok(
        &cluster(&dir, &["stop", "--id", "1"]),
        "cluster stop --id 1",
    );
    // Nodes 0 and 2 are a majority of the roster of three: the change commits.
    let port = free_ports(1)[0];
    let addr = format!("127.0.0.1:{port}");
    let said = ok(&cluster(&dir, &["add", "--addr", &addr]), "cluster add");
    assert!(said.contains("added to the roster"), "{said}");
    wait_for_members(&dir, &[0, 2, 3]);
    let grown = token_via(&dir, 0);
    assert!(grown >> 32 > before >> 32, "{grown:x} {before:x}");
    // Node 1 back: it joins the roster of four.
    ok(
        &cluster(&dir, &["start", "--id", "1"]),
        "cluster start --id 1",
    );
    wait_for_members(&dir, &[0, 1, 2, 3]);
    let after = token_via(&dir, 1);
    assert!(after > grown, "{after} > {grown}");
}

/// `cluster rekey`: new keys in every node with no restart; an old client file works during the
/// window and is refused after it, the new one works.
#[test]
fn keys_are_rotated_without_a_restart() {
    let _g = lock_guard();
    let tmp = scratch("rekey");
    let dir = tmp.path().join("nodes");
    fs::create_dir(&dir).unwrap();
    let _down = Down(dir.clone());
    three_nodes_up(&dir);
    let pids: Vec<u32> = (0..3).map(|i| pid_of(&dir, i)).collect();
    let old = tmp.path().join("old-client.toml");
    fs::copy(dir.join("client.toml"), &old).unwrap();
    let lock = |file: &Path| {
        Command::new(BIN)
            .args(["lock", "--timeout", "10s", "--cluster"])
            .arg(file)
            .args(["x", "-c", "true"])
            .output()
            .unwrap()
    };
    let said = ok(
        &cluster(&dir, &["rekey", "--window", "3s"]),
        "cluster rekey",
    );
    let window_end = std::time::Instant::now() + Duration::from_secs(3);
    assert_eq!(
        said.matches("new keys stored and accepted").count(),
        3,
        "{said}"
    );
    assert_ne!(
        fs::read_to_string(&old).unwrap(),
        fs::read_to_string(dir.join("client.toml")).unwrap(),
        "a new client key"
    );
    // Within the window: the old client key and the new one both work.
    ok(
        &lock(&old),
        "a lock with the old client file within the window",
    );
    assert!(
        std::time::Instant::now() < window_end,
        "the machine is too slow for this window"
    );
    ok(
        &lock(&dir.join("client.toml")),
        "a lock with the new client file",
    );
    // After it: the old one is refused, the new one works, and no node restarted.
    std::thread::sleep(window_end.saturating_duration_since(std::time::Instant::now()));
    let out = lock(&old);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the old client key after the window: {err}"
    );
    assert!(err.contains("does not accept this side's key"), "{err}");
    ok(
        &lock(&dir.join("client.toml")),
        "a lock with the new client file",
    );
    let now: Vec<u32> = (0..3).map(|i| pid_of(&dir, i)).collect();
    assert_eq!(now, pids, "no node restarted");
    assert!(pids.iter().all(|&p| alive(p)));
    // The nodes' links dial with the new node key now: a node restarted reconnects.
    ok(
        &cluster(&dir, &["restart", "--id", "1"]),
        "cluster restart --id 1",
    );
    wait_for_members(&dir, &[0, 1, 2]);
}

/// Bad input to `add` and `remove` is refused before anything is asked, naming the flag.
#[test]
fn add_and_remove_refuse_bad_input_naming_the_flag() {
    let tmp = scratch("member-input");
    let dir = tmp.path();
    let out = Command::new(BIN)
        .args(["cluster", "init", "--mutex", "ricart-agrawala"])
        .args([
            "--addr",
            "127.0.0.1:7000",
            "--addr",
            "127.0.0.1:7001",
            "--dir",
        ])
        .arg(dir)
        .output()
        .unwrap();
    ok(&out, "cluster init");
    for (args, says) in [
        (&["add", "--addr", "127.0.0.1"][..], "--addr: "),
        (&["add", "--addr", "127.0.0.1:7001"], "also the address"),
        (
            &["add", "--addr", "127.0.0.1:7002", "--id", "1"],
            "--id 1: ",
        ),
        (&["remove", "7"], "ID 7: "),
    ] {
        let out = cluster(dir, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Only the client file: no admin request.
    let users = tmp.path().join("users");
    fs::create_dir(&users).unwrap();
    fs::copy(dir.join("client.toml"), users.join("client.toml")).unwrap();
    for args in [
        &["add", "--addr", "127.0.0.1:7002"][..],
        &["remove", "1"],
        &["rekey"],
    ] {
        let out = cluster(&users, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("only the client file is here"), "{err}");
    }
}

/// The three-host walk-through of docs/net.md grown by a fourth host and operated from one
/// admin machine: nodes 0-2 on hosts 10.77.0.1-3 (network namespaces), the operator on the
/// clients' host with a copy of the cluster file; `cluster add --addr 10.77.0.4:7000` there,
/// node 3 started on the fourth host as `add` prints, a lock through it, `cluster remove 3`,
/// and `cluster stop` of every node from the admin machine. `#[ignore]`d with its need (CI runs
/// it with `--ignored`); run, it fails with the reason where namespaces cannot be made.
#[test]
#[ignore = "needs root and iproute2 (network namespaces)"]
fn a_three_host_cluster_grows_by_a_host_and_is_stopped_from_the_admin_machine() {
    let _g = lock_guard();
    let ns = Netns::create(4).unwrap_or_else(|why| panic!("cannot make network namespaces: {why}"));
    let tmp = scratch("grow-hosts");
    let dir = tmp.path();
    let mut init = vec!["init", "--mutex", "raymond"];
    init.extend(["--heartbeat", "50ms", "--heartbeat-timeout", "500ms"]);
    for a in ["10.77.0.1:7000", "10.77.0.2:7000", "10.77.0.3:7000"] {
        init.extend(["--addr", a]);
    }
    ok(&cluster(dir, &init), "cluster init");
    let admin = dir.join("admin");
    fs::create_dir(&admin).unwrap();
    fs::copy(dir.join("cluster.toml"), admin.join("cluster.toml")).unwrap();
    let start = |i: u32, file: &Path| {
        let log = fs::File::create(dir.join(format!("node-{i}.log"))).unwrap();
        ns.bin(&i.to_string())
            .args(["node", "--cluster"])
            .arg(file)
            .args(["--id", &i.to_string()])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let mut nodes: Vec<std::process::Child> = (0..3)
        .map(|i| start(i, &dir.join("cluster.toml")))
        .collect();
    let on_admin = |args: &[&str]| {
        ns.bin("c")
            .arg("cluster")
            .args(args)
            .arg("--dir")
            .arg(&admin)
            .output()
            .unwrap()
    };
    let one_view = |ids: &[u32]| {
        let members = format!("{ids:?}");
        let mut text = String::new();
        wait_for(
            &format!("one open view of {members}"),
            Duration::from_secs(30),
            || {
                text = String::from_utf8_lossy(&on_admin(&["status"]).stdout).to_string();
                ids.iter().all(|i| {
                    text.lines().any(|l| {
                        l.starts_with(&format!("node {i}: "))
                            && l.contains(&format!(" {members}, holding"))
                    })
                })
            },
        );
    };
    let token = |node: u32| -> u64 {
        let out = ns
            .bin("c")
            .args(["lock", "-w", "30", "--node", &node.to_string(), "--cluster"])
            .arg(admin.join("client.toml"))
            .args(["x", "-c", "echo $DISTSYNC_FENCING_TOKEN"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        said.trim().parse().unwrap()
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        one_view(&[0, 1, 2]);
        fs::copy(dir.join("client.toml"), admin.join("client.toml")).unwrap();
        let before = token(0);
        let said = ok(
            &on_admin(&["add", "--addr", "10.77.0.4:7000"]),
            "cluster add from the admin machine",
        );
        assert!(
            said.contains("start it on its machine")
                && said.contains("distsync node --cluster cluster.toml --id 3"),
            "{said}"
        );
        // The fourth host, with a copy of the admin's new cluster file.
        let host4 = dir.join("host4");
        fs::create_dir(&host4).unwrap();
        fs::copy(admin.join("cluster.toml"), host4.join("cluster.toml")).unwrap();
        nodes.push(start(3, &host4.join("cluster.toml")));
        one_view(&[0, 1, 2, 3]);
        let grown = token(3);
        assert!(grown >> 32 > before >> 32, "{grown:x} {before:x}");
        let said = ok(&on_admin(&["remove", "3"]), "cluster remove 3");
        assert!(said.contains("removed from the roster"), "{said}");
        one_view(&[0, 1, 2]);
        assert!(token(1) > grown);
        ok(&on_admin(&["stop"]), "cluster stop from the admin machine");
    }));
    let until = std::time::Instant::now() + Duration::from_secs(10);
    let mut exited = Vec::new();
    for n in &mut nodes {
        while std::time::Instant::now() < until {
            if let Some(s) = n.try_wait().unwrap() {
                exited.push(s.success());
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = n.kill();
        let _ = n.wait();
    }
    if let Err(e) = result {
        let logs: Vec<String> = (0..4)
            .map(|i| fs::read_to_string(dir.join(format!("node-{i}.log"))).unwrap_or_default())
            .collect();
        eprintln!("{}", logs.join("\n---\n"));
        std::panic::resume_unwind(e);
    }
    assert_eq!(
        exited, [true; 4],
        "every node exited 0 (node 3 stopped by remove)"
    );
}

/// A change that no majority of the current roster accepts is refused, and nothing changes: with
/// two of three nodes down, the last one leads alone and cannot add a node.
#[test]
fn a_change_without_a_majority_of_the_roster_is_refused() {
    let _g = lock_guard();
    let tmp = scratch("no-majority");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    three_nodes_up(&dir);
    let file = fs::read_to_string(dir.join("cluster.toml")).unwrap();
    for i in ["1", "2"] {
        ok(&cluster(&dir, &["stop", "--id", i]), "cluster stop");
    }
    let port = free_ports(1)[0];
    let out = cluster(&dir, &["add", "--addr", &format!("127.0.0.1:{port}")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("only 1 of the 3 nodes of the roster answered")
            && err.contains("needs a majority (2): nothing changed"),
        "{err}"
    );
    assert_eq!(
        fs::read_to_string(dir.join("cluster.toml")).unwrap(),
        file,
        "the files are unchanged"
    );
    assert!(!dir.join("node-0.roster").exists(), "no roster stored");
}
