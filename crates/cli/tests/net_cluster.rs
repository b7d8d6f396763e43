//! Real clusters: `distsync node` processes on 127.0.0.1 (free ports chosen at test time),
//! `distsync lock` clients running a shell command that increments a shared file, kill -9 of a
//! coordinator or token holder, `distsync leader`, and hostile connections.
//!
//! The shared file is a *fenced resource*: `count last_token`. The command run under the lock
//! (see `COUNTER`) reads it under flock(1), refuses to go on if its fencing token is not above
//! the last one the file saw (and records its token there), sleeps, then writes count+1 only if
//! no newer token touched the file meanwhile, and appends "token count" to a log. Without
//! failures every write must be accepted: the file ends at exactly 8 x 25 = 200 and the tokens
//! grow with the count. With a crash, a client whose lock was lost may be refused by the
//! resource: the file then equals the number of accepted writes (the log's lines).
//!
//! Every wait is bounded; every process started is killed when its test ends, even on failure.
//! The cluster tests take a global lock so that only one cluster runs at a time on 2 cores.

mod lock_common;

use lock_common::*;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The command run under the lock: $1 the fenced counter file, $2 the log of accepted writes.
const COUNTER: &str = r#"
f="$1"; log="$2"; t="$DISTSYNC_FENCING_TOKEN"
exec 9>>"$f.lk"
flock 9
read count last < "$f"
if [ "$t" -le "$last" ]; then echo "read $t <= $last" >> "$f.refused"; exit 3; fi
echo "$count $t" > "$f"
flock -u 9
sleep "${SLEEP:-0.003}"
flock 9
read count2 last2 < "$f"
if [ "$last2" != "$t" ]; then echo "write $t, file saw $last2" >> "$f.refused"; exit 3; fi
next=$((count2 + 1))
echo "$next $t" > "$f"
echo "$t $next" >> "$log"
"#;

/// `distsync lock` through `node` on the lock "counter", giving up after 20 s.
fn lock_counter(c: &TestCluster, node: usize, cmd: &[&str]) -> Output {
    c.lock_command_within(node, "counter", "20s", cmd)
        .output()
        .unwrap()
}

struct Run {
    /// (token, count) of every accepted write, in the order the file recorded them.
    log: Vec<(u64, u64)>,
    /// The file's final count.
    count: u64,
    /// Lock invocations whose command did not write (exit status not 0, or 123 for a lock lost
    /// while a command ran that did not exit 0).
    failed: usize,
    refused: String,
}

/// 8 clients, each taking the lock 25 times through node (client % nodes); `during` runs on the
/// test thread while they work.
fn counter_run(c: &TestCluster, nodes: usize, during: impl FnOnce(&Path)) -> Run {
    let file = c.dir.join("counter");
    let log = c.dir.join("counter.log");
    fs::write(&file, "0 0\n").unwrap();
    fs::write(&log, "").unwrap();
    let script = c.dir.join("counter.sh");
    fs::write(&script, COUNTER).unwrap();
    let failed = thread::scope(|s| {
        let workers: Vec<_> = (0..8)
            .map(|client| {
                let (file, log, script) = (&file, &log, &script);
                s.spawn(move || {
                    let mut failed = 0;
                    for _ in 0..25 {
                        let out = lock_counter(
                            c,
                            client % nodes,
                            &[
                                "sh",
                                script.to_str().unwrap(),
                                file.to_str().unwrap(),
                                log.to_str().unwrap(),
                            ],
                        );
                        // A lock lost while its command ran exits 123 and says with which
                        // status the command ended: 0 means its write went through.
                        let wrote = out.status.success()
                            || (out.status.code() == Some(123)
                                && String::from_utf8_lossy(&out.stderr)
                                    .contains("the command exited with status 0"));
                        if !wrote {
                            failed += 1;
                            eprintln!(
                                "client {client}: {:?}: {}",
                                out.status,
                                String::from_utf8_lossy(&out.stderr)
                            );
                        }
                    }
                    failed
                })
            })
            .collect();
        during(&file);
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let text = fs::read_to_string(&file).unwrap();
    let count = text.split_whitespace().next().unwrap().parse().unwrap();
    let log = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace().map(|x| x.parse::<u64>().unwrap());
            (w.next().unwrap(), w.next().unwrap())
        })
        .collect();
    let refused = fs::read_to_string(c.dir.join("counter.refused")).unwrap_or_default();
    Run {
        log,
        count,
        failed,
        refused,
    }
}

