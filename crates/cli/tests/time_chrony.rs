//! `distsync time serve` and `time query` against chrony, the NTP daemon people run:
//! - chronyd as a one-shot client (`-Q`: measure and exit, never setting the clock) accepts
//!   our server and measures the same offset we do (within 1ms), and fails on our server when
//!   it says it is unsynchronized;
//! - our client reads a chronyd server (`local stratum 8`, `-x`: never touching the clock) at
//!   stratum 8 with an offset near 0, and rejects the same chronyd without `local` (leap 3,
//!   stratum 0).
//!
//! Everything runs on 127.0.0.1 on unprivileged ports, with private pid and drift files, and
//! every process started is killed when its test ends, even on failure. chronyd must be at
//! /usr/sbin/chronyd (apt-get install chrony), so the tests are `#[ignore = "needs chronyd"]`:
//! `cargo test` lists them as ignored, with the reason, and `cargo test -- --include-ignored`
//! (what CI runs) runs them, failing where chronyd is missing rather than passing without having
//! run.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_distsync");
const CHRONYD: &str = "/usr/sbin/chronyd";
/// One chronyd at a time: they are short, and the machine has 2 cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// chronyd is here: a test that needs it fails where it is missing (these tests are ignored
/// unless asked for: `--include-ignored`).
fn need_chronyd() {
    assert!(
        Path::new(CHRONYD).exists(),
        "{CHRONYD} is missing: install it with apt-get install chrony"
    );
}

/// chronyd's flags for who it runs as: as root, stay root (so it can write its private pid
/// file, and never drop to _chrony); otherwise, don't insist on root.
fn user_flags() -> Vec<&'static str> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        vec!["-u", "root"]
    } else {
        vec!["-U"]
    }
}

