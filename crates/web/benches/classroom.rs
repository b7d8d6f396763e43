//! A classroom's load on one `distsync web` server: 100 clients at once (one thread each, own
//! page secret), each opening a Ricart-Agrawala session and then, round after round, stepping 10
//! times, going back twice and running 200 events. Reports the p50 and p99 latency of a step
//! (one `apply` request, answer read) and the process's peak resident memory (VmHWM: the server
//! runs in this process; the clients add little). Run with
//! `cargo bench -p distsync-web --bench classroom`; docs/web.md has the figures.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

const TOML: &str = r#"
algorithm = "ricart-agrawala"
nodes = 5
until = "1000h"
[network]
delay = { uniform = ["500us", "1500us"] }
[workload]
kind = "saturated"
cs = "1ms"
requests = 1000000
"#;

fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn post(agent: &ureq::Agent, base: &str, secret: &str, path: &str, body: Value) -> Value {
    let mut r = agent
        .post(&format!("{base}{path}"))
        .header("content-type", "application/json")
        .header(distsync_web::CLIENT_HEADER, secret)
        .send(body.to_string())
        .expect("a request");
    assert_eq!(r.status().as_u16(), 200, "{path}");
    let text = r
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .expect("a body");
    serde_json::from_str(&text).expect("JSON")
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test");
    let (clients, rounds) = if quick { (4, 1) } else { (100, 10) };
    let server =
        distsync_web::Server::start("127.0.0.1:0".parse().unwrap(), None).expect("the server");
    let base = format!("http://{}", server.addr());
    let start = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|i| {
            let base = base.clone();
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .timeout_global(Some(Duration::from_secs(600)))
                    .build()
                    .into();
                let secret = format!("learner-{i}");
                let id = post(
                    &agent,
                    &base,
                    &secret,
                    "/api/session",
                    json!({ "toml": TOML }),
                )["session"]
                    .as_str()
                    .expect("an id")
                    .to_string();
                let mut steps = Vec::new();
                for _ in 0..rounds {
                    for _ in 0..10 {
                        let t = Instant::now();
                        post(
                            &agent,
                            &base,
                            &secret,
                            &format!("/api/session/{id}/apply"),
                            json!({ "do": "next" }),
                        );
                        steps.push(t.elapsed());
                    }
                    for _ in 0..2 {
                        post(
                            &agent,
                            &base,
                            &secret,
                            &format!("/api/session/{id}/back"),
                            json!({}),
                        );
                    }
                    post(
                        &agent,
                        &base,
                        &secret,
                        &format!("/api/session/{id}/run"),
                        json!({ "limit": 200 }),
                    );
                }
                steps
            })
        })
        .collect();
    let mut steps: Vec<Duration> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("a client"))
        .collect();
    steps.sort();
    let pct = |p: f64| steps[((steps.len() - 1) as f64 * p).round() as usize];
    println!(
        "classroom: {clients} clients x {rounds} rounds (10 steps, 2 backs, a run of 200 events) in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    println!(
        "step latency: p50 {:.1} ms, p99 {:.1} ms ({} steps); peak RSS {}",
        pct(0.5).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        steps.len(),
        peak_rss_mb().map_or("unknown".to_string(), |m| format!("{m:.0} MB"))
    );
}