fn assert_tokens_increase(run: &Run) {
    for (i, w) in run.log.windows(2).enumerate() {
        assert!(
            w[1].0 > w[0].0,
            "fencing tokens must grow in the order the file recorded them: write {} has token {} after {}",
            i + 1,
            w[1].0,
            w[0].0
        );
    }
    for (i, &(_, count)) in run.log.iter().enumerate() {
        assert_eq!(
            count,
            i as u64 + 1,
            "the log records every count once, in order"
        );
    }
}

fn two_hundred(mutex: &str) {
    let _g = lock_guard();
    let c = TestCluster::start(mutex, 5, mutex, "bully");
    c.settled(Duration::from_secs(15));
    let run = counter_run(&c, 5, |_| {});
    assert_eq!(
        run.failed,
        0,
        "every lock invocation succeeds\n{}",
        c.logs()
    );
    assert_eq!(run.refused, "", "no write is refused when nothing fails");
    assert_eq!(run.count, 200, "{}", c.logs());
    assert_eq!(run.log.len(), 200);
    assert_tokens_increase(&run);
}

#[test]
fn central_counts_to_200() {
    two_hundred("central");
}

#[test]
fn ricart_agrawala_counts_to_200() {
    two_hundred("ricart-agrawala");
}

#[test]
fn suzuki_kasami_counts_to_200() {
    two_hundred("suzuki-kasami");
}

#[test]
fn raymond_counts_to_200() {
    two_hundred("raymond");
}