/// A free UDP port on 127.0.0.1 (bound to 0, then let go).
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A scratch directory, removed when dropped (declared first in a test, so dropped after the
/// processes that write into it are killed).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("time-chrony-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// A child killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `distsync time serve --listen 127.0.0.1:P ARGS`, once it says it serves.
fn serve(args: &[&str]) -> (Killed, u16) {
    let port = free_port();
    let mut child = Command::new(BIN)
        .args(["time", "serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("serving NTP on"), "{line:?}");
    (Killed(child), port)
}

/// Runs a command to completion, killing it after `limit` (its output is small: it fits the
/// pipes while we wait).
fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// chronyd as a one-shot client of 127.0.0.1:port: `-Q` measures and exits without setting
/// the clock, `-t 5` bounds it, `-f /dev/null` reads no system configuration, the command
/// port and socket are off, the pid file is private.
fn chronyd_once(port: u16, dir: &Path) -> (Option<i32>, String) {
    chronyd_once_with(port, dir, None)
}

/// `chronyd_once`, signing with key 1 of the key file `keys` when given.
fn chronyd_once_with(port: u16, dir: &Path, keys: Option<&Path>) -> (Option<i32>, String) {
    let mut cmd = Command::new(CHRONYD);
    cmd.args(user_flags())
        .args(["-Q", "-t", "5", "-f", "/dev/null"])
        .arg(format!("pidfile {}", dir.join("client.pid").display()))
        .args(["cmdport 0", "bindcmdaddress /"]);
    match keys {
        Some(k) => cmd.arg(format!("keyfile {}", k.display())).arg(format!(
            "server 127.0.0.1 port {port} key 1 iburst maxsamples 1"
        )),
        None => cmd.arg(format!("server 127.0.0.1 port {port} iburst maxsamples 1")),
    };
    let out = run_bounded(&mut cmd, Duration::from_secs(20));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

/// "System clock wrong by 0.037095 seconds" in chronyd's log, in ns.
fn chrony_offset(log: &str) -> Option<i64> {
    let rest = log.split("System clock wrong by ").nth(1)?;
    let secs: f64 = rest.split_whitespace().next()?.parse().ok()?;
    Some((secs * 1e9).round() as i64)
}

fn query_json(port: u16, samples: u32) -> (Option<i32>, serde_json::Value) {
    query_json_with(port, samples, &[])
}

fn query_json_with(port: u16, samples: u32, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = run_bounded(
        Command::new(BIN)
            .args([
                "time",
                "query",
                &format!("127.0.0.1:{port}"),
                "--samples",
                &samples.to_string(),
                "--timeout",
                "1s",
                "--json",
            ])
            .args(extra),
        Duration::from_secs(30),
    );
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), v)
}

#[test]
#[ignore = "needs chronyd (/usr/sbin/chronyd)"]
fn chronyd_accepts_our_server_and_measures_the_offset_we_do() {
    let _one = serial();
    need_chronyd();
    let dir = scratch("accepts");
    let skew_ms = 37;
    let (_server, port) = serve(&["--skew", &format!("{skew_ms}ms")]);
    let (code, ours) = query_json(port, 4);
    assert_eq!(code, Some(0), "{ours}");
    let ours = ours["servers"][0]["offset_ns"].as_i64().unwrap();
    let (code, log) = chronyd_once(port, &dir);
    assert_eq!(code, Some(0), "chronyd failed:\n{log}");
    let theirs = chrony_offset(&log).unwrap_or_else(|| panic!("no offset in:\n{log}"));
    println!("skew {skew_ms}ms: we measure {ours}ns, chronyd {theirs}ns");
    assert!(
        (theirs - ours).abs() < 1_000_000,
        "chronyd {theirs}ns vs ours {ours}ns"
    );
    assert!((ours - skew_ms * 1_000_000).abs() < 1_000_000, "{ours}");
}

#[test]
#[ignore = "needs chronyd (/usr/sbin/chronyd)"]
fn chronyd_fails_on_our_server_when_it_is_unsynchronized() {
    let _one = serial();
    need_chronyd();
    let dir = scratch("unsync");
    let (_server, port) = serve(&["--unsynchronized"]);
    let (code, log) = chronyd_once(port, &dir);
    assert_ne!(
        code,
        Some(0),
        "chronyd accepted an unsynchronized server:\n{log}"
    );
    assert!(chrony_offset(&log).is_none(), "{log}");
    assert!(log.contains("Timeout reached"), "{log}");
}

/// A chronyd server on 127.0.0.1:port that never touches the clock (`-x`), with `extra`
/// directives.
fn chronyd_server(dir: &Path, port: u16, extra: &str) -> Killed {
    let conf = dir.join("chrony.conf");
    std::fs::write(
        &conf,
        format!(
            "port {port}\nbindaddress 127.0.0.1\nallow 127.0.0.1\ncmdport 0\nbindcmdaddress /\n\
             pidfile {}\ndriftfile {}\n{extra}\n",
            dir.join("server.pid").display(),
            dir.join("drift").display()
        ),
    )
    .unwrap();
    let child = Command::new(CHRONYD)
        .args(user_flags())
        .args(["-x", "-d", "-f"])
        .arg(&conf)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Killed(child)
}

/// Queries until chronyd answers at all (it needs a moment to start); at most ~10s.
fn query_until_answered(port: u16) -> (Option<i32>, serde_json::Value) {
    for _ in 0..40 {
        let (code, v) = query_json(port, 2);
        let why = v["servers"][0]["rejected"]["code"].as_str().unwrap_or("");
        if why != "timeout" && why != "unreachable" {
            return (code, v);
        }
        thread::sleep(Duration::from_millis(250));
    }
    panic!("chronyd on port {port} never answered");
}

#[test]
#[ignore = "needs chronyd (/usr/sbin/chronyd)"]
fn our_client_reads_a_chronyd_server_at_stratum_8() {
    let _one = serial();
    need_chronyd();
    let dir = scratch("server");
    let port = free_port();
    let _chronyd = chronyd_server(&dir, port, "local stratum 8");
    let (code, v) = query_until_answered(port);
    assert_eq!(code, Some(0), "{v}");
    let s = &v["servers"][0];
    assert_eq!(s["usable"], true, "{v}");
    assert_eq!(s["stratum"], 8, "{v}");
    // chronyd serves the same system clock: the true offset is 0, within the root distance.
    let offset = s["offset_ns"].as_i64().unwrap();
    let distance = s["root_distance_ns"].as_i64().unwrap();
    println!("chronyd local stratum 8: offset {offset}ns, root distance {distance}ns");
    assert!(offset.abs() <= distance, "{v}");
    assert!(offset.abs() < 1_000_000, "{v}");
}

#[test]
#[ignore = "needs chronyd (/usr/sbin/chronyd)"]
fn our_client_rejects_a_chronyd_server_without_a_source() {
    let _one = serial();
    need_chronyd();
    let dir = scratch("nolocal");
    let port = free_port();
    let _chronyd = chronyd_server(&dir, port, "");
    let (code, v) = query_until_answered(port);
    assert_eq!(code, Some(1), "{v}");
    let s = &v["servers"][0];
    assert_eq!(s["usable"], false, "{v}");
    assert_eq!(s["stratum"], 0, "{v}");
    assert_eq!(s["rejected"]["code"], "unsynchronized", "{v}");
    assert!(
        s["rejected"]["reason"]
            .as_str()
            .unwrap()
            .contains("leap indicator 3"),
        "{v}"
    );
}

#[test]
#[ignore = "needs chronyd (/usr/sbin/chronyd)"]
fn our_server_follows_a_chronyd_upstream_one_stratum_down() {
    let _one = serial();
    need_chronyd();
    let dir = scratch("upstream");
    let port = free_port();
    let _chronyd = chronyd_server(&dir, port, "local stratum 8");
    query_until_answered(port);
    let upstream = format!("127.0.0.1:{port}");
    let (_server, ours) = serve(&["--upstream", &upstream, "--poll", "200ms"]);
    // Unsynchronized (rejected) until its first good sample from chronyd, then stratum 9.
    let mut last = serde_json::Value::Null;
    for _ in 0..50 {
        let (code, v) = query_json(ours, 1);
        if code == Some(0) {
            last = v;
            break;
        }
        assert_eq!(v["servers"][0]["rejected"]["code"], "unsynchronized", "{v}");
        thread::sleep(Duration::from_millis(100));
    }
    let s = &last["servers"][0];
    assert_eq!(s["stratum"], 9, "{last}");
    assert_eq!(s["refid"], "127.0.0.1", "{last}");
    let offset = s["offset_ns"].as_i64().unwrap();
    assert!(
        offset.abs() <= s["root_distance_ns"].as_i64().unwrap(),
        "{last}"
    );
}

/// The shared key (id 1) and a key file with the same id and another secret.
fn key_files(dir: &Path) -> (PathBuf, PathBuf) {
    let good = dir.join("good.keys");
    let wrong = dir.join("wrong.keys");
    std::fs::write(
        &good,
        "1 SHA256 HEX:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
    )
    .unwrap();
    std::fs::write(&wrong, "1 SHA256 HEX:ff\n").unwrap();
    (good, wrong)
}

#[test]
#[ignore = "needs chronyd (/usr/sbin/chronyd)"]
fn chronyd_authenticates_our_server_with_a_shared_key() {
    let _one = serial();
    need_chronyd();
    let dir = scratch("auth-serve");
    let (good, wrong) = key_files(&dir);
    let (_server, port) = serve(&["--keys", good.to_str().unwrap()]);
    let (code, log) = chronyd_once_with(port, &dir, Some(&good));
    assert_eq!(code, Some(0), "chronyd refused our signed replies:\n{log}");
    assert!(chrony_offset(&log).is_some(), "{log}");
    // chronyd signing with another secret under the same id: our server does not answer.
    let (code, log) = chronyd_once_with(port, &dir, Some(&wrong));
    assert_ne!(code, Some(0), "{log}");
    assert!(chrony_offset(&log).is_none(), "{log}");
}

#[test]
#[ignore = "needs chronyd (/usr/sbin/chronyd)"]
fn our_client_authenticates_a_chronyd_server() {
    let _one = serial();
    need_chronyd();
    let dir = scratch("auth-query");
    let (good, wrong) = key_files(&dir);
    let port = free_port();
    let _chronyd = chronyd_server(
        &dir,
        port,
        &format!("local stratum 8\nkeyfile {}", good.display()),
    );
    query_until_answered(port);
    let (code, v) = query_json_with(port, 2, &["--keys", good.to_str().unwrap(), "--key", "1"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["servers"][0]["stratum"], 8, "{v}");
    // The wrong secret: chronyd does not answer, and we say so.
    let (code, v) = query_json_with(port, 1, &["--keys", wrong.to_str().unwrap(), "--key", "1"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["servers"][0]["usable"], false, "{v}");
}
