//! A Jepsen-style suite for the lock service (issues 12 and 35): a 5-node cluster (bully,
//! separate node and client keys), 8 concurrent `distsync lock` clients each incrementing a
//! fenced counter, and one fault per case while they work:
//!
//! - pause: SIGSTOP of the node whose client holds the lock, for 1 s, then SIGCONT;
//! - kill: kill -9 of the holder's node, restarted 0.5 s later;
//! - restart-all: kill -9 of every node, all restarted;
//! - client-kill: kill -9 of the `lock` client whose command runs (the command dies with it);
//! - client-stop: SIGSTOP of the `lock` client whose command runs, for 2 s (longer than the
//!   node's client timeout, so the node drops it and grants the next), then SIGCONT;
//! - partition: the holder's node cut off from every other node and client (network
//!   namespaces, a veth taken down) for 1.5 s, then healed: its own test,
//!   `jepsen_style_partition_against_a_fenced_counter`, `#[ignore]`d with its need (root and
//!   iproute2) and run by CI with `--ignored`; it fails where namespaces cannot be made;
//! - forged: the issue's forged peer messages (largest view number), sent with the client key
//!   posing as node 3 to every node.
//!
//! Which algorithms: suzuki-kasami by default (the CI run); `DISTSYNC_JEPSEN_ALGOS=all` runs
//! every mutual-exclusion algorithm the service serves, or a comma-separated list those (the
//! campaign: `DISTSYNC_JEPSEN_ALGOS=all cargo test -p distsync-cli --test jepsen -- --nocapture`).
//! Which faults: every one by default; `DISTSYNC_JEPSEN_FAULTS` names some (separated by
//! commas, e.g. `client-kill,partition-minority`). `DISTSYNC_JEPSEN_KEEP=DIR` keeps the
//! cluster directory (logs, event files) of every failed `elect` case under DIR.
//!
//! The counter is a fenced resource: under flock(1), a command refuses to go on if its token
//! is not above the last one the file saw, and writes only if no newer token touched the file
//! meanwhile. Each command logs `start T` / `end T` in one event file (under the same flock),
//! so that the intervals of all commands are known (a command killed with its client is ended
//! by the test once its process is gone). Checked after every case:
//! - no two commands overlapped unless the fence refused one of them;
//! - no accepted token went backwards (tokens of accepted writes strictly increase);
//! - nothing was lost: the counter equals the number of accepted writes, and every invocation
//!   that exited 0 has its write among them;
//! - no holder exited 0 after its lock was granted to another: no other command started (in
//!   the event file's order, not by a clock) between its start and its end.
//!
//! The table of cases and results printed at the end is the one docs/net.md shows.
//!
//! `distsync elect` runs under the same kind of faults (`jepsen_style_faults_against_elected_commands`):
//! 5 candidates campaign for one election, 2 terms each, and each leader's command notes
//! `start T TIME` / `end T TIME` (or `term T TIME` when it gets SIGTERM) in an event file, T
//! the term's token and TIME the wall clock. The faults: the leader's node paused (1.5 s) or
//! killed, the leader's candidate killed, and the network split in two with the leader's node
//! on the minority side or on the majority side (the clients with the majority). An
//! independent checker compares every pair of terms and finds any overlap of their commands
//! longer than the bound docs/net.md states (none, for commands that end on SIGTERM), a
//! command that never ended, a lower token that started after a higher one, and a candidate
//! that exited 0 although its command was stopped. When a candidate exits the test notes `gone
//! T TIME`: a command killed before it could stamp its end (SIGKILL after the grace) ends there
//! at the latest, since it dies with its candidate; such terms are counted apart.

mod lock_common;

use lock_common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

const CLIENTS: usize = 8;
const ROUNDS: usize = 5;

/// $1 counter file, $2 events. A command stopped by `lock` (its lease lapsed)
/// notes its end when the SIGTERM comes, so its interval closes where it did: it waits for its
/// sleep with `wait`, which a trapped signal interrupts at once (a foreground `sleep` would
/// hold the trap back until it ended, and the SIGKILL one heartbeat later could come first,
/// leaving the interval open). The counter file's first line is `count last`, and every
/// accepted write adds its line `token count` below in the same rewrite (a new file renamed
/// into place): a command stopped at any point leaves the count and its log agreeing, as one
/// atomic write to a real resource would.
const COUNTER: &str = r#"
f="$1"; ev="$2"; t="$DISTSYNC_FENCING_TOKEN"
trap 'echo "end $t" >> "$ev"; exit 143' TERM
echo "$t"
exec 9>>"$f.lk"
flock 9
echo "start $t" >> "$ev"
read count last < "$f"
if [ "$t" -le "$last" ]; then echo "$t" >> "$f.refused"; echo "end $t" >> "$ev"; exit 3; fi
{ echo "$count $t"; tail -n +2 "$f"; } > "$f.new.$t" && mv "$f.new.$t" "$f"
flock -u 9
sleep 0.05 &
wait $!
flock 9
read count2 last2 < "$f"
if [ "$last2" != "$t" ]; then echo "$t" >> "$f.refused"; echo "end $t" >> "$ev"; exit 3; fi
next=$((count2 + 1))
{ echo "$next $t"; tail -n +2 "$f"; echo "$t $next"; } > "$f.new.$t" && mv "$f.new.$t" "$f"
echo "end $t" >> "$ev"
"#;

const TIMEOUTS_J: &str = "[timeouts]\nheartbeat = \"50ms\"\nheartbeat_timeout = \"500ms\"\n\
     answer_timeout = \"100ms\"\ncoordinator_timeout = \"800ms\"\n";