/// Waits (bounded) until the counter file reaches `n`.
fn wait_count(file: &Path, n: u64, within: Duration) {
    let until = Instant::now() + within;
    loop {
        let text = fs::read_to_string(file).unwrap_or_default();
        let count: u64 = text
            .split_whitespace()
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        if count >= n {
            return;
        }
        assert!(
            Instant::now() < until,
            "the counter did not reach {n} within {within:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Checks a run with a crash: it completed, every invocation that exited 0 is exactly one
/// accepted write, accepted writes carry growing tokens, and the work went on after the crash.
fn assert_crash_run(run: &Run, at_kill: u64, c: &TestCluster) {
    eprintln!(
        "count {} at the kill, {} at the end; {} invocations failed; refused: {}",
        at_kill, run.count, run.failed, run.refused
    );
    assert_eq!(
        run.count,
        run.log.len() as u64,
        "the file equals the number of accepted writes"
    );
    assert_eq!(
        run.count,
        200 - run.failed as u64,
        "every lock invocation that succeeded wrote exactly once\n{}",
        c.logs()
    );
    assert_tokens_increase(run);
    assert!(
        run.count > at_kill + 50,
        "clients were served after the crash (count {} at the kill, {} at the end)\n{}",
        at_kill,
        run.count,
        c.logs()
    );
}

#[test]
fn central_survives_a_kill_9_of_its_coordinator() {
    let _g = lock_guard();
    let c = TestCluster::start("central-kill", 5, "central", "bully");
    let leader = c.settled(Duration::from_secs(15));
    assert_eq!(leader, 4, "bully elects the highest id, the coordinator");
    let mut at_kill = 0;
    let run = counter_run(&c, 4, |file| {
        wait_count(file, 40, Duration::from_secs(30));
        at_kill = counter_value(file);
        c.kill9(4);
    });
    assert_crash_run(&run, at_kill, &c);
    let new = c.settled(Duration::from_secs(10));
    assert_eq!(new, 3, "the highest live id is the new coordinator");
}

#[test]
fn suzuki_kasami_survives_a_kill_9_of_its_token_holder() {
    let _g = lock_guard();
    let c = TestCluster::start("sk-kill", 5, "suzuki-kasami", "bully");
    c.settled(Duration::from_secs(15));
    let mut at_kill = 0;
    let mut killed = None;
    let run = counter_run(&c, 5, |file| {
        wait_count(file, 40, Duration::from_secs(30));
        // The node whose client is inside the critical section holds the token.
        let until = Instant::now() + Duration::from_secs(10);
        let holder = loop {
            let j = c.leader_json();
            let h = j["nodes"].as_array().unwrap().iter().find(|n| {
                n["holding"]
                    .as_array()
                    .is_some_and(|h| h.iter().any(|x| x == "counter"))
            });
            if let Some(h) = h {
                break h["id"].as_u64().unwrap() as usize;
            }
            assert!(Instant::now() < until, "no node was seen holding the lock");
        };
        at_kill = counter_value(file);
        c.kill9(holder);
        killed = Some(holder);
    });
    let killed = killed.unwrap();
    assert_crash_run(&run, at_kill, &c);
    let leader = c.settled(Duration::from_secs(10));
    let expected = if killed == 4 { 3 } else { 4 };
    assert_eq!(leader, expected as u64, "bully: the highest live id leads");
    let j = c.leader_json();
    for n in j["nodes"].as_array().unwrap() {
        if n["id"].as_u64() == Some(killed as u64) {
            assert_eq!(n["reachable"], false);
        } else {
            let members = n["members"].as_array().unwrap();
            assert!(!members.iter().any(|m| m.as_u64() == Some(killed as u64)));
            assert_eq!(members.len(), 4, "the crashed node left the view: {n}");
        }
    }
}

/// `distsync leader` after a kill -9 of the leader: every live node names the same new one
/// within the configured timeouts: the silence before the leader is suspected
/// (heartbeat_timeout 500ms), the election (T = 100ms, T' = 800ms at most) and the view change
/// (one round trip, under heartbeat_timeout), plus the time `leader` takes to ask.
fn new_leader_in_time(mutex: &str, election: &str, expect: u64) {
    let _g = lock_guard();
    let c = TestCluster::start(&format!("leader-{election}"), 5, mutex, election);
    let first = c.settled(Duration::from_secs(15));
    assert_eq!(first, 4, "{election} elects the highest id");
    let killed_at = Instant::now();
    c.kill9(4);
    let bound = Duration::from_millis(500 + 100 + 800 + 500) + Duration::from_secs(1);
    let until = killed_at + bound;
    loop {
        let j = c.leader_json();
        if j["agreed"] == true {
            assert_eq!(j["leader"].as_u64(), Some(expect), "{j}");
            let answered = j["answered"].as_u64().unwrap();
            assert_eq!(answered, 4, "every live node answered: {j}");
            break;
        }
        assert!(
            Instant::now() < until,
            "no agreement on a new leader within {bound:?} of the kill: {j}\n{}",
            c.logs()
        );
        thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "{election}: new leader agreed {:?} after the kill",
        killed_at.elapsed()
    );
}

#[test]
fn leader_names_the_new_bully_leader_after_a_kill() {
    new_leader_in_time("central", "bully", 3);
}

#[test]
fn leader_names_the_new_ring_leader_after_a_kill() {
    new_leader_in_time("ricart-agrawala", "chang-roberts", 3);
}

fn node_addr(c: &TestCluster, i: usize) -> String {
    let cluster = distsync_net::Cluster::load(&c.cluster).unwrap();
    cluster.addrs[i].to_string()
}

/// Sends `bytes` to `addr` and waits (bounded) for the node to close the connection.
fn send_and_expect_close(addr: &str, bytes: &[u8], shutdown_write: bool) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(bytes);
    if shutdown_write {
        let _ = s.shutdown(std::net::Shutdown::Write);
    }
    let mut buf = [0u8; 1024];
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return, // closed (or reset)
            Ok(_) => {}               // the node's handshake Challenge, if any
        }
        assert!(
            Instant::now() < until,
            "the node did not close the connection"
        );
    }
}

