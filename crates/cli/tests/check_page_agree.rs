//! The page's "prove or refute" (`POST /api/check` of `distsync web`, served in this process) and
//! `distsync check FILE` give the same verdict and the same state count on the same scenario
//! file, for every algorithm the checker covers and for the cases where the page used to differ
//! (a non-FIFO network, an order asked for in `[check]`, a partition, a duplicate).

use distsync_algorithms::registry::{self, Family};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

mod scratch;

/// POST `body` to the server at `addr` as a page would (JSON, with a page's secret): the status
/// and the JSON answer.
fn post(addr: std::net::SocketAddr, path: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).expect("the page's server answers");
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         {}: check-page-agree\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        distsync_web::CLIENT_HEADER,
        body.len()
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, serde_json::from_str(rest).expect("a JSON answer"))
}

/// `distsync check FILE --json`: the exit code and the report.
fn cli(toml: &str) -> (Option<i32>, Value) {
    let path = scratch::path("distsync-check-agree-", "scenario.toml");
    std::fs::write(&path, toml).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(["check", path.to_str().unwrap(), "--json"])
        .output()
        .expect("the binary runs");
    let v = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| {
        panic!(
            "no JSON from distsync check on\n{toml}\nstderr: {}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code(), v)
}

/// The page's and the CLI's answers on `toml`, compared: (page, cli).
fn agree(addr: std::net::SocketAddr, toml: &str) -> (Value, Value) {
    let (status, page) = post(addr, "/api/check", &json!({ "toml": toml }));
    assert_eq!(status, 200, "the page refused\n{toml}\n{page}");
    let (code, cli) = cli(toml);
    let verdict = |v: &Value| -> &'static str {
        if v["violation"].is_object() {
            "refuted"
        } else if v["proved"] == true || v["result"] == "proved" {
            "proved"
        } else {
            "bounded"
        }
    };
    assert_eq!(
        verdict(&page),
        verdict(&cli),
        "verdicts differ on\n{toml}\npage: {page}\ncli: {cli}"
    );
    assert_eq!(
        page["states"], cli["states"],
        "state counts differ on\n{toml}"
    );
    assert_eq!(
        code,
        Some(match verdict(&cli) {
            "proved" => 0,
            "refuted" => 1,
            _ => 3,
        })
    );
    if let Some(v) = page["violation"].as_object() {
        assert_eq!(v["property"], cli["violation"]["property"], "{toml}");
    }
    (page, cli)
}

#[test]
fn the_page_and_the_cli_agree_on_every_algorithm_the_checker_covers() {
    let server = distsync_web::Server::start("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let addr = server.addr();
    let mut covered = 0;
    for e in registry::entries() {
        if e.family == Family::ClockSync {
            continue; // the checker refuses clock synchronization (continuous clock values)
        }
        let nodes = 3;
        let toml = format!(
            "algorithm = \"{}\"\nnodes = {nodes}\n[network]\nfifo = {}\n[check]\nmax_states = 20000\n",
            e.name, e.needs_fifo
        );
        let (page, _) = agree(addr, &toml);
        assert!(
            !page["properties"].as_array().unwrap().is_empty(),
            "{}: {page}",
            e.name
        );
        covered += 1;
    }
    assert!(covered >= 15, "only {covered} algorithms");
}

#[test]
fn the_cases_where_the_page_used_to_differ_are_now_the_clis() {
    let server = distsync_web::Server::start("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let addr = server.addr();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };
    // FIFO broadcast on a non-FIFO network: only the FIFO order is explored, and refuted.
    let (page, _) = agree(
        addr,
        "algorithm = \"fifo-broadcast\"\nnodes = 2\n[network]\nfifo = false\n",
    );
    assert_eq!(strings(&page["properties"]), ["fifo-order", "completion"]);
    assert!(page["bounds"].as_str().unwrap().contains("non-FIFO links"));
    // Causal broadcast asked for the total order: refuted, as `--order total` refutes it.
    let (page, _) = agree(
        addr,
        "algorithm = \"causal-broadcast\"\nnodes = 3\n[check]\norder = [\"total\"]\n",
    );
    assert_eq!(page["violation"]["property"], "total-order", "{page}");
    // Bully with a partition ([check]) and with a scripted one: refuted both ways.
    let (page, _) = agree(
        addr,
        "algorithm = \"bully\"\nnodes = 3\n[[event]]\nat = \"1ms\"\nelect = 0\n\
         [check]\npartition = true\nmax_states = 100000\n",
    );
    assert!(page["violation"].is_object(), "{page}");
    assert!(page["bounds"].as_str().unwrap().contains("one partition"));
    let (page, _) = agree(
        addr,
        "algorithm = \"bully\"\nnodes = 3\n[[event]]\nat = \"1ms\"\nelect = 0\n\
         [[event]]\nat = \"2ms\"\npartition = [[0], [1, 2]]\n[check]\nmax_states = 100000\n",
    );
    assert!(page["violation"].is_object(), "{page}");
    // Token ring with a duplicated message: two tokens.
    let (page, _) = agree(
        addr,
        "algorithm = \"token-ring\"\nnodes = 3\n[network]\nduplicate = 0.1\n",
    );
    assert_eq!(page["violation"]["property"], "mutual-exclusion", "{page}");
    assert_eq!(
        page["bounds"],
        "3 processes, 1 request each, FIFO links, at most 1 duplicate"
    );
}
