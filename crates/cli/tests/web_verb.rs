//! `distsync web`: prints its URL and serves the page there; a bad address or scenario is an
//! input error (exit 2) naming what is wrong.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn distsync(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(args)
        .output()
        .expect("distsync runs")
}

#[test]
fn a_bad_address_or_scenario_is_refused_with_exit_code_2() {
    let out = distsync(&["web", "--listen", "localhost"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--listen") && err.contains("127.0.0.1:8080"),
        "{err}"
    );

    let out = distsync(&["web", "no-such-scenario.toml", "--listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-scenario.toml"), "{err}");

    let dir = tempfile::TempDir::with_prefix("distsync-web-verb-").unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "algorithm = \"bully\"\nnodes = 3\n[network]\nloss = 2.0\n",
    )
    .unwrap();
    let out = distsync(&["web", bad.to_str().unwrap(), "--listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml") && err.contains("network.loss"),
        "{err}"
    );

    // An address that is taken: the error names --listen.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = distsync(&["web", "--listen", &addr]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("--listen {addr}")), "{err}");
}

#[test]
fn it_prints_its_url_and_serves_the_page_and_the_scenario_given() {
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/bully-eight-processes.toml"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(["web", scenario, "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("distsync web starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    let host = url.trim_start_matches("http://").trim_end_matches('/');
    assert!(
        !host.ends_with(":0"),
        "the port actually bound is printed: {url}"
    );
    let get = |path: &str| {
        let mut s = TcpStream::connect(host).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        answer
    };
    let page = get("/");
    let initial = get("/api/initial");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("distsync web"));
    assert!(initial.contains("bully-eight-processes.toml"), "{initial}");
    assert!(initial.contains("recover = 7"), "{initial}");
}
