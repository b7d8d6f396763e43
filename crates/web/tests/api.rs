//! The JSON API of `distsync web`, driven over HTTP against a server started in this process on
//! 127.0.0.1:0.

use distsync_sim::session::Session;
use distsync_sim::Scenario;
use serde_json::{json, Value};

struct Client {
    base: String,
    agent: ureq::Agent,
    _server: distsync_web::Server,
}

impl Client {
    fn start() -> Client {
        let server = distsync_web::Server::start("127.0.0.1:0".parse().unwrap(), None)
            .expect("the server starts");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        Client {
            base: format!("http://{}", server.addr()),
            agent,
            _server: server,
        }
    }

    /// (status, body text)
    fn get(&self, path: &str) -> (u16, String, String) {
        let mut r = self
            .agent
            .get(&format!("{}{path}", self.base))
            .call()
            .expect("GET");
        let ct = r
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let body = r.body_mut().read_to_string().expect("body");
        (r.status().as_u16(), ct, body)
    }

    fn post_raw(&self, path: &str, body: &str) -> (u16, Value) {
        let mut r = self
            .agent
            .post(&format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .send(body)
            .expect("POST");
        let status = r.status().as_u16();
        let text = r
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.post_raw(path, &body.to_string())
    }

    /// POSTs and expects 200.
    fn ok(&self, path: &str, body: Value) -> Value {
        let (status, v) = self.post(path, body);
        assert_eq!(status, 200, "{path}: {v}");
        v
    }

    fn session(&self, toml: &str) -> (u64, Value) {
        let v = self.ok("/api/session", json!({ "toml": toml }));
        (v["session"].as_u64().unwrap(), v["view"].clone())
    }
}

const LAMPORT_NON_FIFO: &str = r#"
algorithm = "lamport-mutex"
nodes = 2
[network]
delay = "1ms"
fifo = false
[workload]
kind = "none"
"#;

fn pending_id(view: &Value, kind: &str, from: u64, to: u64) -> u64 {
    view["pending"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["msg_kind"] == kind && p["from"] == from && p["to"] == to)
        .unwrap_or_else(|| panic!("no {kind} {from}->{to} pending: {}", view["pending"]))["id"]
        .as_u64()
        .unwrap()
}

#[test]
fn the_page_and_its_assets_are_served_from_the_binary() {
    let c = Client::start();
    let (status, ct, body) = c.get("/");
    assert_eq!(status, 200);
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(body.contains("<script src=\"/assets/app.js\">"));
    // Nothing is fetched from elsewhere: every src and href is local.
    for attr in ["src=\"http", "href=\"http", "//cdn"] {
        assert!(!body.contains(attr), "the page refers outside: {attr}");
    }
    let (status, ct, js) = c.get("/assets/app.js");
    assert_eq!(status, 200);
    assert!(ct.starts_with("text/javascript"), "{ct}");
    // The one URL in the script is the SVG namespace, which is a name, not a place to fetch.
    let js = js.replace("\"http://www.w3.org/2000/svg\"", "");
    assert!(
        !js.contains("http://") && !js.contains("https://"),
        "app.js fetches nothing outside"
    );
    assert_eq!(c.get("/assets/style.css").0, 200);
    let (status, _, body) = c.get("/assets/nope.js");
    assert_eq!(status, 404);
    assert!(body.contains("nope.js"), "{body}");
}

#[test]
fn algorithms_lists_the_registry_with_a_scenario_each_that_starts_a_session() {
    let c = Client::start();
    let (status, _, body) = c.get("/api/algorithms");
    assert_eq!(status, 200);
    let list: Vec<Value> = serde_json::from_str(&body).unwrap();
    assert_eq!(list.len(), 24);
    let names: Vec<&str> = list.iter().map(|a| a["name"].as_str().unwrap()).collect();
    let registry: Vec<&str> = distsync_algorithms::registry::entries()
        .iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, registry);
    for a in &list {
        let name = a["name"].as_str().unwrap();
        let (_, view) = c.session(a["toml"].as_str().unwrap());
        assert_eq!(view["algorithm"], name);
        assert_eq!(view["family"], a["family"]);
        assert!(!view["processes"].as_array().unwrap().is_empty(), "{name}");
    }
}