const CLIENT_KEY: &str = "client-secret-0123456789";

#[derive(Default)]
struct Row {
    case: String,
    invocations: usize,
    ok: usize,
    lost: usize,
    other: usize,
    accepted: usize,
    refused: usize,
    overlaps: usize,
    unfenced: usize,
    backwards: usize,
    missing: usize,
    stale_ok: usize,
    count: u64,
}

impl Row {
    fn passed(&self) -> bool {
        self.unfenced == 0
            && self.backwards == 0
            && self.missing == 0
            && self.stale_ok == 0
            && self.count == self.accepted as u64
    }
}

fn start(name: &str, netns: Option<Netns>, mutex: &str) -> TestCluster {
    let c = TestCluster::start_in(
        netns,
        name,
        5,
        mutex,
        "bully",
        TIMEOUTS_J,
        &format!("client_secret = \"{CLIENT_KEY}\"\n"),
    );
    let text = fs::read_to_string(&c.cluster)
        .unwrap()
        .replace("test-secret-0123456789", CLIENT_KEY)
        .replace(&format!("client_secret = \"{CLIENT_KEY}\"\n"), "");
    fs::write(c.dir.join("client.toml"), text).unwrap();
    c.settled(Duration::from_secs(30));
    c
}

/// Runs one case: the clients work while `nemesis` injects the fault once the counter reached
/// a few writes; then the history is checked.
fn case(c: &TestCluster, name: &str, nemesis: impl FnOnce(&TestCluster, &std::path::Path)) -> Row {
    let dir = c.dir.join(name.replace(' ', "-"));
    fs::create_dir_all(&dir).unwrap();
    let (file, ev, script) = (
        dir.join("counter"),
        dir.join("events"),
        dir.join("counter.sh"),
    );
    fs::write(&file, "0 0\n").unwrap();
    fs::write(&script, COUNTER).unwrap();
    let client_file = c.dir.join("client.toml");
    let results: Vec<(Option<i32>, Option<u64>)> = thread::scope(|s| {
        let workers: Vec<_> = (0..CLIENTS)
            .map(|k| {
                let (file, ev, script, client_file) = (&file, &ev, &script, &client_file);
                s.spawn(move || {
                    let mut out = Vec::new();
                    for _ in 0..ROUNDS {
                        let o = c
                            .client_bin()
                            .args(["lock", "-w", "30", "--cluster"])
                            .arg(client_file)
                            .args(["--node", &(k % 5).to_string(), "counter", "--", "sh"])
                            .args([script, file, ev])
                            .stderr(Stdio::piped())
                            .output()
                            .unwrap();
                        let token = String::from_utf8_lossy(&o.stdout).trim().parse().ok();
                        out.push((o.status.code(), token));
                    }
                    out
                })
            })
            .collect();
        let until = Instant::now() + Duration::from_secs(30);
        while counter_value(&file) < 8 && Instant::now() < until {
            thread::sleep(Duration::from_millis(10));
        }
        nemesis(c, &ev);
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    // The history: the accepted writes are the counter file's lines below its first.
    let accepted: Vec<u64> = lines(&file)
        .iter()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    let refused: BTreeSet<u64> = lines(&dir.join("counter.refused"))
        .iter()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    let h = check_history(&lines(&ev), &refused, &accepted, &results);
    Row {
        case: name.to_string(),
        invocations: results.len(),
        ok: results.iter().filter(|r| r.0 == Some(0)).count(),
        lost: results.iter().filter(|r| r.0 == Some(123)).count(),
        other: results
            .iter()
            .filter(|r| r.0 != Some(0) && r.0 != Some(123))
            .count(),
        accepted: accepted.len(),
        refused: refused.len(),
        overlaps: h.overlaps,
        unfenced: h.unfenced,
        backwards: h.backwards,
        missing: h.missing,
        stale_ok: h.stale_ok,
        count: counter_value(&file),
    }
}

/// What a history shows.
#[derive(Debug, PartialEq)]
struct History {
    /// Pairs of commands that ran at the same time.
    overlaps: usize,
    /// Of those, pairs where the fence refused neither.
    unfenced: usize,
    /// Accepted writes whose token is not above the previous accepted one.
    backwards: usize,
    /// Invocations that exited 0 whose write is not among the accepted ones.
    missing: usize,
    /// Invocations that exited 0 although another command started while theirs ran (their
    /// lock had been granted to another, and they were not told).
    stale_ok: usize,
}

/// Checks a history: `events` are the `start T` / `end T` lines in the order the commands wrote
/// them, `refused` the tokens the fence refused, `accepted` the tokens of accepted writes in
/// file order, `results` each invocation's (exit status, token).
fn check_history(
    events: &[String],
    refused: &BTreeSet<u64>,
    accepted: &[u64],
    results: &[(Option<i32>, Option<u64>)],
) -> History {
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    let (mut overlaps, mut unfenced) = (0, 0);
    for (i, l) in events.iter().enumerate() {
        let mut w = l.split_whitespace();
        let (what, t): (&str, u64) = (w.next().unwrap(), w.next().unwrap().parse().unwrap());
        if what == "start" {
            for &other in open.keys() {
                overlaps += 1;
                if !refused.contains(&other) && !refused.contains(&t) {
                    unfenced += 1;
                    eprintln!("token {t} started (event {i}) while {other} ran, neither refused");
                }
            }
            open.insert(t, i);
        } else {
            open.remove(&t);
        }
    }
    // The commands whose run overlapped a run of a higher token, in the event file's order:
    // tokens rise with every grant, so their lock had been granted to another (before they
    // started, or while they ran).
    let mut running: BTreeSet<u64> = BTreeSet::new();
    let mut overtaken: BTreeSet<u64> = BTreeSet::new();
    for l in events {
        let mut w = l.split_whitespace();
        let (what, t): (&str, u64) = (w.next().unwrap(), w.next().unwrap().parse().unwrap());
        if what == "start" {
            overtaken.extend(running.range(..t).copied());
            if running.range(t + 1..).next().is_some() {
                overtaken.insert(t);
            }
            running.insert(t);
        } else {
            running.remove(&t);
        }
    }
    let stale_ok = results
        .iter()
        .filter(|(code, t)| *code == Some(0) && t.is_some_and(|t| overtaken.contains(&t)))
        .inspect(|(_, t)| {
            eprintln!("token {t:?} exited 0 after another command started under the lock")
        })
        .count();
    let backwards = accepted.windows(2).filter(|w| w[1] <= w[0]).count();
    let accepted_set: BTreeSet<u64> = accepted.iter().copied().collect();
    let missing = results
        .iter()
        .filter(|(code, t)| *code == Some(0) && !t.is_some_and(|t| accepted_set.contains(&t)))
        .count();
    History {
        overlaps,
        unfenced,
        backwards,
        missing,
        stale_ok,
    }
}

/// The checker finds what it is for: an overlap the fence did not refuse, a token going
/// backwards, an acknowledged write that is not there; and accepts a fenced overlap.
#[test]
fn the_history_checker_catches_each_violation() {
    let ev = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let none = BTreeSet::new();
    let clean = check_history(
        &ev(&["start 1", "end 1", "start 2", "end 2"]),
        &none,
        &[1, 2],
        &[(Some(0), Some(1)), (Some(0), Some(2))],
    );
    assert_eq!(
        clean,
        History {
            overlaps: 0,
            unfenced: 0,
            backwards: 0,
            missing: 0,
            stale_ok: 0
        }
    );
    let overlap = ev(&["start 1", "start 2", "end 2", "end 1"]);
    assert_eq!(check_history(&overlap, &none, &[2], &[]).unfenced, 1);
    let fenced: BTreeSet<u64> = [1].into();
    let h = check_history(&overlap, &fenced, &[2], &[]);
    assert_eq!((h.overlaps, h.unfenced), (1, 0));
    assert_eq!(check_history(&[], &none, &[5, 3], &[]).backwards, 1);
    assert_eq!(
        check_history(&[], &none, &[1], &[(Some(0), Some(2))]).missing,
        1
    );
    // Token 1 exited 0 though token 2 started while it ran (fenced or not): told nothing.
    let h = check_history(
        &overlap,
        &fenced,
        &[2],
        &[(Some(0), Some(1)), (Some(0), Some(2))],
    );
    assert_eq!(h.stale_ok, 1);
    // Exiting 123 (lost) there is what a holder must do; 2 itself was not overtaken.
    let h = check_history(
        &overlap,
        &fenced,
        &[2],
        &[(Some(123), Some(1)), (Some(0), Some(2))],
    );
    assert_eq!(h.stale_ok, 0);
    // A stale holder (token 1) that starts while a newer one (2) runs, refused by the fence:
    // exiting 0 would be told nothing; the newer one is not overtaken by it.
    let late = ev(&["start 2", "start 1", "end 1", "end 2"]);
    let h = check_history(
        &late,
        &fenced,
        &[2],
        &[(Some(0), Some(2)), (Some(0), Some(1))],
    );
    assert_eq!(h.stale_ok, 1);
    let h = check_history(
        &late,
        &fenced,
        &[2],
        &[(Some(0), Some(2)), (Some(3), Some(1))],
    );
    assert_eq!(h.stale_ok, 0);
}

/// The node whose client holds the counter lock right now (asked for up to 5 s), so that the
/// fault hits a holder; `fallback` if none was seen.
fn holder(c: &TestCluster, fallback: usize) -> usize {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let j = c.leader_json();
        let h = j["nodes"].as_array().and_then(|ns| {
            ns.iter().find(|n| {
                n["holding"]
                    .as_array()
                    .is_some_and(|h| h.iter().any(|x| x == "counter"))
            })
        });
        if let Some(n) = h.and_then(|n| n["id"].as_u64()) {
            return n as usize;
        }
    }
    fallback
}

fn print_table(rows: &[Row]) {
    println!();
    println!("| case | invocations | exit 0 | lost (123) | other exits | accepted writes | refused by the fence | overlaps | overlaps not fenced | tokens backwards | acknowledged but lost | exit 0 after the lock passed on | counter | result |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.case,
            r.invocations,
            r.ok,
            r.lost,
            r.other,
            r.accepted,
            r.refused,
            r.overlaps,
            r.unfenced,
            r.backwards,
            r.missing,
            r.stale_ok,
            r.count,
            if r.passed() { "ok" } else { "FAILED" }
        );
    }
}

