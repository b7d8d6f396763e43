//! The real-process test support of every test that runs `distsync node` processes
//! (net_cluster, cluster_ops, lock_service, lock_client, jepsen): a cluster of nodes on
//! 127.0.0.1 (free ports) or in network namespaces, killed when the test ends even on failure,
//! with helpers to pause (SIGSTOP), resume, kill -9 and restart nodes, ask who leads, and run
//! `distsync lock`; and for clusters the operator's verbs run (`cluster up` with the tests'
//! fast heartbeats, `cluster status` until it says what a test waits for, `cluster down` when a
//! test ends).
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

/// A fresh private directory (mode 0700) under the temp dir, removed with everything in it
/// when the returned value drops, also when the test fails: hold it until every process that
/// writes there is gone (declare a test's `Down` after it, so that `cluster down` runs first).
pub fn scratch(name: &str) -> tempfile::TempDir {
    let dir = tempfile::TempDir::with_prefix(format!("distsync-lock-{name}-")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

pub struct TestCluster {
    pub dir: PathBuf,
    pub cluster: PathBuf,
    pub n: usize,
    nodes: Mutex<Vec<Option<Child>>>,
    /// Nodes paused by the test, resumed when it ends so that they can be killed cleanly.
    paused: Mutex<Vec<usize>>,
    /// When set, every node runs in its own network namespace and the clients in another.
    pub netns: Option<Netns>,
    /// Holds `dir`; dropped (removing it) after `drop` has killed the nodes that log there.
    _scratch: tempfile::TempDir,
}

/// Network namespaces for partitions: a private hub namespace holding a bridge, one namespace
/// per node (10.77.0.(i+1)) and one for the clients (10.77.0.100), each linked to the bridge
/// by a veth pair. Cutting node i's veth in the hub partitions it from everyone, both ways.
/// Everything is deleted when dropped.
pub struct Netns {
    pub prefix: String,
    pub n: usize,
}

impl Netns {
    /// Sets the namespaces up, or says why it cannot.
    pub fn create(n: usize) -> Result<Netns, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root".into());
        }
        let prefix = format!("dsj{}", std::process::id());
        let ns = Netns { prefix, n };
        let hub = ns.name("hub");
        let run = |args: &[&str]| -> Result<(), String> {
            let out = Command::new("ip")
                .args(args)
                .output()
                .map_err(|e| format!("cannot run ip (install iproute2): {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "ip {}: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        };
        run(&["netns", "add", &hub])?;
        run(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        run(&["-n", &hub, "link", "set", "br0", "up"])?;
        // The other side of a split (`split`): nodes moved there see each other only.
        run(&["-n", &hub, "link", "add", "br1", "type", "bridge"])?;
        run(&["-n", &hub, "link", "set", "br1", "up"])?;
        let members: Vec<(String, String)> = (0..n)
            .map(|i| (i.to_string(), format!("10.77.0.{}", i + 1)))
            .chain([("c".to_string(), "10.77.0.100".to_string())])
            .collect();
        for (tag, ip) in members {
            let name = ns.name(&tag);
            let veth = format!("v{tag}");
            run(&["netns", "add", &name])?;
            run(&[
                "-n", &hub, "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns",
                &name,
            ])?;
            run(&["-n", &hub, "link", "set", &veth, "master", "br0"])?;
            run(&["-n", &hub, "link", "set", &veth, "up"])?;
            run(&[
                "-n",
                &name,
                "addr",
                "add",
                &format!("{ip}/24"),
                "dev",
                "eth0",
            ])?;
            run(&["-n", &name, "link", "set", "eth0", "up"])?;
            run(&["-n", &name, "link", "set", "lo", "up"])?;
        }
        Ok(ns)
    }

    pub fn name(&self, tag: &str) -> String {
        format!("{}-{tag}", self.prefix)
    }

    /// The tags of every namespace a command runs in: the nodes' "0".."n-1" and the clients' "c".
    fn tags(&self) -> Vec<String> {
        (0..self.n)
            .map(|i| i.to_string())
            .chain(["c".to_string()])
            .collect()
    }

    /// Gives node i's address the host name `node{i}.{domain}` in every namespace, as an
    /// `/etc/hosts` of each "machine" would: `ip netns exec` shows `/etc/netns/NAME/hosts` as
    /// `/etc/hosts` to the commands it runs (the machine's own `/etc/hosts` is untouched).
    /// Removed when dropped.
    pub fn name_hosts(&self, domain: &str) -> Result<(), String> {
        let mut hosts = String::from("127.0.0.1 localhost\n");
        for i in 0..self.n {
            hosts += &format!("10.77.0.{} node{i}.{domain}\n", i + 1);
        }
        for t in self.tags() {
            let dir = Path::new("/etc/netns").join(self.name(&t));
            fs::create_dir_all(&dir)
                .and_then(|()| fs::write(dir.join("hosts"), &hosts))
                .map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        Ok(())
    }

    /// A command running `BIN` inside namespace `tag` ("0".."n-1", or "c" for clients).
    pub fn bin(&self, tag: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name(tag), BIN]);
        c
    }

    fn link(&self, i: usize, state: &str) {
        let ok = Command::new("ip")
            .args([
                "-n",
                &self.name("hub"),
                "link",
                "set",
                &format!("v{i}"),
                state,
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip link set v{i} {state}");
    }

    /// Cuts node i off from every other node and every client.
    pub fn cut(&self, i: usize) {
        self.link(i, "down");
    }

    /// Heals the cut.
    pub fn heal(&self, i: usize) {
        self.link(i, "up");
    }

    fn bridge(&self, i: usize, bridge: &str) {
        let ok = Command::new("ip")
            .args([
                "-n",
                &self.name("hub"),
                "link",
                "set",
                &format!("v{i}"),
                "master",
                bridge,
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip link set v{i} master {bridge}");
    }

    /// Splits the network in two: the nodes `side` see each other and nobody else; the other
    /// nodes and the clients see each other and not them (their veths move to a second
    /// bridge).
    pub fn split(&self, side: &[usize]) {
        for &i in side {
            self.bridge(i, "br1");
        }
    }

    /// Heals a split: the nodes `side` are back on the bridge everyone is on.
    pub fn join(&self, side: &[usize]) {
        for &i in side {
            self.bridge(i, "br0");
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let mut tags = self.tags();
        tags.push("hub".to_string());
        for t in tags {
            let _ = fs::remove_dir_all(Path::new("/etc/netns").join(self.name(&t)));
            let _ = Command::new("ip")
                .args(["netns", "del", &self.name(&t)])
                .output();
        }
        // The directory `name_hosts` made, if nothing else is in it.
        let _ = fs::remove_dir("/etc/netns");
    }
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
        TestCluster::start_in(None, name, n, mutex, election, timeouts, extra)
    }

    /// The same, in network namespaces when `netns` is given.
    pub fn start_in(
        netns: Option<Netns>,
        name: &str,
        n: usize,
        mutex: &str,
        election: &str,
        timeouts: &str,
        extra: &str,
    ) -> TestCluster {
        let tmp = scratch(name);
        let dir = tmp.path().to_path_buf();
        let addrs: Vec<String> = match &netns {
            Some(_) => (0..n).map(|i| format!("10.77.0.{}:7000", i + 1)).collect(),
            None => free_ports(n)
                .into_iter()
                .map(|p| format!("127.0.0.1:{p}"))
                .collect(),
        };
        let mut text = format!(
            "mutex = \"{mutex}\"\nelection = \"{election}\"\nsecret = \"test-secret-0123456789\"\n{extra}{timeouts}"
        );
        for (i, a) in addrs.iter().enumerate() {
            text += &format!("[[node]]\nid = {i}\naddr = \"{a}\"\n");
        }
        let cluster = dir.join("cluster.toml");
        fs::write(&cluster, text).unwrap();
        let c = TestCluster {
            dir,
            cluster,
            n,
            nodes: Mutex::new(Vec::new()),
            paused: Mutex::new(Vec::new()),
            netns,
            _scratch: tmp,
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
        let mut cmd = match &self.netns {
            Some(ns) => ns.bin(&i.to_string()),
            None => Command::new(BIN),
        };
        cmd.args(["node", "--cluster"])
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

    /// A command running `BIN` where the clients run.
    pub fn client_bin(&self) -> Command {
        match &self.netns {
            Some(ns) => ns.bin("c"),
            None => Command::new(BIN),
        }
    }

    pub fn leader_json(&self) -> serde_json::Value {
        let out = self
            .client_bin()
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

    /// Whether node `i`'s process is running (not killed, not exited).
    pub fn running(&self, i: usize) -> bool {
        let mut nodes = self.nodes.lock().unwrap();
        nodes[i]
            .as_mut()
            .is_some_and(|ch| ch.try_wait().unwrap().is_none())
    }

    /// `distsync lock --timeout 30s --cluster C --node N --name NAME -- cmd`, not yet started.
    pub fn lock_command(&self, node: usize, name: &str, cmd: &[&str]) -> Command {
        self.lock_command_within(node, name, "30s", cmd)
    }

    /// The same with this `--timeout`.
    pub fn lock_command_within(
        &self,
        node: usize,
        name: &str,
        timeout: &str,
        cmd: &[&str],
    ) -> Command {
        let mut c = self.client_bin();
        c.args(["lock", "--timeout", timeout, "--cluster"])
            .arg(&self.cluster)
            .args(["--node", &node.to_string(), "--name", name, "--"])
            .args(cmd);
        c
    }

    pub fn lock(&self, node: usize, name: &str, cmd: &[&str]) -> Output {
        self.lock_command(node, name, cmd).output().unwrap()
    }
}

/// Stops the cluster of a directory (`cluster down`) when dropped, even if the test failed.
pub struct Down(pub PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = Command::new(BIN)
            .args(["cluster", "down", "--dir"])
            .arg(&self.0)
            .output();
    }
}

/// `distsync cluster ARGS --dir DIR`.
pub fn cluster(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("cluster")
        .args(args)
        .arg("--dir")
        .arg(dir)
        .output()
        .unwrap()
}

/// `distsync cluster up ARGS` with the tests' heartbeats (50ms, failure timeout 500ms) in
/// `dir`; whatever it exits with.
pub fn cluster_up_fast(dir: &Path, args: &[&str]) -> Output {
    let mut up = vec!["up"];
    up.extend_from_slice(args);
    up.extend_from_slice(&["--heartbeat", "50ms", "--heartbeat-timeout", "500ms"]);
    cluster(dir, &up)
}

/// The same, which must succeed.
pub fn cluster_up_ok(dir: &Path, args: &[&str]) -> Output {
    let out = cluster_up_fast(dir, args);
    assert!(
        out.status.success(),
        "cluster up {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The tests' usual cluster in `dir`: three ricart-agrawala nodes on free ports, with the tests'
/// heartbeats; must succeed.
pub fn three_nodes_up(dir: &Path) -> Output {
    cluster_up_ok(
        dir,
        &[
            "--nodes",
            "3",
            "--mutex",
            "ricart-agrawala",
            "--base-port",
            "0",
        ],
    )
}

/// Waits (bounded) until `cluster status` succeeds and its text satisfies `ready` (not
/// "changing" a view, say); returns that text, or panics with `what` and the last text.
pub fn wait_for_status(
    dir: &Path,
    what: &str,
    within: Duration,
    ready: impl Fn(&str) -> bool,
) -> String {
    let until = Instant::now() + within;
    loop {
        let s = cluster(dir, &["status"]);
        let text = String::from_utf8_lossy(&s.stdout).to_string();
        if s.status.success() && ready(&text) {
            return text;
        }
        assert!(
            Instant::now() < until,
            "{what}: not within {within:?}: {text}"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// The pid a `cluster up` node wrote in its pid file.
pub fn pid_of(dir: &Path, id: u32) -> u32 {
    fs::read_to_string(dir.join(format!("node-{id}.pid")))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
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

/// The first number of a counter file the tests' lock commands rewrite in place (`count
/// last_token`); a read can catch the file empty, so it reads again (bounded).
pub fn counter_value(file: &Path) -> u64 {
    for _ in 0..1000 {
        let parsed = fs::read_to_string(file)
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .and_then(|x| x.parse().ok());
        if let Some(n) = parsed {
            return n;
        }
        thread::sleep(Duration::from_millis(1));
    }
    panic!("the counter file stayed unreadable");
}