#[test]
fn errors_are_json_naming_the_field() {
    let c = Client::start();
    // A scenario error names the field of the scenario.
    let (status, v) = c.post(
        "/api/session",
        json!({ "toml": "algorithm = \"bully\"\nnodes = 3\n[network]\nloss = 2.0\n" }),
    );
    assert_eq!(status, 400);
    assert_eq!(v["field"], "network.loss", "{v}");
    assert!(v["error"].as_str().unwrap().contains("network.loss"), "{v}");
    // An unknown algorithm.
    let (status, v) = c.post(
        "/api/session",
        json!({ "toml": "algorithm = \"bulyl\"\nnodes = 3\n" }),
    );
    assert_eq!(status, 400);
    assert!(
        v["error"].as_str().unwrap().contains("bully"),
        "suggests bully: {v}"
    );
    // A body that is not what the route takes names the JSON path.
    let (status, v) = c.post(
        "/api/session",
        json!({ "toml": LAMPORT_NON_FIFO, "choices": [{ "do": "crash", "node": "zero" }] }),
    );
    assert_eq!(status, 400);
    assert!(
        v["field"].as_str().unwrap().starts_with("body.choices[0]"),
        "{v}"
    );
    let (status, v) = c.post("/api/session", json!({ "tomll": "" }));
    assert_eq!(status, 400);
    assert!(v["error"].as_str().unwrap().contains("tomll"), "{v}");
    let (status, v) = c.post_raw("/api/session", "{not json");
    assert_eq!(status, 400);
    assert_eq!(v["field"], "body", "{v}");
    // A choice the session refuses, and a session that does not exist.
    let (id, _) = c.session(LAMPORT_NON_FIFO);
    let (status, v) = c.post(
        &format!("/api/session/{id}/apply"),
        json!({ "do": "event", "id": 999 }),
    );
    assert_eq!(status, 422, "{v}");
    assert_eq!(v["field"], "choice");
    let (status, v) = c.post("/api/session/777/back", json!({}));
    assert_eq!(status, 404);
    assert!(
        v["error"].as_str().unwrap().contains("no session 777"),
        "{v}"
    );
    // Bodies are bounded.
    let big = format!(
        "{{\"toml\": \"{}\"}}",
        "#".repeat(distsync_web::MAX_BODY_BYTES + 10)
    );
    let (status, _) = c.post_raw("/api/session", &big);
    assert_eq!(status, 413);
}