#[test]
fn hostile_connections_are_refused_and_the_node_keeps_serving() {
    let _g = lock_guard();
    let c = TestCluster::start("hostile", 3, "ricart-agrawala", "bully");
    c.settled(Duration::from_secs(15));
    let addr = node_addr(&c, 0);

    // A client with the wrong secret.
    let wrong = c.dir.join("wrong.toml");
    let text = fs::read_to_string(&c.cluster)
        .unwrap()
        .replace("test-secret-0123456789", "not-the-secret-0123456789");
    fs::write(&wrong, text).unwrap();
    let out = Command::new(BIN)
        .args(["lock", "--timeout", "5s", "--node", "0", "--cluster"])
        .arg(&wrong)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(125),
        "the lock is refused: the lock service failed (docs/net.md)"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("secret"), "the client is told why: {err}");
    let out = Command::new(BIN)
        .args(["leader", "--json", "--cluster"])
        .arg(&wrong)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        j["answered"], 0,
        "no node answers a client without the secret: {j}"
    );

    // A stream of random bytes, an oversized frame, a truncated frame, a malformed Hello.
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let random: Vec<u8> = (0..65536)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    send_and_expect_close(&addr, &random, false);
    send_and_expect_close(&addr, &[0xff, 0xff, 0xff, 0xff, 1, 2, 3], false);
    send_and_expect_close(&addr, &[0, 0, 0, 100, 1, 2, 3], true);
    send_and_expect_close(&addr, &[0, 0, 0, 3, 0xff, 0xff, 0xff], false);

    // An authenticated client that sends a malformed (but correctly sealed) frame.
    let cluster = distsync_net::Cluster::load(&c.cluster).unwrap();
    let rt = distsync_net::runtime().unwrap();
    rt.block_on(async {
        let s = distsync_net::tokio::net::TcpStream::connect(&addr)
            .await
            .unwrap();
        let (mut r, mut w) = distsync_net::connection::initiate(
            s,
            cluster.secret(),
            distsync_net::auth::Role::Client,
        )
        .await
        .unwrap();
        w.send(&vec![0xffu8; 64]).await.unwrap();
        let end = distsync_net::tokio::time::timeout(
            Duration::from_secs(5),
            r.recv::<distsync_net::wire::ClientReply>(),
        )
        .await
        .expect("the node closes the connection");
        assert!(
            !matches!(end, Ok(Some(_))),
            "no reply to garbage: {:?}",
            end.ok()
        );
    });

    // The node is still up and serving.
    assert!(c.running(0), "node 0 is still running");
    let out = lock_counter(&c, 0, &["true"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    c.settled(Duration::from_secs(5));
    let log = fs::read_to_string(c.dir.join("node-0.log")).unwrap();
    let refused = log.matches("refused connection").count();
    assert!(
        refused >= 5,
        "every refused connection is logged ({refused}):\n{log}"
    );
    assert!(log.contains("does not know the cluster secret"), "{log}");
    assert!(log.contains("exceeds the limit"), "{log}");
    assert!(
        log.contains("closing client connection: malformed message"),
        "{log}"
    );
}

/// A holder that is cut off (here: its node paused with SIGSTOP, as a partition or a long GC
/// pause would) loses its lock after the timeout, while its command still runs. Before
/// client-side leases, two commands then ran "under the lock" at once and only the fencing
/// token refused the stale holder's late write; now the wrapper's own lease clock lapses first
/// and it stops the command (SIGTERM) before the other client is granted, so the stale write is
/// never attempted, and the fence is not needed.
#[test]
fn a_cut_off_holder_is_stopped_by_its_lease_before_its_late_write() {
    let _g = lock_guard();
    let c = TestCluster::start("pause", 3, "central", "bully");
    assert_eq!(c.settled(Duration::from_secs(15)), 2);
    let file = c.dir.join("counter");
    let log = c.dir.join("counter.log");
    let script = c.dir.join("counter.sh");
    fs::write(&file, "0 0\n").unwrap();
    fs::write(&script, COUNTER).unwrap();
    let slow = Command::new(BIN)
        .args([
            "lock",
            "--timeout",
            "20s",
            "--node",
            "0",
            "--name",
            "counter",
            "--cluster",
        ])
        .arg(&c.cluster)
        .args(["--", "sh"])
        .arg(&script)
        .arg(&file)
        .arg(&log)
        .env("SLEEP", "3")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the slow command holds the lock (its token is registered in the file).
    let until = Instant::now() + Duration::from_secs(10);
    while fs::read_to_string(&file).unwrap().trim() == "0 0" {
        assert!(Instant::now() < until, "the slow holder never got the lock");
        thread::sleep(Duration::from_millis(10));
    }
    let pid = c.pid(0);
    let stop = |sig: &str| {
        assert!(Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap()
            .success())
    };
    stop("-STOP");
    let paused_at = Instant::now();
    // Another client gets the lock while the first command still runs.
    let fast = lock_counter(
        &c,
        1,
        &[
            "sh",
            script.to_str().unwrap(),
            file.to_str().unwrap(),
            log.to_str().unwrap(),
        ],
    );
    let granted_after = paused_at.elapsed();
    stop("-CONT");
    assert!(
        fast.status.success(),
        "{}",
        String::from_utf8_lossy(&fast.stderr)
    );
    assert!(
        granted_after < Duration::from_secs(3),
        "the second holder ran while the first command was still inside its critical section"
    );
    let slow = slow.wait_with_output().unwrap();
    // The stale holder's command was stopped when its lease lapsed (SIGTERM: status 143), and
    // `lock` exits with the lost-lock status (123) and says so.
    let slow_err = String::from_utf8_lossy(&slow.stderr);
    assert_eq!(slow.status.code(), Some(123), "{slow_err}");
    assert!(
        slow_err.contains("lease lapsed") && slow_err.contains("exited with status 143"),
        "{slow_err}"
    );
    let text = fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("1 "),
        "only the second holder's increment counts: {text}"
    );
    assert!(
        !c.dir.join("counter.refused").exists(),
        "the stale holder never tried its late write"
    );
    // Once resumed, the paused node rejoins without its stale hold.
    c.settled(Duration::from_secs(10));
    let j = c.leader_json();
    assert!(
        j["nodes"][0]["holding"].as_array().unwrap().is_empty(),
        "{j}"
    );
}

