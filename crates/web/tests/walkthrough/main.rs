//! The walk-through of docs/architecture.md, "How to add an algorithm", followed to the letter:
//! the toy algorithm is one new file (`toy_central.rs`, beside this one), and registering it is
//! one line (`plug`, below). From then on the four ways of running an algorithm take it by
//! name, with nothing else written for it:
//! - the simulator runs a scenario and its report counts every entry, with no violation;
//! - the exhaustive checker proves mutual exclusion and liveness, and refutes the broken
//!   variant with a counterexample;
//! - the page's API lists it, opens a session on its default scenario and steps it, and loads
//!   the broken variant's counterexample into a session;
//! - a cluster of node processes (each on its own thread and runtime in this process, over
//!   127.0.0.1) serves its lock to clients.

mod toy_central;

use distsync_algorithms::registry;
use distsync_check::{check_named, Config, Property};
use distsync_core::NodeId;
use distsync_net::lock_client::LockClient;
use distsync_net::tokio;
use distsync_sim::{run, RunOptions, Scenario};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use toy_central::ToyCentral;

/// The registration: one line per algorithm (the broken variant is a second algorithm).
fn plug() {
    registry::plug_mutex::<ToyCentral<false>>(
        "toy-central",
        false,
        "the walk-through's toy: central coordinator, no DENIED",
    )
    .unwrap();
    registry::plug_mutex::<ToyCentral<true>>(
        "toy-central-broken",
        false,
        "the toy with its coordinator granting at once",
    )
    .unwrap();
}

const SCENARIO: &str = r#"
algorithm = "toy-central"
nodes = 4
seed = 7
[network]
delay = { uniform = ["1ms", "5ms"] }
[workload]
kind = "saturated"
cs = "2ms"
requests = 3
"#;

#[test]
fn the_registry_finds_the_plugged_algorithm_by_name() {
    plug();
    let entry = registry::lookup("toy-central").expect("plugged");
    assert_eq!(entry.family, registry::Family::Mutex);
    assert!(registry::entries().iter().any(|e| e.name == "toy-central"));
    // Plugging it again is the same entry; another type under its name is refused.
    plug();
    assert!(std::ptr::eq(
        registry::lookup("toy-central").unwrap(),
        entry
    ));
    let taken = registry::plug_mutex::<ToyCentral<true>>("toy-central", false, "").unwrap_err();
    assert!(taken.contains("toy-central"), "{taken}");
    let builtin = registry::plug_mutex::<ToyCentral<false>>("central", false, "").unwrap_err();
    assert!(builtin.contains("already"), "{builtin}");
}

#[test]
fn the_simulator_runs_it_and_reports_every_entry() {
    plug();
    let scenario = Scenario::from_toml(SCENARIO, "toy.toml").unwrap();
    let report = run(&scenario, RunOptions::default()).unwrap();
    assert_eq!(report.algorithm, "toy-central");
    assert_eq!(report.family, "mutex");
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let mutex = report.sections.mutex.as_ref().expect("a mutex section");
    // Three competitors (the coordinator, node 3, does not compete), three requests each.
    assert_eq!(mutex.entries, 9);
    assert_eq!(mutex.unserved_requests, 0);
    // REQUEST, GRANT, RELEASE per entry.
    assert_eq!(report.messages.total, 27);
    for kind in ["Request", "Grant", "Release"] {
        assert_eq!(report.messages.by_kind[kind], 9, "{kind}");
    }
    assert_eq!(report.ended_by, "done");
    // The broken variant lets two clients in at once, and the simulator's monitor says so.
    let broken = SCENARIO.replace("toy-central", "toy-central-broken");
    let scenario = Scenario::from_toml(&broken, "broken.toml").unwrap();
    let report = run(&scenario, RunOptions::default()).unwrap();
    assert!(
        report
            .violations
            .iter()
            .any(|v| v.property == "mutual-exclusion"),
        "{:?}",
        report.violations
    );
}

#[test]
fn the_checker_proves_it_and_refutes_the_broken_variant() {
    plug();
    let config = Config {
        nodes: 3,
        requests: 2,
        fifo: false,
        liveness: true,
        ..Config::default()
    };
    let proved = check_named("toy-central", &config, &mut |_| {}).unwrap();
    assert!(proved.proved, "{:?}", proved.violation);
    assert!(proved.stats.states > 10, "{:?}", proved.stats);
    let refuted = check_named("toy-central-broken", &config, &mut |_| {}).unwrap();
    assert!(!refuted.proved);
    let violation = refuted.violation.expect("a counterexample");
    assert_eq!(violation.property, Property::MutualExclusion);
    assert!(!violation.steps.is_empty());
}

/// A page's client of the server started in this process.
struct Page {
    base: String,
    agent: ureq::Agent,
    _server: distsync_web::Server,
}

impl Page {
    fn start() -> Page {
        let server = distsync_web::Server::start("127.0.0.1:0".parse().unwrap(), None).unwrap();
        Page {
            base: format!("http://{}", server.addr()),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into(),
            _server: server,
        }
    }