#[test]
fn step_back_goto_and_run_over_http() {
    let c = Client::start();
    let toml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/bully-eight-processes.toml"
    ))
    .unwrap();
    let (id, start) = c.session(&toml);
    assert_eq!(start["step"], 0);
    let mut views = vec![start];
    for _ in 0..6 {
        views.push(c.ok(&format!("/api/session/{id}/apply"), json!({ "do": "next" })));
    }
    assert_eq!(views[6]["step"], 6);
    // Going back keeps the choices ahead recorded (`steps_recorded`); all else is as it was.
    let same = |mut a: Value, mut b: Value| {
        a["steps_recorded"].take();
        b["steps_recorded"].take();
        assert_eq!(a, b);
    };
    let back = c.ok(&format!("/api/session/{id}/back"), json!({}));
    assert_eq!(back["steps_recorded"], 6);
    same(back, views[5].clone());
    let two = c.ok(&format!("/api/session/{id}/goto"), json!({ "step": 2 }));
    same(two, views[2].clone());
    let forward = c.ok(&format!("/api/session/{id}/goto"), json!({ "step": 6 }));
    assert_eq!(
        forward, views[6],
        "goto goes forward along the recorded choices"
    );
    c.ok(&format!("/api/session/{id}/goto"), json!({ "step": 5 }));

    // Run to the end: the same events as the batch run of the same file.
    let end = c.ok(&format!("/api/session/{id}/run"), json!({}));
    assert!(
        end["stop"]["ended"].is_string(),
        "the run ended: {}",
        end["stop"]
    );
    assert!(end["quiet"].as_bool().unwrap());
    let scenario = Scenario::from_toml(&toml, "bully").unwrap();
    let mut batch = Session::new(&scenario, "bully").unwrap();
    batch.run(u64::MAX, None).unwrap();
    assert_eq!(end["log_total"], batch.view().log_total);
    let badges: Vec<&str> = end["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["badge"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(badges, vec!["leader 7"; 8]);

    // A window of the log.
    let (status, _, text) = c.get(&format!("/api/session/{id}/view?log_from=3&log_to=7"));
    assert_eq!(status, 200);
    let w: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(w["log_from"], 3);
    assert_eq!(w["log"].as_array().unwrap().len(), 4);
    assert_eq!(w["log"][0]["seq"], 3);

    // The trace reads back in the viz crate, and the SVG is the viz crate's diagram.
    let (status, _, trace) = c.get(&format!("/api/session/{id}/trace"));
    assert_eq!(status, 200);
    let parsed = distsync_viz::trace::Trace::parse(&trace, "session").expect("a valid trace");
    assert_eq!(
        trace,
        batch.trace_jsonl(),
        "the trace is the batch run's, byte for byte"
    );
    let (status, ct, svg) = c.get(&format!("/api/session/{id}/svg"));
    assert_eq!(status, 200);
    assert!(ct.starts_with("image/svg+xml"));
    assert_eq!(
        svg,
        distsync_viz::svg::render(&parsed, &Default::default()).unwrap()
    );
    assert!(svg.contains("class=\"leader"), "leaders are marked");
    let (_, _, window) = c.get(&format!("/api/session/{id}/svg?from_ns=50000000"));
    assert_ne!(window, svg, "a time window draws less");
    let (_, _, scenario_text) = c.get(&format!("/api/session/{id}/scenario"));
    assert_eq!(scenario_text, toml);
}

#[test]
fn a_manual_reply_ahead_of_its_request_is_announced_and_the_share_link_replays_it() {
    let c = Client::start();
    let (id, _) = c.session(LAMPORT_NON_FIFO);
    let apply = |choice: Value| c.ok(&format!("/api/session/{id}/apply"), choice);
    apply(json!({ "do": "request", "node": 0 }));
    apply(json!({ "do": "next" }));
    apply(json!({ "do": "request", "node": 1 }));
    let mut v = apply(json!({ "do": "next" }));
    // P0 takes P1's request: P0's own (ts 1, id 0) goes first, and P1's message is later than
    // it, so P0 enters; its REPLY to P1 overtakes its REQUEST, and P1 enters too.
    v = apply(json!({ "do": "event", "id": pending_id(&v, "Request", 1, 0) }));
    assert!(v["violations"].as_array().unwrap().is_empty());
    v = apply(json!({ "do": "event", "id": pending_id(&v, "Reply", 0, 1) }));
    let violations = v["violations"].as_array().unwrap();
    assert_eq!(violations.len(), 1, "{v}");
    assert_eq!(violations[0]["property"], "mutual-exclusion");
    let mut nodes: Vec<u64> = violations[0]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    nodes.sort();
    assert_eq!(nodes, vec![0, 1]);

    // The share fragment: scenario TOML + choices (k for k times "next"), form-urlencoded.
    let (_, _, text) = c.get(&format!("/api/session/{id}/share"));
    let fragment = serde_json::from_str::<Value>(&text).unwrap()["fragment"]
        .as_str()
        .unwrap()
        .to_string();
    let pairs: Vec<(String, String)> = form_urlencoded::parse(fragment.as_bytes())
        .into_owned()
        .collect();
    assert_eq!(pairs[0].0, "toml");
    assert_eq!(pairs[0].1, LAMPORT_NON_FIFO);
    assert_eq!(pairs[1].0, "choices");
    let packed: Vec<Value> = serde_json::from_str(&pairs[1].1).unwrap();
    assert_eq!(packed[0], json!({ "do": "request", "node": 0 }));
    assert_eq!(packed[1], json!(1), "one next, packed as a count");
    assert_eq!(packed.len(), 6);
    let mut choices = Vec::new();
    for c in packed {
        match c.as_u64() {
            Some(k) => choices.extend((0..k).map(|_| json!({ "do": "next" }))),
            None => choices.push(c),
        }
    }
    let replayed = c.ok(
        "/api/session",
        json!({ "toml": pairs[0].1, "choices": choices }),
    );
    assert_eq!(replayed["view"], v, "the link replays the exact run");
}

