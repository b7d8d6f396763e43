//! Berkeley among a real cluster's nodes over UDP: `distsync cluster up --clock berkeley
//! --skew 200ms` starts 5 node processes whose virtual clocks are spread over -200ms..+200ms;
//! `distsync time status --json` watches them converge below 5ms of skew within a few rounds;
//! the master is killed (kill -9), the survivors elect another one with the cluster's election
//! algorithm (bully) and keep synchronizing; the old master comes back with its +200ms clock
//! and is pulled in again. `distsync leader` and `distsync lock` keep working alongside.
//!
//! Every wait is bounded; every process started is killed when the test ends, even on failure.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_distsync");
/// The skew the clocks must get below: a few milliseconds.
const CONVERGED_NS: i64 = 5_000_000;

struct Cluster {
    dir: PathBuf,
    extra: Vec<Child>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(BIN)
            .args(["cluster", "down", "--dir"])
            .arg(&self.dir)
            .stdout(Stdio::null())
            .status();
        for c in &mut self.extra {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Cluster {
    fn file(&self) -> PathBuf {
        self.dir.join("cluster.toml")
    }

    fn status(&self) -> Value {
        let out = Command::new(BIN)
            .args([
                "time",
                "status",
                "--json",
                "--timeout",
                "500ms",
                "--cluster",
            ])
            .arg(self.file())
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// Polls the status until `ok` holds (at most 120 tries, 250ms apart).
    fn wait_for(&self, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
        let mut last = Value::Null;
        for _ in 0..120 {
            last = self.status();
            if ok(&last) {
                return last;
            }
            thread::sleep(Duration::from_millis(250));
        }
        panic!("{what}: never happened; last status:\n{last:#}");
    }

    fn pid(&self, id: u64) -> i32 {
        std::fs::read_to_string(self.dir.join(format!("node-{id}.pid")))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

fn nodes(v: &Value) -> &Vec<Value> {
    v["nodes"].as_array().unwrap()
}

fn up(v: &Value) -> Vec<&Value> {
    nodes(v).iter().filter(|n| n["reachable"] == true).collect()
}

fn masters(v: &Value) -> Vec<u64> {
    let mut m: Vec<u64> = up(v).iter().filter_map(|n| n["master"].as_u64()).collect();
    m.sort_unstable();
    m.dedup();
    m
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("time-cluster-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn berkeley_converges_and_again_after_its_master_is_killed() {
    let dir = scratch("berkeley");
    let out = Command::new(BIN)
        .args([
            "cluster", "up", "--nodes", "5", "--mutex", "central", "--dir",
        ])
        .arg(&dir)
        .args([
            "--clock",
            "berkeley",
            "--skew",
            "200ms",
            "--sync-interval",
            "500ms",
        ])
        .output()
        .unwrap();
    let mut cluster = Cluster {
        dir: dir.clone(),
        extra: Vec::new(),
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The clocks start spread over -200ms..+200ms, in node order.
    let first = cluster.wait_for("all 5 nodes answer", |v| up(v).len() == 5);
    let initial: Vec<i64> = nodes(&first)
        .iter()
        .map(|n| n["initial_offset_ns"].as_i64().unwrap())
        .collect();
    assert_eq!(
        initial,
        vec![-200_000_000, -100_000_000, 0, 100_000_000, 200_000_000]
    );

    // Converged: every node adjusted by one master, skew below 5ms.
    let converged = cluster.wait_for("convergence", |v| {
        up(v).len() == 5
            && masters(v).len() == 1
            && up(v).iter().all(|n| n["adjustments"].as_u64() >= Some(1))
            && v["max_skew_ns"].as_i64().unwrap() < CONVERGED_NS
    });
    let rounds = up(&converged)
        .iter()
        .map(|n| n["adjustments"].as_u64().unwrap())
        .max()
        .unwrap();
    println!(
        "converged from 400ms to {}ns of skew after {rounds} rounds",
        converged["max_skew_ns"]
    );
    assert!(rounds <= 4, "took {rounds} rounds:\n{converged:#}");
    let master = masters(&converged)[0];
    assert_eq!(master, 4, "bully elects the highest id");

    // The lock and leader services run alongside.
    let leader = Command::new(BIN)
        .args(["leader", "--cluster"])
        .arg(cluster.file())
        .output()
        .unwrap();
    assert!(
        leader.status.success(),
        "{}",
        String::from_utf8_lossy(&leader.stdout)
    );
    let lock = Command::new(BIN)
        .args(["lock", "--cluster"])
        .arg(cluster.file())
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        lock.status.success(),
        "{}",
        String::from_utf8_lossy(&lock.stderr)
    );

    // Kill the master: the survivors elect another and keep synchronizing under it.
    // SAFETY: kill(2) on the pid `cluster up` recorded for node 4, a child of this test's run.
    unsafe {
        libc::kill(cluster.pid(master), libc::SIGKILL);
    }
    let before: Vec<u64> = up(&converged)
        .iter()
        .map(|n| n["adjustments"].as_u64().unwrap())
        .collect();
    let after_kill = cluster.wait_for("a new master", |v| {
        let m = masters(v);
        up(v).len() == 4
            && m.len() == 1
            && m[0] != master
            && up(v)
                .iter()
                .zip(&before)
                .all(|(n, b)| n["adjustments"].as_u64().unwrap() >= b + 2)
            && v["max_skew_ns"].as_i64().unwrap() < CONVERGED_NS
    });
    println!(
        "master {master} killed: node {} took over, skew {}ns",
        masters(&after_kill)[0],
        after_kill["max_skew_ns"]
    );

    // The old master comes back with its clock +200ms off: it joins, and is pulled in.
    let back = Command::new(BIN)
        .args(["node", "--id", "4", "--cluster"])
        .arg(cluster.file())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    cluster.extra.push(back);
    let rejoined = cluster.wait_for("the old master rejoins and converges", |v| {
        up(v).len() == 5
            && masters(v).len() == 1
            && nodes(v)[4]["adjustments"].as_u64() >= Some(1)
            && v["max_skew_ns"].as_i64().unwrap() < CONVERGED_NS
    });
    assert_eq!(
        masters(&rejoined),
        vec![4],
        "bully: the highest id takes it back"
    );
    println!(
        "node 4 back: master {}, skew {}ns",
        masters(&rejoined)[0],
        rejoined["max_skew_ns"]
    );
}

fn start(name: &str, algorithm: &str, n: u32) -> Cluster {
    let dir = scratch(name);
    let out = Command::new(BIN)
        .args([
            "cluster",
            "up",
            "--nodes",
            &n.to_string(),
            "--mutex",
            "central",
            "--dir",
        ])
        .arg(&dir)
        .args([
            "--clock",
            algorithm,
            "--skew",
            "100ms",
            "--drift-ppm",
            "100",
        ])
        .args(["--sync-interval", "300ms"])
        .output()
        .unwrap();
    let cluster = Cluster {
        dir,
        extra: Vec::new(),
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    cluster
}

/// Node 0 starts 100ms behind (the spread's first end); it is Cristian's time server and NTP's
/// stratum-1 server, so the others converge to it, not to the average.
fn converged_to_node_0(v: &Value) -> bool {
    let ns = nodes(v);
    ns.len() == 3
        && up(v).len() == 3
        && ns[1..].iter().all(|n| n["adjustments"].as_u64() >= Some(2))
        && v["max_skew_ns"].as_i64().unwrap() < CONVERGED_NS
        && (ns[0]["offset_ns"].as_i64().unwrap() + 100_000_000).abs() < CONVERGED_NS
}

#[test]
fn cristian_clients_follow_the_time_server() {
    let cluster = start("cristian", "cristian", 3);
    let v = cluster.wait_for("convergence to node 0", converged_to_node_0);
    for n in &nodes(&v)[1..] {
        assert_eq!(n["reference"], 0, "{v:#}");
        assert!(n["bound_ns"].as_u64().is_some(), "{v:#}");
    }
    assert_eq!(
        nodes(&v)[0]["adjustments"],
        0,
        "the server is never adjusted"
    );
    println!("cristian: skew {}ns", v["max_skew_ns"]);
}

#[test]
fn ntp_clients_follow_the_stratum_1_server() {
    let cluster = start("ntp", "ntp", 3);
    let v = cluster.wait_for("convergence to node 0", converged_to_node_0);
    assert_eq!(nodes(&v)[0]["stratum"], 1, "{v:#}");
    for n in &nodes(&v)[1..] {
        assert_eq!(n["stratum"], 2, "{v:#}");
    }
    println!("ntp: skew {}ns", v["max_skew_ns"]);
}

/// A port free on both `127.0.0.1` and `[::1]`, TCP and UDP (the clock listens on UDP at the
/// port of the node's TCP address).
fn free_port(v6: bool) -> u16 {
    let ip = if v6 { "[::1]" } else { "127.0.0.1" };
    loop {
        let tcp = std::net::TcpListener::bind(format!("{ip}:0")).unwrap();
        let port = tcp.local_addr().unwrap().port();
        if std::net::UdpSocket::bind(format!("{ip}:{port}")).is_ok() {
            return port;
        }
    }
}

/// A cluster whose addresses mix IPv4 and IPv6 (`127.0.0.1`, `[::1]`, `127.0.0.1`) keeps its
/// clocks in step: node 1's clock socket is IPv6 and its peers' IPv4, so each node sends to a
/// peer of the other family from a socket of that family, and `time status` asks each node from
/// one of its family (before, node 1 never reached Cristian's server, node 0, and `time status`
/// failed on its address).
#[test]
fn a_cluster_mixing_ipv4_and_ipv6_synchronizes() {
    let dir = scratch("mixed-families");
    let addrs = [
        format!("127.0.0.1:{}", free_port(false)),
        format!("[::1]:{}", free_port(true)),
        format!("127.0.0.1:{}", free_port(false)),
    ];
    let mut init = Command::new(BIN);
    init.args(["cluster", "init", "--mutex", "central", "--dir"])
        .arg(&dir);
    for a in &addrs {
        init.args(["--addr", a]);
    }
    let out = init
        .args([
            "--clock",
            "cristian",
            "--skew",
            "100ms",
            "--drift-ppm",
            "100",
        ])
        .args(["--sync-interval", "300ms"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut cluster = Cluster {
        dir,
        extra: Vec::new(),
    };
    for i in 0..3 {
        let log = std::fs::File::create(cluster.dir.join(format!("node-{i}.log"))).unwrap();
        let node = Command::new(BIN)
            .args(["node", "--cluster"])
            .arg(cluster.file())
            .args(["--id", &i.to_string()])
            .env("DISTSYNC_TRANSPORT", "tcp")
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        cluster.extra.push(node);
    }
    let v = cluster.wait_for("convergence to node 0", converged_to_node_0);
    for n in &nodes(&v)[1..] {
        assert_eq!(n["reference"], 0, "{v:#}");
    }
}

/// `time status` reports a node this machine cannot send to (here the broadcast address, which
/// an ordinary socket may not send to) on that node's row, with the reason, and still asks the
/// others; before, the whole command failed with the bare "Permission denied (os error 13)".
#[test]
fn time_status_names_a_node_it_cannot_send_to() {
    let dir = scratch("unsendable");
    let _cluster = Cluster {
        dir: dir.clone(),
        extra: Vec::new(),
    };
    let out = Command::new(BIN)
        .args(["cluster", "init", "--mutex", "central", "--dir"])
        .arg(&dir)
        .args(["--addr", &format!("127.0.0.1:{}", free_port(false))])
        .args(["--addr", "255.255.255.255:17512", "--clock", "cristian"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(BIN)
        .args(["time", "status", "--timeout", "200ms", "--cluster"])
        .arg(dir.join("cluster.toml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with(['0', '1'])).collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(rows[0].contains("no answer"), "{text}");
    assert!(
        rows[1].contains("cannot send to 255.255.255.255:17512"),
        "{text}"
    );
}
