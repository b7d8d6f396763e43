//! `local::has_exited` and `local::free_ports`: what `cluster up` relies on. `has_exited` is
//! what it asks before it calls a node dead: a node spawned a moment ago can still show an empty
//! command line (seen as a flaky "node 2 exited; its log ends with: (empty log)"), so being
//! alive is decided by the process's state, not its name.

use distsync_net::local::has_exited;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The two port tests run one at a time: each binds and lets go of ephemeral ports, and run side
/// by side one could be handed a port the other has just chosen and is about to bind (the window
/// between choosing and binding that `free_ports` cannot close), failing at random.
static PORTS: Mutex<()> = Mutex::new(());

#[test]
fn a_running_process_has_not_exited() {
    assert!(!has_exited(std::process::id()));
    let mut child = Command::new("sleep").arg("5").spawn().unwrap();
    assert!(!has_exited(child.id()));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_zombie_and_a_reaped_process_have_exited() {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    // Not reaped yet: it becomes a zombie once it has run.
    let until = Instant::now() + Duration::from_secs(10);
    while !has_exited(pid) {
        assert!(Instant::now() < until, "pid {pid} never showed as exited");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait().unwrap();
    assert!(has_exited(pid), "a reaped pid {pid} is gone");
}

/// `free_ports` gives distinct ports, each free for UDP as well as TCP (a node's clock listens
/// over UDP on its port), so a cluster's clock does not start on another socket's port.
#[test]
fn free_ports_are_distinct_and_free_for_tcp_and_udp() {
    let _one_at_a_time = PORTS.lock().unwrap_or_else(|e| e.into_inner());
    let ports = distsync_net::local::free_ports(16).unwrap();
    let mut seen = ports.clone();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 16, "{ports:?}");
    for p in ports {
        std::net::TcpListener::bind(("127.0.0.1", p)).unwrap();
        std::net::UdpSocket::bind(("127.0.0.1", p)).unwrap();
    }
}

/// A port some process holds over UDP is never handed out, however many are asked for.
#[test]
fn a_port_taken_over_udp_is_not_chosen() {
    let _one_at_a_time = PORTS.lock().unwrap_or_else(|e| e.into_inner());
    let taken: Vec<std::net::UdpSocket> = (0..64)
        .map(|_| std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    let taken_ports: Vec<u16> = taken
        .iter()
        .map(|s| s.local_addr().unwrap().port())
        .collect();
    for _ in 0..20 {
        for p in distsync_net::local::free_ports(32).unwrap() {
            assert!(!taken_ports.contains(&p), "port {p} is held over UDP");
        }
    }
}