#[test]
fn the_checker_refutes_lamport_without_fifo_and_loads_its_counterexample() {
    let c = Client::start();
    let v = c.ok("/api/check", json!({ "toml": LAMPORT_NON_FIFO }));
    assert_eq!(v["proved"], false);
    assert_eq!(v["violation"]["property"], "mutual-exclusion", "{v}");
    assert!(v.get("load_error").is_none(), "{v}");
    let id = v["session"]
        .as_u64()
        .expect("a session with the counterexample");
    let choices = v["choices"].as_array().unwrap();
    assert!(!choices.is_empty());
    // The loaded session ends in the violation the checker found, and steps back through it.
    assert_eq!(v["view"]["violations"][0]["property"], "mutual-exclusion");
    assert_eq!(v["view"]["step"], choices.len());
    let start = c.ok(&format!("/api/session/{id}/goto"), json!({ "step": 0 }));
    assert!(start["violations"].as_array().unwrap().is_empty());
    let end = c.ok(
        &format!("/api/session/{id}/goto"),
        json!({ "step": choices.len() }),
    );
    assert_eq!(end["violations"], v["view"]["violations"]);

    // With FIFO links Lamport's algorithm is proved for two processes.
    let fifo = LAMPORT_NON_FIFO.replace("fifo = false", "fifo = true");
    let v = c.ok("/api/check", json!({ "toml": fifo }));
    assert_eq!(v["proved"], true, "{v}");
    // Too many processes for an exhaustive check is an error naming `nodes`.
    let (status, v) = c.post(
        "/api/check",
        json!({ "toml": LAMPORT_NON_FIFO.replace("nodes = 2", "nodes = 9") }),
    );
    assert_eq!(status, 400);
    assert_eq!(v["field"], "nodes", "{v}");
    // Another family: bully's election among three processes is proved, and the answer names
    // the election properties the checker held it to.
    let v = c.ok(
        "/api/check",
        json!({ "toml": "algorithm = \"bully\"\nnodes = 3\n" }),
    );
    assert_eq!(v["proved"], true, "{v}");
    assert_eq!(
        v["properties"],
        json!(["one-leader", "agreement", "validity", "termination"])
    );
    // Clock synchronization reads continuous clock values: the checker refuses it, saying why.
    let (status, v) = c.post(
        "/api/check",
        json!({ "toml": "algorithm = \"cristian\"\nnodes = 3\n" }),
    );
    assert_eq!(status, 400, "{v}");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
}

#[test]
fn sessions_are_capped_and_the_least_recently_used_is_closed() {
    let c = Client::start();
    let (first, _) = c.session(LAMPORT_NON_FIFO);
    let (second, _) = c.session(LAMPORT_NON_FIFO);
    for _ in 0..distsync_web::MAX_SESSIONS - 1 {
        // keep `second` in use while the others arrive
        c.ok(&format!("/api/session/{second}/goto"), json!({ "step": 0 }));
        c.session(LAMPORT_NON_FIFO);
    }
    let (status, _) = c.post(&format!("/api/session/{first}/goto"), json!({ "step": 0 }));
    assert_eq!(status, 404, "the least recently used session was closed");
    let (status, _) = c.post(&format!("/api/session/{second}/goto"), json!({ "step": 0 }));
    assert_eq!(status, 200, "a session in use stays");
}
