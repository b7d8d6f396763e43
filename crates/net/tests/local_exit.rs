//! `local::has_exited`: what `cluster up` asks before it calls a node dead. A node spawned a
//! moment ago can still show an empty command line (seen as a flaky "node 2 exited; its log
//! ends with: (empty log)"), so being alive is decided by the process's state, not its name.

use distsync_net::local::has_exited;
use std::process::Command;
use std::time::{Duration, Instant};

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