/// The `lock` client whose command runs right now, and that command: (client pid, command
/// pid, the command's token), asked for up to 5 s.
fn holding_client(c: &TestCluster) -> Option<(u32, u32, u64)> {
    running_command(c, b"lock", |var| var(b"DISTSYNC_FENCING_TOKEN="))
}

/// The `verb` client (`lock` or `elect`) of `c` whose command runs right now, and that command:
/// (client pid, command pid, what `read` takes from the command's environment through the
/// variable reader it is given), asked for up to 5 s. A command `read` finds nothing in is
/// passed over.
fn running_command<T>(
    c: &TestCluster,
    verb: &[u8],
    read: impl Fn(&dyn Fn(&[u8]) -> Option<u64>) -> Option<T>,
) -> Option<(u32, u32, T)> {
    let client_file = c.dir.join("client.toml");
    let client_file = client_file.as_os_str().as_encoded_bytes();
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        for entry in fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
                continue;
            };
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            if !(args.contains(&verb) && args.contains(&client_file)) {
                continue;
            }
            let children =
                fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
            // A command that has just exited (a zombie) is passed over: it holds nothing.
            for child in children
                .split_whitespace()
                .filter_map(|x| x.parse::<u32>().ok())
                .filter(|&child| alive(child))
            {
                let environ = fs::read(format!("/proc/{child}/environ")).unwrap_or_default();
                let var = |name: &[u8]| -> Option<u64> {
                    environ
                        .split(|&b| b == 0)
                        .find_map(|v| v.strip_prefix(name))
                        .and_then(|t| std::str::from_utf8(t).ok()?.parse().ok())
                };
                if let Some(found) = read(&var) {
                    return Some((pid, child, found));
                }
            }
        }
        thread::sleep(Duration::from_millis(5));
    }
    None
}

