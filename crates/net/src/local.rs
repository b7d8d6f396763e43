//! A cluster of node processes on this machine, kept in one directory: `cluster.toml`, and for
//! each node `node-N.pid` and `node-N.log`. Used by `distsync cluster up|down|status`.
//!
//! A pid file is trusted only if that process is still a `node` of this directory's cluster file
//! (its command line names both), so a stale pid file never makes `down` signal a stranger.

use crate::config::{ClusterFile, NodeEntry, Timeouts};
use distsync_core::NodeId;
use std::fs;
use std::io;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The cluster file's name inside the directory.
pub const CLUSTER_FILE: &str = "cluster.toml";

/// A random secret: 32 bytes from the OS, in hex.
pub fn random_secret() -> String {
    let mut b = [0u8; 32];
    getrandom::getrandom(&mut b).expect("the operating system has no randomness source");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// `n` ports on 127.0.0.1 that were free a moment ago (bound to port 0, then let go).
pub fn free_ports(n: usize) -> io::Result<Vec<u16>> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<io::Result<_>>()?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

/// A cluster file for `n` nodes with ids 0..n on 127.0.0.1, ports `base_port..` (or free ports).
pub fn cluster_file(
    n: u32,
    mutex: &str,
    election: &str,
    base_port: Option<u16>,
    timeouts: Timeouts,
) -> io::Result<ClusterFile> {
    let ports: Vec<u16> = match base_port {
        Some(p) => (0..n)
            .map(|i| {
                p.checked_add(i as u16).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::InvalidInput, "ports run past 65535")
                })
            })
            .collect::<io::Result<_>>()?,
        None => free_ports(n as usize)?,
    };
    Ok(ClusterFile {
        mutex: mutex.to_string(),
        election: election.to_string(),
        secret: random_secret(),
        timeouts,
        clock: None,
        nodes: (0..n)
            .map(|i| NodeEntry {
                id: NodeId(i),
                addr: format!("127.0.0.1:{}", ports[i as usize]),
            })
            .collect(),
    })
}

/// Writes `file` as `dir/cluster.toml` (readable by its owner only: it holds the secret).
pub fn write_cluster(dir: &Path, file: &ClusterFile) -> io::Result<PathBuf> {
    fs::create_dir_all(dir)?;
    let path = dir.join(CLUSTER_FILE);
    let text = toml::to_string(file).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    fs::write(&path, text)?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
    Ok(path)
}

fn pid_path(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}.pid"))
}

/// Where node `id`'s log goes.
pub fn log_path(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}.log"))
}

/// Starts `exe node --cluster dir/cluster.toml --id N` for each id, in its own process group,
/// logging to `node-N.log`, and writes `node-N.pid`. `rust_log` is passed as RUST_LOG.
pub fn start_nodes(
    dir: &Path,
    exe: &Path,
    ids: &[NodeId],
    rust_log: &str,
) -> io::Result<Vec<(NodeId, u32)>> {
    use std::os::unix::process::CommandExt;
    let cluster = fs::canonicalize(dir.join(CLUSTER_FILE))?;
    let mut started = Vec::new();
    for &id in ids {
        let log = fs::File::create(log_path(dir, id))?;
        let child = Command::new(exe)
            .arg("node")
            .arg("--cluster")
            .arg(&cluster)
            .arg("--id")
            .arg(id.to_string())
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()?;
        fs::write(pid_path(dir, id), format!("{}\n", child.id()))?;
        started.push((id, child.id()));
    }
    Ok(started)
}

/// The pids recorded in `dir`, with whether each is still a node of this cluster.
pub fn recorded(dir: &Path) -> io::Result<Vec<(NodeId, u32, bool)>> {
    let cluster = fs::canonicalize(dir.join(CLUSTER_FILE))?;
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().to_string();
        let Some(id) = name
            .strip_prefix("node-")
            .and_then(|s| s.strip_suffix(".pid"))
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let text = fs::read_to_string(dir.join(&name))?;
        let Ok(pid) = text.trim().parse::<u32>() else {
            continue;
        };
        out.push((NodeId(id), pid, is_node_of(pid, &cluster)));
    }
    out.sort();
    Ok(out)
}

/// Whether process `pid` runs `node --cluster PATH` for this cluster file.
pub fn is_node_of(pid: u32, cluster: &Path) -> bool {
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    let path = cluster.as_os_str().as_encoded_bytes();
    args.contains(&&b"node"[..]) && args.contains(&path)
}

/// Sends `sig` to `pid`.
pub fn signal(pid: u32, sig: i32) -> io::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: kill(2) has no memory-safety preconditions.
    if unsafe { libc::kill(pid, sig) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Stops every recorded node of `dir`: SIGTERM, then SIGKILL after `grace`. Removes the pid
/// files. Returns (id, pid, how it ended) for each.
pub fn stop(dir: &Path, grace: Duration) -> io::Result<Vec<(NodeId, u32, &'static str)>> {
    let cluster = fs::canonicalize(dir.join(CLUSTER_FILE))?;
    let mut out = Vec::new();
    let nodes = recorded(dir)?;
    for &(_, pid, running) in &nodes {
        if running {
            let _ = signal(pid, libc::SIGTERM);
        }
    }
    let until = Instant::now() + grace;
    for (id, pid, running) in nodes {
        let how = if !running {
            "not running"
        } else {
            while is_node_of(pid, &cluster) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            if is_node_of(pid, &cluster) {
                let _ = signal(pid, libc::SIGKILL);
                "killed"
            } else {
                "stopped"
            }
        };
        let _ = fs::remove_file(pid_path(dir, id));
        out.push((id, pid, how));
    }
    Ok(out)
}
