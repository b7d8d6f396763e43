//! Client-side leases (issue 35, items 1 and 2), with real processes on 127.0.0.1: when the node
//! a client holds its lock through is paused (SIGSTOP), the client cannot hear that the lock
//! passed on, so it keeps its own lease clock, counted from when it sent its last renewal that
//! the node answered. When that lapses, `lock` stops its command and exits 123, `elect` stops
//! the leader's command, `lock --stdin` says `lost NAME` at once, and the Rust guard's `lost()`
//! says why — all before the next holder starts, while the node is still paused.

mod lock_common;

use distsync_net::lock_client::LockClient;
use distsync_net::tokio;
use distsync_net::Cluster;
use lock_common::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A failure timeout of 1 s: the node's lease, and so the client's, is at most that.
const TIMEOUTS: &str = "[timeouts]\nheartbeat = \"50ms\"\nheartbeat_timeout = \"1s\"\n\
     answer_timeout = \"100ms\"\ncoordinator_timeout = \"800ms\"\n";

/// A command that notes `start WHO TOKEN` when it runs, `term WHO` when it gets SIGTERM (and
/// then exits), and `end WHO` if it runs to its end. It sleeps in the background and `wait`s,
/// which a trapped signal interrupts at once, so the trap runs within the wrapper's grace (a
/// foreground `sleep` would hold the trap until it ends).
fn noting(ev: &std::path::Path, who: &str, secs: u32) -> String {
    let ev = ev.display();
    format!(
        "trap 'echo term {who} >> {ev}; exit 143' TERM; \
         echo start {who} $DISTSYNC_FENCING_TOKEN >> {ev}; \
         i=0; while [ $i -lt {n} ]; do sleep 0.05 & wait $!; i=$((i+1)); done; \
         echo end {who} >> {ev}",
        n = secs * 20
    )
}

/// The place of the first event `what WHO` in the events file (one file, appended to by every
/// command: its order is the order of the events, with no clock to read under load).
fn at(ev: &std::path::Path, what: &str, who: &str) -> Option<usize> {
    lines(ev).iter().position(|l| {
        let w: Vec<&str> = l.split_whitespace().collect();
        w.first() == Some(&what) && w.get(1) == Some(&who)
    })
}

