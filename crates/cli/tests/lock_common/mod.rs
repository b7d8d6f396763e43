//! A real cluster for the lock-service tests: `distsync node` processes on 127.0.0.1 (free
//! ports), killed when the test ends even on failure, with helpers to pause (SIGSTOP), resume,
//! kill -9 and restart nodes, ask who leads, and run `distsync lock`.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_distsync");
static ONE_CLUSTER_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Only one cluster runs at a time in one test binary (the machine has 2 cores).
pub fn lock_guard() -> MutexGuard<'static, ()> {
    ONE_CLUSTER_AT_A_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

pub fn free_ports(n: usize) -> Vec<u16> {
    let ls: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    ls.iter().map(|l| l.local_addr().unwrap().port()).collect()
}

/// A fresh private directory (mode 0700) under the temp dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "distsync-lock-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

pub struct TestCluster {
    pub dir: PathBuf,
    pub cluster: PathBuf,
    pub n: usize,
    nodes: Mutex<Vec<Option<Child>>>,
    /// Nodes paused by the test, resumed when it ends so that they can be killed cleanly.
    paused: Mutex<Vec<usize>>,
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let nodes = self.nodes.get_mut().unwrap_or_else(|e| e.into_inner());
        for c in nodes.iter_mut().flatten() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The test timeouts: heartbeat 50ms, failure timeout 500ms, election T 100ms, T' 800ms.
pub const TIMEOUTS: &str = "[timeouts]\nheartbeat = \"50ms\"\nheartbeat_timeout = \"500ms\"\n\
     answer_timeout = \"100ms\"\ncoordinator_timeout = \"800ms\"\n";

impl TestCluster {
    /// Writes a cluster file for `n` nodes and starts them.
    pub fn start(name: &str, n: usize, mutex: &str, election: &str) -> TestCluster {
        TestCluster::start_with(name, n, mutex, election, TIMEOUTS)
    }

    /// The same with this `[timeouts]` table.
    pub fn start_with(
        name: &str,
        n: usize,
        mutex: &str,
        election: &str,
        timeouts: &str,
    ) -> TestCluster {
        TestCluster::start_full(name, n, mutex, election, timeouts, "")
    }

    /// The same with more top-level fields (`extra`, e.g. a `client_secret` line).
    pub fn start_full(
        name: &str,
        n: usize,
        mutex: &str,
        election: &str,
        timeouts: &str,
        extra: &str,
    ) -> TestCluster {
        let dir = scratch(name);
        let ports = free_ports(n);
        let mut text = format!(
            "mutex = \"{mutex}\"\nelection = \"{election}\"\nsecret = \"test-secret-0123456789\"\n{extra}{timeouts}"
        );
        for (i, p) in ports.iter().enumerate() {
            text += &format!("[[node]]\nid = {i}\naddr = \"127.0.0.1:{p}\"\n");
        }
        let cluster = dir.join("cluster.toml");
        fs::write(&cluster, text).unwrap();
        let c = TestCluster {
            dir,
            cluster,
            n,
            nodes: Mutex::new(Vec::new()),
            paused: Mutex::new(Vec::new()),
        };
        for i in 0..n {
            let child = c.spawn_node(i);
            c.nodes.lock().unwrap().push(Some(child));
        }
        c
    }

    fn spawn_node(&self, i: usize) -> Child {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("node-{i}.log")))
            .unwrap();
        Command::new(BIN)
            .args(["node", "--cluster"])
            .arg(&self.cluster)
            .args(["--id", &i.to_string()])
            .env(
                "RUST_LOG",
                std::env::var("DISTSYNC_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    pub fn pid(&self, i: usize) -> u32 {
        self.nodes.lock().unwrap()[i].as_ref().unwrap().id()
    }

    pub fn kill9(&self, i: usize) {
        let taken = self.nodes.lock().unwrap()[i].take();
        if let Some(mut c) = taken {
            c.kill().unwrap(); // SIGKILL
            c.wait().unwrap();
        }
    }

    pub fn respawn(&self, i: usize) {
        let child = self.spawn_node(i);
        self.nodes.lock().unwrap()[i] = Some(child);
    }

    /// SIGSTOP node `i`.
    pub fn pause(&self, i: usize) {
        signal(self.pid(i), "-STOP");
        self.paused.lock().unwrap().push(i);
    }

    /// SIGCONT node `i`.
    pub fn resume(&self, i: usize) {
        signal(self.pid(i), "-CONT");
        self.paused.lock().unwrap().retain(|&p| p != i);
    }

    pub fn leader_json(&self) -> serde_json::Value {
        let out = Command::new(BIN)
            .args(["leader", "--json", "--timeout", "1s", "--cluster"])
            .arg(&self.cluster)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "leader --json printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }

    /// Waits until every live node agrees on one leader and its view is open with every live
    /// node; returns the leader.
    pub fn settled(&self, within: Duration) -> u64 {
        let until = Instant::now() + within;
        loop {
            let j = self.leader_json();
            let live: Vec<&serde_json::Value> = j["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|n| n["reachable"] == true)
                .collect();
            let open = live.iter().all(|n| {
                n["open"] == true && n["members"].as_array().map(|m| m.len()) == Some(live.len())
            });
            if j["agreed"] == true && open {
                return j["leader"].as_u64().unwrap();
            }
            assert!(
                Instant::now() < until,
                "the cluster did not settle within {within:?}: {j}\n{}",
                self.logs()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    pub fn logs(&self) -> String {
        let mut s = String::new();
        for i in 0..self.n {
            let text =
                fs::read_to_string(self.dir.join(format!("node-{i}.log"))).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            s += &format!("--- node {i} (last lines)\n");
            for l in tail.into_iter().rev() {
                s += l;
                s += "\n";
            }
        }
        s
    }

    /// `distsync lock --cluster C --node N --name NAME [extra] -- cmd`, not yet started.
    pub fn lock_command(&self, node: usize, name: &str, cmd: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(["lock", "--timeout", "30s", "--cluster"])
            .arg(&self.cluster)
            .args(["--node", &node.to_string(), "--name", name, "--"])
            .args(cmd);
        c
    }

    pub fn lock(&self, node: usize, name: &str, cmd: &[&str]) -> Output {
        self.lock_command(node, name, cmd).output().unwrap()
    }
}

/// `kill SIG PID`.
pub fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

/// Whether process `pid` exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits (bounded) until `cond` holds; panics with `what` otherwise.
pub fn wait_for(what: &str, within: Duration, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < until, "{what}: not within {within:?}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// The lines of a file (empty if it does not exist).
pub fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}