/// A node killed and restarted faster than the failure timeout comes back without a view (and
/// without its state); the others' requests reach it, it asks the leader to let it in (or its
/// recovery's election gets there first), and a view change does. Ricart-Agrawala needs its reply, so a lock through another node proves it.
#[test]
fn a_node_restarted_within_the_timeout_rejoins_the_view() {
    let _g = lock_guard();
    let c = TestCluster::start("restart", 5, "ricart-agrawala", "bully");
    c.settled(Duration::from_secs(15));
    c.kill9(1);
    c.respawn(1);
    let t0 = Instant::now();
    let out = lock_counter(&c, 0, &["true"]);
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        c.logs()
    );
    eprintln!(
        "lock through node 0 after node 1 restarted: {:?}",
        t0.elapsed()
    );
    // Settled: every live node, node 1 included, is a member of one open view.
    c.settled(Duration::from_secs(10));
    // Node 1 got there in its new life by one of the two ways in: it asked the leader to let it
    // in, or the election its recovery starts (bully) ended in a view change that took it in;
    // which comes first is a matter of timing.
    let log = fs::read_to_string(c.dir.join("node-1.log")).unwrap();
    let new_life = &log[log.rfind("node listening").expect("node 1 started")..];
    assert!(
        new_life.contains("asking the leader to let this node in")
            || new_life.contains("view committed node=1"),
        "{log}"
    );
}

/// Ricart-Agrawala asks every member; a crashed member would block everyone. After the timeout
/// the view change removes it, and locks through the other nodes are served again.
#[test]
fn ricart_agrawala_goes_on_without_a_crashed_node() {
    let _g = lock_guard();
    let c = TestCluster::start("ra-crash", 5, "ricart-agrawala", "bully");
    c.settled(Duration::from_secs(15));
    c.kill9(2);
    let t0 = Instant::now();
    for node in [0, 1, 3] {
        let out = lock_counter(&c, node, &["true"]);
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            c.logs()
        );
    }
    eprintln!("three locks after the crash took {:?}", t0.elapsed());
    c.settled(Duration::from_secs(10));
    let j = c.leader_json();
    let members = j["nodes"][0]["members"].as_array().unwrap();
    assert_eq!(members.len(), 4, "node 2 was removed: {j}");
}

#[test]
fn cluster_up_status_lock_down() {
    let _g = lock_guard();
    let tmp = scratch("up");
    let dir = tmp.path().to_path_buf();
    let _down = Down(dir.clone());
    cluster_up_ok(
        &dir,
        &["--nodes", "3", "--mutex", "raymond", "--election", "ring"],
    );
    let again = cluster(&dir, &["up", "--nodes", "3", "--mutex", "raymond"]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "a second `up` in a running directory is refused"
    );
    let status = wait_for_status(
        &dir,
        "the cluster did not come up",
        Duration::from_secs(15),
        |text| !text.contains("changing") && text.matches("leader 2").count() == 3,
    );
    assert!(
        status.contains("3 nodes, mutex raymond, election ring"),
        "{status}"
    );
    let out = Command::new(BIN)
        .args(["lock", "--timeout", "10s", "--cluster"])
        .arg(dir.join("cluster.toml"))
        .args([
            "--",
            "sh",
            "-c",
            "test -n \"$DISTSYNC_FENCING_TOKEN\" && exit 7",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "the command's exit status is lock's"
    );
    let pids: Vec<u32> = (0..3).map(|i| pid_of(&dir, i)).collect();
    let down = cluster(&dir, &["down"]);
    assert!(down.status.success());
    let text = String::from_utf8_lossy(&down.stdout);
    assert_eq!(text.matches(": stopped").count(), 3, "{text}");
    for pid in pids {
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(
            cmdline.is_empty(),
            "node process {pid} is gone after `cluster down`"
        );
    }
    let s = cluster(&dir, &["status"]);
    assert_eq!(s.status.code(), Some(1), "status reports the nodes down");
}