/// `distsync lock` through a node that is then paused: the wrapper's lease lapses, it stops
/// its command (SIGTERM) and exits 123 before another client gets the lock through another
/// node, while the paused node is still stopped.
#[test]
fn a_lock_whose_node_is_paused_stops_its_command_before_the_next_holder_starts() {
    let _g = lock_guard();
    let c = TestCluster::start_with("lease-lock", 3, "suzuki-kasami", "bully", TIMEOUTS);
    c.settled(Duration::from_secs(20));
    let ev = c.dir.join("events");
    let mut a = c
        .lock_command(0, "leased", &["sh", "-c", &noting(&ev, "A", 8)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("A holds", Duration::from_secs(20), || {
        at(&ev, "start", "A").is_some()
    });
    c.pause(0);
    let paused = Instant::now();
    let b = c
        .lock_command(1, "leased", &["sh", "-c", &noting(&ev, "B", 0)])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A's wrapper ends while node 0 is still paused.
    let status = loop {
        if let Some(s) = a.try_wait().unwrap() {
            break s;
        }
        assert!(
            paused.elapsed() < Duration::from_secs(6),
            "lock did not stop its command while its node was paused: {:?}",
            lines(&ev)
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let a_out = a.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&a_out.stderr);
    wait_for("B runs", Duration::from_secs(20), || {
        at(&ev, "start", "B").is_some()
    });
    c.resume(0);
    let b = b.wait_with_output().unwrap();
    eprintln!("{:?}\n{err}", lines(&ev));
    assert_eq!(status.code(), Some(123), "lock exits 123: {err}");
    assert!(err.contains("lease lapsed"), "{err}");
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let term_a = at(&ev, "term", "A").expect("A's command was stopped");
    let start_b = at(&ev, "start", "B").unwrap();
    assert!(at(&ev, "end", "A").is_none(), "A did not run to its end");
    assert!(
        term_a < start_b,
        "A was stopped (line {term_a}) before B started (line {start_b})"
    );
}

/// `distsync elect`: the leader's node is paused; its command is stopped before the next
/// leader's command starts.
#[test]
fn an_elected_command_whose_node_is_paused_stops_before_the_next_leader_starts() {
    let _g = lock_guard();
    let c = TestCluster::start_with("lease-elect", 3, "ricart-agrawala", "bully", TIMEOUTS);
    c.settled(Duration::from_secs(20));
    let ev = c.dir.join("events");
    let elect = |node: &str, cmd: &str| {
        Command::new(BIN)
            .args(["elect", "job", "--grace", "1s", "--node", node, "--cluster"])
            .arg(&c.cluster)
            .args(["--", "sh", "-c", cmd])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = elect("0", &noting(&ev, "A", 30));
    wait_for("A leads", Duration::from_secs(20), || {
        at(&ev, "start", "A").is_some()
    });
    let b = elect("1", &noting(&ev, "B", 0));
    c.pause(0);
    wait_for("B leads", Duration::from_secs(20), || {
        at(&ev, "start", "B").is_some()
    });
    c.resume(0);
    let a = a.wait_with_output().unwrap();
    let b = b.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&a.stderr);
    eprintln!("{:?}\n{err}", lines(&ev));
    assert_eq!(a.status.code(), Some(123), "{err}");
    assert!(err.contains("lease lapsed"), "{err}");
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let term_a = at(&ev, "term", "A").expect("A's command was stopped");
    let start_b = at(&ev, "start", "B").unwrap();
    assert!(
        term_a < start_b,
        "the old leader's command was stopped (line {term_a}) before the new one started (line {start_b})"
    );
}

/// `lock --stdin` says `lost NAME: WHY` on a line of its own as soon as its lease lapses, while
/// the node is still paused (nobody asked), and `unlock NAME` then answers `lost` too. The
/// ordering the user relies on is checked, not a duration: its output and the next holder's
/// command append to one file, and the `lost` line comes before the next holder's start.
#[test]
fn lock_stdin_reports_a_lapsed_lease_at_once() {
    let _g = lock_guard();
    let c = TestCluster::start_with("lease-stdin", 3, "raymond", "bully", TIMEOUTS);
    c.settled(Duration::from_secs(20));
    let ev = c.dir.join("stdin-events");
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&ev)
        .unwrap();
    let mut p = Command::new(BIN)
        .args(["lock", "--stdin", "--node", "0", "--cluster"])
        .arg(&c.cluster)
        .stdin(Stdio::piped())
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = p.stdin.take().unwrap();
    writeln!(stdin, "lock x").unwrap();
    wait_for("lock x granted", Duration::from_secs(20), || {
        lines(&ev).iter().any(|l| l.starts_with("granted x "))
    });
    c.pause(0);
    // The next holder, through node 1: its command appends to the same file.
    let next = c
        .client_bin()
        .args(["lock", "--timeout", "20s", "--node", "1", "--cluster"])
        .arg(&c.cluster)
        .args(["x", "--", "sh", "-c"])
        .arg(format!("echo start next >> {}", ev.display()))
        .output()
        .unwrap();
    assert!(
        next.status.success(),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
    let text = lines(&ev);
    let lost = text
        .iter()
        .position(|l| l.starts_with("lost x: its lease lapsed"));
    let started = text.iter().position(|l| l == "start next");
    assert!(
        lost.is_some() && lost < started,
        "`lost x` is said before the next holder starts: {text:?}"
    );
    c.resume(0);
    writeln!(stdin, "unlock x").unwrap();
    wait_for("the answer to unlock", Duration::from_secs(10), || {
        lines(&ev).len() > text.len()
    });
    let answer = lines(&ev)[text.len()].clone();
    assert!(answer.starts_with("lost x:"), "{answer}");
    drop(stdin);
    assert!(p.wait().unwrap().success());
}

/// The Rust API: a guard's `lost()` says so once the lease lapses, while the node is paused.
#[test]
fn a_guard_says_it_is_lost_when_its_lease_lapses() {
    let _g = lock_guard();
    let c = TestCluster::start_with("lease-guard", 3, "central", "bully", TIMEOUTS);
    c.settled(Duration::from_secs(20));
    let cluster = Cluster::load(&c.cluster).unwrap();
    let rt = distsync_net::runtime().unwrap();
    rt.block_on(async {
        let mut client = LockClient::connect_to(&cluster, distsync_core::NodeId(0))
            .await
            .unwrap();
        let g = client.lock("g").await.unwrap();
        assert_eq!(g.lost(), None, "a fresh guard has its lease");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(g.lost(), None, "renewed by the keep-alive");
        c.pause(0);
        // Another client is granted the lock through node 1 once the cluster has left node 0
        // out: by then the first guard says it is lost (the ordering the user relies on, not
        // a duration).
        let mut next = LockClient::connect_to(&cluster, distsync_core::NodeId(1))
            .await
            .unwrap();
        let g2 = next.lock("g").await.unwrap();
        let why = g
            .lost()
            .expect("the first guard says it is lost before the next grant");
        assert!(why.contains("lease lapsed"), "{why}");
        assert!(g2.token() > g.token(), "{} then {}", g.token(), g2.token());
        drop(g2);
        c.resume(0);
        drop(g);
    });
}