/// `kill SIG PID`; false if the process is gone.
fn try_signal(pid: u32, sig: &str) -> bool {
    std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// The faults of every algorithm's run (the partition's needs namespaces: its own cluster).
const FAULTS: [&str; 6] = [
    "pause",
    "kill",
    "restart-all",
    "client-kill",
    "client-stop",
    "forged",
];

/// Injects fault `name` into `c`, where `ev` is the case's event file.
fn nemesis(c: &TestCluster, name: &str, ev: &std::path::Path) {
    match name {
        "pause" => {
            let h = holder(c, 2);
            c.pause(h);
            thread::sleep(Duration::from_secs(1));
            c.resume(h);
        }
        "kill" => {
            let h = holder(c, 1);
            c.kill9(h);
            thread::sleep(Duration::from_millis(500));
            c.respawn(h);
        }
        "restart-all" => {
            for i in 0..5 {
                c.kill9(i);
            }
            for i in 0..5 {
                c.respawn(i);
            }
        }
        "client-kill" => {
            // The command dies with its client (PR_SET_PDEATHSIG), and cannot say so: it is
            // frozen first and its end written for it, so that its interval closes before the
            // client's death can let anyone else in (it does nothing more once frozen). A
            // command that ended between being found and frozen is passed over.
            let (client, command) = loop {
                let Some((client, command, token)) = holding_client(c) else {
                    panic!("no client was seen running its command");
                };
                if try_signal(command, "-STOP") {
                    use std::io::Write;
                    let mut f = fs::OpenOptions::new().append(true).open(ev).unwrap();
                    writeln!(f, "end {token}").unwrap();
                    break (client, command);
                }
            };
            // (Its client may have ended already: its lease lapsed while the command was
            // frozen, and it killed the command itself.)
            try_signal(client, "-KILL");
            wait_for(
                "the killed client's command is gone",
                Duration::from_secs(10),
                || !alive(command),
            );
        }
        "client-stop" => {
            let client = loop {
                let Some((client, _, _)) = holding_client(c) else {
                    panic!("no client was seen running its command");
                };
                if try_signal(client, "-STOP") {
                    break client;
                }
            };
            thread::sleep(Duration::from_secs(2));
            try_signal(client, "-CONT");
        }
        "forged" => {
            use distsync_net::auth::Role;
            use distsync_net::wire::PeerMsg;
            let users = distsync_net::Cluster::load(&c.dir.join("client.toml")).unwrap();
            let rt = distsync_net::runtime().unwrap();
            rt.block_on(async {
                for addr in &users.addrs {
                    let Ok(s) = distsync_net::tokio::net::TcpStream::connect(addr).await else {
                        continue;
                    };
                    let r = distsync_net::connection::initiate(
                        s,
                        users.secret(),
                        Role::Peer(distsync_core::NodeId(3)),
                    )
                    .await;
                    if let Ok((_r, mut w)) = r {
                        let _ = w.send(&PeerMsg::Prepare { epoch: u32::MAX }).await;
                        let _ = w.send(&PeerMsg::Stale { seen: u32::MAX }).await;
                        panic!("{addr}: the client key opened a link as node 3");
                    }
                }
            });
        }
        "partition" => {
            let h = holder(c, 2);
            let ns = c.netns.as_ref().unwrap();
            ns.cut(h);
            thread::sleep(Duration::from_millis(1500));
            ns.heal(h);
        }
        other => panic!("no fault {other}"),
    }
}

/// The algorithms of this run: `DISTSYNC_JEPSEN_ALGOS` (`all`, or names separated by commas),
/// suzuki-kasami by default.
fn algorithms() -> Vec<String> {
    use distsync_algorithms::registry::{self, Family};
    match std::env::var("DISTSYNC_JEPSEN_ALGOS") {
        Ok(v) if v == "all" => registry::entries()
            .iter()
            .filter(|e| e.family == Family::Mutex && e.name != "maekawa-basic")
            .map(|e| e.name.to_string())
            .collect(),
        Ok(v) => v.split(',').map(|a| a.trim().to_string()).collect(),
        Err(_) => vec!["suzuki-kasami".to_string()],
    }
}

/// Whether fault `name` is one this run injects: `DISTSYNC_JEPSEN_FAULTS` (names separated by
/// commas), every fault by default.
fn wanted(name: &str) -> bool {
    match std::env::var("DISTSYNC_JEPSEN_FAULTS") {
        Ok(v) => v.split(',').any(|f| f.trim() == name),
        Err(_) => true,
    }
}

#[test]
fn jepsen_style_faults_against_a_fenced_counter() {
    counter_campaign(false);
}

/// The partition case: the cluster's nodes and clients in network namespaces of their own.
#[test]
#[ignore = "needs root and iproute2 (network namespaces)"]
fn jepsen_style_partition_against_a_fenced_counter() {
    counter_campaign(true);
}

/// The cases of every algorithm: the faults of one cluster on 127.0.0.1, or (`partitions`) the
/// partition, which needs a cluster in network namespaces.
fn counter_campaign(partitions: bool) {
    let _g = lock_guard();
    let mut rows = Vec::new();
    let algos = algorithms();
    for algo in &algos {
        let tag = |fault: &str| {
            if algos.len() == 1 {
                fault.to_string()
            } else {
                format!("{algo} {fault}")
            }
        };
        if !partitions && FAULTS.iter().any(|f| wanted(f)) {
            let c = start("jepsen", None, algo);
            for fault in FAULTS.into_iter().filter(|f| wanted(f)) {
                rows.push(case(&c, &tag(fault), |c, ev| nemesis(c, fault, ev)));
                eprintln!("done: {}", tag(fault));
            }
        }
        if partitions && wanted("partition") {
            let ns = Netns::create(5)
                .unwrap_or_else(|why| panic!("cannot make network namespaces: {why}"));
            let c = start("jepsen-netns", Some(ns), algo);
            rows.push(case(&c, &tag("partition"), |c, ev| {
                nemesis(c, "partition", ev)
            }));
        }
    }
    print_table(&rows);
    for r in &rows {
        assert!(
            r.passed(),
            "case {}: {} overlaps without a refusal, {} tokens backwards, {} acknowledged writes lost, {} exits 0 after the lock passed on, counter {} vs {} accepted writes",
            r.case,
            r.unfenced,
            r.backwards,
            r.missing,
            r.stale_ok,
            r.count,
            r.accepted
        );
        assert!(
            r.accepted >= 10,
            "case {}: the clients made progress ({} writes)",
            r.case,
            r.accepted
        );
    }
}

// ---------------------------------------------------------------------------------------------
// `distsync elect` under the same faults (issue 35, item 2): a leader's command never overlaps
// its successor's by more than the bound docs/net.md states.

/// How many `elect` candidates campaign at once, and how many terms each asks for.
const CANDIDATES: usize = 5;
const TERMS: usize = 2;

/// The bound on an overlap of two leaders' commands, in milliseconds, for commands that end
/// when they get SIGTERM and candidates that are not themselves paused (docs/net.md, Client-side
/// leases): the command gets SIGTERM when its candidate's lease lapses or its leadership is
/// lost, and nobody else can be granted the term before the node's own lease, which outlasts
/// the candidate's, has run out. So none.
const ELECT_BOUND_MS: f64 = 0.0;

/// $1 the events file. A leader's command: notes `start T TIME`, works for 0.8 s (longer than a
/// lease, so that a fault lands while it runs), notes `end T TIME`; on SIGTERM notes `term T TIME` and exits at once. TIME is bash's `$EPOCHREALTIME` (the
/// wall clock, read without a fork), T the term's token. It waits for each step with `wait`,
/// which a trapped signal interrupts at once.
const LEADER: &str = r#"
ev="$1"; t="$DISTSYNC_FENCING_TOKEN"
trap 'echo "term $t $EPOCHREALTIME" >> "$ev"; exit 143' TERM
echo "start $t $EPOCHREALTIME" >> "$ev"
echo "$t"
i=0
while [ $i -lt 16 ]; do sleep 0.05 & wait $!; i=$((i+1)); done
echo "end $t $EPOCHREALTIME" >> "$ev"
"#;

/// The faults of the `elect` runs: the leader's node paused or killed, the leader's candidate
/// killed, and the network split with the leader's node on the minority side or on the
/// majority side (the last two need namespaces: a cluster of their own).
const ELECT_FAULTS: [&str; 3] = ["pause", "kill", "client-kill"];
const ELECT_SPLITS: [&str; 2] = ["partition-minority", "partition-majority"];

#[derive(Default)]
struct ElectRow {
    case: String,
    invocations: usize,
    ok: usize,
    lost: usize,
    other: usize,
    terms: usize,
    stopped: usize,
    h: Terms,
}

impl ElectRow {
    fn passed(&self) -> bool {
        self.h.beyond == 0 && self.h.unended == 0 && self.h.backwards == 0 && self.h.stopped_ok == 0
    }
}

/// What the checker finds in the `start`/`end`/`term` stamps of the leaders' commands.
#[derive(Debug, Default, PartialEq)]
struct Terms {
    /// Pairs of terms whose commands ran at the same time, by their stamps.
    overlaps: usize,
    /// The longest of those overlaps, in milliseconds.
    max_overlap_ms: f64,
    /// Overlaps longer than the bound.
    beyond: usize,
    /// Terms whose command started and has no end (neither `end` nor `term`, nor `gone`).
    unended: usize,
    /// Terms whose command left no end stamp of its own (killed: SIGKILL after the grace, or
    /// with its candidate): their end is taken as their candidate's exit (`gone`), which is
    /// no earlier than the command's.
    unstamped: usize,
    /// Terms that started after a term with a higher token had started.
    backwards: usize,
    /// Invocations that exited 0 though their command was stopped (`term`).
    stopped_ok: usize,
    /// Of the commands stopped (`term`), the shortest time from the stop to the start of a
    /// later term, in milliseconds: how far from the bound the closest one came.
    closest_after_stop_ms: Option<f64>,
}

/// The checker, independent of the service: `events` are the lines `start T TIME`, `end T
/// TIME`, `term T TIME` (TIME in seconds); a term runs from its `start` to its first `end` or
/// `term`, or, with neither, to `gone T TIME`, which the test writes when the term's candidate
/// has exited (its command cannot outlive it). Every pair of terms is compared (not only successive ones). `results` are the
/// invocations' (exit status, token).
fn check_terms(events: &[String], bound_ms: f64, results: &[(Option<i32>, Option<u64>)]) -> Terms {
    let mut starts: BTreeMap<u64, f64> = BTreeMap::new();
    let mut ends: BTreeMap<u64, f64> = BTreeMap::new();
    let mut stopped: BTreeSet<u64> = BTreeSet::new();
    let mut gone: BTreeMap<u64, f64> = BTreeMap::new();
    for l in events {
        let w: Vec<&str> = l.split_whitespace().collect();
        let (Some(what), Some(t), Some(at)) = (w.first(), w.get(1), w.get(2)) else {
            panic!("a bad event line: {l:?}");
        };
        let (t, at): (u64, f64) = (t.parse().unwrap(), at.parse().unwrap());
        match *what {
            "start" => {
                starts.entry(t).or_insert(at);
            }
            "end" | "term" => {
                let e = ends.entry(t).or_insert(at);
                *e = e.min(at);
                if *what == "term" {
                    stopped.insert(t);
                }
            }
            "gone" => {
                gone.entry(t).or_insert(at);
            }
            other => panic!("a bad event {other:?} in {l:?}"),
        }
    }
    let mut h = Terms::default();
    let terms: Vec<(u64, f64, f64)> = starts
        .iter()
        .map(|(&t, &s)| {
            let e = ends.get(&t).copied().unwrap_or_else(|| match gone.get(&t) {
                Some(&g) => {
                    h.unstamped += 1;
                    eprintln!(
                        "term {t}: its command left no end stamp; its candidate exited at {g:.6}"
                    );
                    g
                }
                None => {
                    h.unended += 1;
                    eprintln!("term {t}: its command started and never ended");
                    f64::INFINITY
                }
            });
            (t, s, e)
        })
        .collect();
    for (i, &(t1, s1, e1)) in terms.iter().enumerate() {
        for &(t2, s2, e2) in &terms[i + 1..] {
            let overlap_ms = (e1.min(e2) - s1.max(s2)) * 1000.0;
            if overlap_ms > 0.0 {
                h.overlaps += 1;
                h.max_overlap_ms = h.max_overlap_ms.max(overlap_ms);
                if overlap_ms > bound_ms {
                    h.beyond += 1;
                    eprintln!("terms {t1} and {t2}: their commands overlapped {overlap_ms:.1} ms");
                }
            }
            for (t, e, s) in [(t1, e1, s2), (t2, e2, s1)] {
                if stopped.contains(&t) && s >= e {
                    let gap = (s - e) * 1000.0;
                    h.closest_after_stop_ms =
                        Some(h.closest_after_stop_ms.map_or(gap, |g| g.min(gap)));
                }
            }
            // Tokens number the terms: a later term has a higher one.
            if (s2 - s1) * (t2 as f64 - t1 as f64) < 0.0 {
                h.backwards += 1;
                eprintln!("terms {t1} and {t2}: the lower token started later");
            }
        }
    }
    h.stopped_ok = results
        .iter()
        .filter(|(code, t)| *code == Some(0) && t.is_some_and(|t| stopped.contains(&t)))
        .count();
    h
}

/// The overlap checker finds an overlap beyond the bound, a term never ended, a lower token
/// starting later and a stopped command reported as a success; and passes a clean history and
/// one whose terms only touch.
#[test]
fn the_term_checker_catches_each_violation() {
    let ev = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let clean = ev(&[
        "start 1 10.0",
        "end 1 10.3",
        "start 2 10.3",
        "term 2 10.5",
        "start 5 11.0",
        "end 5 11.3",
    ]);
    let h = check_terms(&clean, 0.0, &[(Some(0), Some(1)), (Some(123), Some(2))]);
    let closest = h.closest_after_stop_ms.expect("term 2 was stopped");
    assert!((closest - 500.0).abs() < 1e-6, "{h:?}");
    assert_eq!(
        h,
        Terms {
            closest_after_stop_ms: h.closest_after_stop_ms,
            ..Terms::default()
        }
    );
    // Term 1 stopped 40 ms after term 2 started: beyond a bound of 0, within one of 50 ms.
    let late = ev(&["start 1 10.0", "start 2 10.26", "term 1 10.3", "end 2 10.6"]);
    let h = check_terms(&late, 0.0, &[]);
    assert_eq!((h.overlaps, h.beyond), (1, 1));
    assert!((h.max_overlap_ms - 40.0).abs() < 1e-6, "{h:?}");
    assert_eq!(check_terms(&late, 50.0, &[]).beyond, 0);
    // Every pair counts, not only successive terms: 1 runs on past 2 and into 3.
    let long = ev(&[
        "start 1 10.0",
        "start 2 10.1",
        "end 2 10.2",
        "start 3 10.3",
        "end 3 10.4",
        "end 1 10.5",
    ]);
    assert_eq!(check_terms(&long, 0.0, &[]).beyond, 2);
    // A command that never ended overlaps everything after it.
    let h = check_terms(
        &ev(&["start 1 10.0", "start 2 11.0", "end 2 11.3"]),
        0.0,
        &[],
    );
    assert_eq!((h.unended, h.beyond), (1, 1));
    // Tokens out of order with the starts.
    let h = check_terms(
        &ev(&["start 2 10.0", "end 2 10.1", "start 1 10.2", "end 1 10.3"]),
        0.0,
        &[],
    );
    assert_eq!(h.backwards, 1);
    // A stopped command whose candidate exited 0.
    let h = check_terms(
        &ev(&["start 1 10.0", "term 1 10.1"]),
        0.0,
        &[(Some(0), Some(1))],
    );
    assert_eq!(h.stopped_ok, 1);
    // A command killed without a stamp ends at its candidate's exit: an overlap up to there
    // counts; its own stamp, when there is one, comes first.
    let killed = ev(&[
        "start 1 10.0",
        "start 2 10.5",
        "gone 1 10.6",
        "end 2 10.8",
        "gone 2 10.9",
    ]);
    let h = check_terms(&killed, 0.0, &[]);
    assert_eq!((h.unended, h.unstamped, h.beyond), (0, 1, 1), "{h:?}");
    assert!((h.max_overlap_ms - 100.0).abs() < 1e-6, "{h:?}");
    let h = check_terms(&ev(&["start 1 10.0", "gone 1 10.4"]), 0.0, &[]);
    assert_eq!((h.unended, h.unstamped, h.beyond), (0, 1, 0), "{h:?}");
}

/// The `elect` candidate whose command runs right now: (candidate pid, command pid, token,
/// node it leads through), asked for up to 5 s.
fn leading(c: &TestCluster) -> Option<(u32, u32, u64, usize)> {
    let found = running_command(c, b"elect", |var| {
        Some((
            var(b"DISTSYNC_FENCING_TOKEN=")?,
            var(b"DISTSYNC_HOLDER=")? as usize,
        ))
    });
    found.map(|(pid, child, (token, node))| (pid, child, token, node))
}

/// Injects fault `name` into an `elect` run on `c`, where `ev` is the case's event file.
fn elect_nemesis(c: &TestCluster, name: &str, ev: &std::path::Path) {
    let Some((candidate, command, token, node)) = leading(c) else {
        panic!("no leader's command was seen running");
    };
    eprintln!("{name}: term {token} leads through node {node}");
    match name {
        "pause" => {
            c.pause(node);
            thread::sleep(Duration::from_millis(1500));
            c.resume(node);
        }
        "kill" => {
            c.kill9(node);
            thread::sleep(Duration::from_millis(500));
            c.respawn(node);
        }
        "client-kill" => {
            // The command dies with its candidate (PR_SET_PDEATHSIG) and cannot note its end:
            // it is frozen first and its end written for it (it does nothing once frozen), then
            // the candidate is killed and the command must be gone. A command that ended
            // between being found and frozen noted its own end; the checker takes the first.
            if try_signal(command, "-STOP") {
                use std::io::Write;
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs_f64();
                let mut f = fs::OpenOptions::new().append(true).open(ev).unwrap();
                writeln!(f, "end {token} {now:.6}").unwrap();
            }
            try_signal(candidate, "-KILL");
            wait_for(
                "the killed candidate's command is gone",
                Duration::from_secs(10),
                || !alive(command),
            );
        }
        "partition-minority" | "partition-majority" => {
            // Five nodes: two on one side, three on the other; the clients with the three.
            let others: Vec<usize> = (0..5).rev().filter(|&i| i != node).collect();
            let side: Vec<usize> = if name == "partition-minority" {
                vec![node, others[0]]
            } else {
                // The two highest other ids: the bully leader among them, most often, so the
                // majority elects another and changes view around the leader's node.
                others[..2].to_vec()
            };
            let ns = c.netns.as_ref().unwrap();
            ns.split(&side);
            thread::sleep(Duration::from_millis(2000));
            ns.join(&side);
        }
        other => panic!("no fault {other}"),
    }
}

/// Runs one `elect` case: the candidates campaign while `nemesis` injects the fault once a few
/// terms have started; then the stamps are checked.
fn elect_case(c: &TestCluster, name: &str, fault: &str) -> ElectRow {
    let dir = c.dir.join(format!("elect-{}", name.replace(' ', "-")));
    fs::create_dir_all(&dir).unwrap();
    let (ev, script) = (dir.join("events"), dir.join("leader.sh"));
    fs::write(&ev, "").unwrap();
    fs::write(&script, LEADER).unwrap();
    let client_file = c.dir.join("client.toml");
    let started = || lines(&ev).iter().filter(|l| l.starts_with("start")).count();
    let results: Vec<(Option<i32>, Option<u64>)> = thread::scope(|s| {
        let workers: Vec<_> = (0..CANDIDATES)
            .map(|k| {
                let (ev, script, client_file) = (&ev, &script, &client_file);
                s.spawn(move || {
                    let mut out = Vec::new();
                    for round in 0..TERMS {
                        let o = c
                            .client_bin()
                            .args(["elect", "-w", "30s", "--grace", "1s", "--cluster"])
                            .arg(client_file)
                            .args(["--node", &(k % 5).to_string(), "job", "--", "bash"])
                            .arg(script)
                            .arg(ev)
                            .env("LC_ALL", "C")
                            .stderr(Stdio::piped())
                            .output()
                            .unwrap();
                        let token = String::from_utf8_lossy(&o.stdout).trim().parse().ok();
                        if let Some(t) = token {
                            // The candidate has exited, so its command has ended (it dies with
                            // its candidate): `gone` bounds a command killed before it could
                            // stamp its own end (the checker takes the earliest end).
                            use std::io::Write;
                            let now = std::time::SystemTime::now()
                                .duration_since(std::time::UNIX_EPOCH)
                                .unwrap()
                                .as_secs_f64();
                            // One write: the commands append to the same file.
                            let mut f = fs::OpenOptions::new().append(true).open(ev).unwrap();
                            f.write_all(format!("gone {t} {now:.6}\n").as_bytes())
                                .unwrap();
                        }
                        // What the candidate said (elected, lost and why), kept with the case's
                        // events for DISTSYNC_JEPSEN_KEEP.
                        let said = format!(
                            "exit {:?}, token {token:?}\n{}",
                            o.status.code(),
                            String::from_utf8_lossy(&o.stderr)
                        );
                        let _ = fs::write(
                            ev.with_file_name(format!("candidate-{k}-{round}.err")),
                            said,
                        );
                        out.push((o.status.code(), token));
                    }
                    out
                })
            })
            .collect();
        let until = Instant::now() + Duration::from_secs(30);
        while started() < 3 && Instant::now() < until {
            thread::sleep(Duration::from_millis(10));
        }
        elect_nemesis(c, fault, &ev);
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let events = lines(&ev);
    let h = check_terms(&events, ELECT_BOUND_MS, &results);
    let row = ElectRow {
        case: name.to_string(),
        invocations: results.len(),
        ok: results.iter().filter(|r| r.0 == Some(0)).count(),
        lost: results.iter().filter(|r| r.0 == Some(123)).count(),
        other: results
            .iter()
            .filter(|r| r.0 != Some(0) && r.0 != Some(123))
            .count(),
        terms: events.iter().filter(|l| l.starts_with("start")).count(),
        stopped: events.iter().filter(|l| l.starts_with("term")).count(),
        h,
    };
    keep_if_failed(c, name, row.passed());
    row
}

/// With `DISTSYNC_JEPSEN_KEEP=DIR`, a failed case's cluster directory (the nodes' logs, the
/// event files) is copied to DIR/CASE before the cluster is gone.
fn keep_if_failed(c: &TestCluster, name: &str, passed: bool) {
    let Some(keep) = std::env::var_os("DISTSYNC_JEPSEN_KEEP").filter(|_| !passed) else {
        return;
    };
    let to = std::path::Path::new(&keep).join(name.replace(' ', "-"));
    let _ = fs::create_dir_all(&to);
    let ok = std::process::Command::new("cp")
        .arg("-r")
        .arg(c.dir.join("."))
        .arg(&to)
        .status()
        .is_ok_and(|s| s.success());
    eprintln!(
        "case {name}: {} {}",
        if ok {
            "kept in"
        } else {
            "could not keep it in"
        },
        to.display()
    );
}

fn print_elect_table(rows: &[ElectRow]) {
    println!();
    println!("| case | invocations | exit 0 | lost (123) | other exits | terms | commands stopped | overlapping pairs | longest overlap (ms) | bound (ms) | beyond the bound | closest start after a stop (ms) | never ended | ended without a stamp | tokens out of order | exit 0 though stopped | result |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.case,
            r.invocations,
            r.ok,
            r.lost,
            r.other,
            r.terms,
            r.stopped,
            r.h.overlaps,
            r.h.max_overlap_ms,
            ELECT_BOUND_MS,
            r.h.beyond,
            r.h.closest_after_stop_ms
                .map_or("-".to_string(), |g| format!("{g:.0}")),
            r.h.unended,
            r.h.unstamped,
            r.h.backwards,
            r.h.stopped_ok,
            if r.passed() { "ok" } else { "FAILED" }
        );
    }
}

#[test]
fn jepsen_style_faults_against_elected_commands() {
    elect_campaign(false);
}

/// The split cases: the cluster's nodes and candidates in network namespaces of their own.
#[test]
#[ignore = "needs root and iproute2 (network namespaces)"]
fn jepsen_style_partitions_against_elected_commands() {
    elect_campaign(true);
}

/// The `elect` cases of every algorithm: the faults of one cluster on 127.0.0.1, or
/// (`partitions`) both sides of a split, which need a cluster in network namespaces.
fn elect_campaign(partitions: bool) {
    let _g = lock_guard();
    let mut rows = Vec::new();
    let algos = algorithms();
    for algo in &algos {
        let tag = |fault: &str| {
            if algos.len() == 1 {
                fault.to_string()
            } else {
                format!("{algo} {fault}")
            }
        };
        if !partitions && ELECT_FAULTS.iter().any(|f| wanted(f)) {
            let c = start("jepsen-elect", None, algo);
            for fault in ELECT_FAULTS.into_iter().filter(|f| wanted(f)) {
                rows.push(elect_case(&c, &tag(fault), fault));
                eprintln!("done: elect {}", tag(fault));
            }
        }
        let splits: Vec<&str> = ELECT_SPLITS.into_iter().filter(|f| wanted(f)).collect();
        if !partitions || splits.is_empty() {
            continue;
        }
        let ns =
            Netns::create(5).unwrap_or_else(|why| panic!("cannot make network namespaces: {why}"));
        let c = start("jepsen-elect-netns", Some(ns), algo);
        for fault in splits {
            rows.push(elect_case(&c, &tag(fault), fault));
            eprintln!("done: elect {}", tag(fault));
        }
    }
    print_elect_table(&rows);
    for r in &rows {
        assert!(
            r.passed(),
            "elect case {}: {} overlaps beyond {} ms (longest {:.1} ms), {} commands never ended, {} tokens out of order, {} exits 0 though stopped",
            r.case,
            r.h.beyond,
            ELECT_BOUND_MS,
            r.h.max_overlap_ms,
            r.h.unended,
            r.h.backwards,
            r.h.stopped_ok
        );
        assert!(
            r.terms >= 5,
            "elect case {}: the candidates made progress ({} terms)",
            r.case,
            r.terms
        );
    }
}