    fn get(&self, path: &str) -> Value {
        let mut r = self
            .agent
            .get(&format!("{}{path}", self.base))
            .header(distsync_web::CLIENT_HEADER, "walkthrough")
            .call()
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
        serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let mut r = self
            .agent
            .post(&format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .header(distsync_web::CLIENT_HEADER, "walkthrough")
            .send(body.to_string())
            .unwrap();
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string().unwrap();
        assert_eq!(status, 200, "{path}: {text}");
        serde_json::from_str(&text).unwrap()
    }
}

#[test]
fn the_page_lists_it_steps_a_session_and_loads_a_counterexample() {
    plug();
    let page = Page::start();
    let list = page.get("/api/algorithms");
    let toy = list
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "toy-central")
        .expect("the page lists the plugged algorithm");
    assert_eq!(toy["family"], "mutex");
    // A session on its default scenario, stepped one event at a time.
    let opened = page.post("/api/session", json!({ "toml": toy["toml"] }));
    let id = opened["session"].as_str().unwrap();
    assert_eq!(opened["view"]["algorithm"], "toy-central");
    assert_eq!(opened["view"]["step"], 0);
    for step in 1..=5 {
        let view = page.post(&format!("/api/session/{id}/apply"), json!({ "do": "next" }));
        assert_eq!(view["step"], step);
    }
    let end = page.post(&format!("/api/session/{id}/run"), json!({}));
    assert!(end["stop"]["ended"].is_string(), "{}", end["stop"]);
    assert!(end["violations"].as_array().unwrap().is_empty(), "{end}");
    // The page's checker refutes the broken variant and loads its counterexample to step.
    let broken = "algorithm = \"toy-central-broken\"\nnodes = 3\n[network]\ndelay = \"1ms\"\n[workload]\nkind = \"none\"\n";
    let checked = page.post("/api/check", json!({ "toml": broken }));
    assert_eq!(checked["proved"], false, "{checked}");
    assert_eq!(checked["violation"]["property"], "mutual-exclusion");
    assert!(checked["session"].is_string(), "{checked}");
    assert_eq!(
        checked["view"]["violations"][0]["property"],
        "mutual-exclusion"
    );
    let fixed = broken.replace("toy-central-broken", "toy-central");
    assert_eq!(
        page.post("/api/check", json!({ "toml": fixed }))["proved"],
        true
    );
}

/// A cluster of in-process nodes running the toy for their locks (bully elects the view's
/// leader), each node on its own thread and runtime.
struct Nodes {
    cluster: distsync_net::Cluster,
    stops: Vec<(
        tokio::sync::oneshot::Sender<()>,
        std::thread::JoinHandle<()>,
    )>,
}

impl Nodes {
    fn start(n: u32) -> Nodes {
        let ports = distsync_net::local::free_ports(n as usize).unwrap();
        let mut text = String::from(
            "mutex = \"toy-central\"\nelection = \"bully\"\nsecret = \"0123456789abcdef0123\"\n\
             [timeouts]\nheartbeat = \"100ms\"\nheartbeat_timeout = \"3s\"\n\
             answer_timeout = \"100ms\"\ncoordinator_timeout = \"3s\"\n",
        );
        for (i, p) in ports.iter().enumerate() {
            text += &format!("[[node]]\nid = {i}\naddr = \"127.0.0.1:{p}\"\n");
        }
        let cluster = distsync_net::Cluster::from_toml(&text, "walkthrough").unwrap();
        let stops = (0..n)
            .map(|i| {
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                let c = cluster.clone();
                let h = std::thread::spawn(move || {
                    let rt = distsync_net::node_runtime().unwrap();
                    rt.block_on(distsync_net::run(c, NodeId(i), async move {
                        let _ = rx.await;
                    }))
                    .unwrap();
                });
                (tx, h)
            })
            .collect();
        let nodes = Nodes { cluster, stops };
        nodes.settled(n);
        nodes
    }

    /// Waits (up to a minute: a bound for a broken build, not a measurement) until every node
    /// answers, all agree on one open view of them all and hold a lease on it.
    fn settled(&self, n: u32) {
        let all: Vec<NodeId> = (0..n).map(NodeId).collect();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last = String::new();
        while Instant::now() < deadline {
            let s = rt().block_on(distsync_net::client::statuses(
                &self.cluster,
                Duration::from_secs(2),
            ));
            let epochs: Vec<_> = s
                .iter()
                .filter_map(|(_, st)| st.as_ref().ok())
                .filter(|st| st.open && st.lease && st.members == all)
                .map(|st| st.epoch)
                .collect();
            if epochs.len() == n as usize && epochs.iter().all(|e| *e == epochs[0]) {
                return;
            }
            last = format!("{s:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the nodes did not settle on one open view; last statuses: {last}");
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for (tx, h) in self.stops.drain(..) {
            drop(tx);
            let _ = h.join();
        }
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_cluster_of_nodes_serves_its_lock() {
    plug();
    let nodes = Nodes::start(3);
    rt().block_on(async {
        let mut first = LockClient::connect_to(&nodes.cluster, NodeId(0))
            .await
            .unwrap();
        let mut second = LockClient::connect_to(&nodes.cluster, NodeId(1))
            .await
            .unwrap();
        let held = first.lock("walkthrough").await.unwrap();
        // While the client of node 0 holds the lock, node 1's client does not get it.
        let refused = second
            .lock_timeout("walkthrough", Duration::from_millis(300))
            .await;
        assert!(refused.is_err(), "both clients hold the lock");
        let token = held.token();
        held.release().await.unwrap();
        let next = second.lock("walkthrough").await.unwrap();
        assert!(next.token() > token, "{} after {token}", next.token());
        next.release().await.unwrap();
    });
}
