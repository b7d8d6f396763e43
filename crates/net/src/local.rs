//! A cluster of node processes on this machine, kept in one directory: `cluster.toml`, and for
//! each node `node-N.pid` and `node-N.log`. Used by `distsync cluster up|down|status`.
//!
//! A pid file is trusted only if that process is still a `node` of this directory's cluster file
//! (its command line names both), so a stale pid file never makes `down` signal a stranger.
//!
//! The directory holds the cluster secret, so it must be private: [`check_dir`] creates it with
//! mode 0700 and refuses one that is a symbolic link, belongs to another user or can be written
//! by group or others. Every file is opened without following symbolic links (`O_NOFOLLOW`), so
//! a link planted in the directory cannot make the operator write anywhere else; the cluster
//! file and pid files are written to a new file (mode 0600) renamed into place, so they are
//! never readable by others, not even for an instant, and never half-written. Pid files are not
//! synced to disk (they mean nothing after a reboot); `cluster up` syncs the cluster and client
//! files while its nodes start ([`sync_files`]) and returns only once they are durable.

use crate::config::{ClusterFile, NodeEntry, Timeouts};
use crate::files::refuse;
pub use crate::files::{no_symlink, sync_files, write_private, write_private_unsynced};
use distsync_core::NodeId;
use std::fs;
use std::io;
use std::net::{TcpListener, UdpSocket};
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

/// `n` ports on 127.0.0.1 that were free a moment ago for both TCP and UDP (bound to port 0,
/// then let go). A node listens on its port over TCP and, with a `[clock]`, over UDP too; a port
/// free for TCP alone could be some process's ephemeral UDP socket (another cluster's NTP
/// client, say), and the node's clock would then fail with "Address already in use".
///
/// Let go, a port can be taken by anyone before its node binds it; [`hold_free_ports`] keeps
/// them taken, for [`start_nodes_holding`] to hand over.
pub fn free_ports(n: usize) -> io::Result<Vec<u16>> {
    Ok(hold_free_ports(n)?.ports())
}

/// Ports on 127.0.0.1, each bound for TCP (listening) and UDP, held from the moment they are
/// chosen until the node that will use one has it: [`start_nodes_holding`] passes each node its
/// two sockets (inherited descriptors, named by [`LISTEN_FDS_ENV`]), so no other process can
/// take the port in between, as one could when `cluster up` chose ports, let them go, and the
/// nodes bound them again a few milliseconds later (two clusters started at once, or any
/// program's outgoing connection drawing the same ephemeral port).
pub struct HeldPorts {
    sockets: Vec<(TcpListener, UdpSocket)>,
}

impl HeldPorts {
    /// The ports, in the order chosen.
    pub fn ports(&self) -> Vec<u16> {
        self.sockets
            .iter()
            .map(|(t, _)| t.local_addr().map_or(0, |a| a.port()))
            .collect()
    }
}

/// `n` ports free for both TCP and UDP on 127.0.0.1, held (see [`HeldPorts`]).
pub fn hold_free_ports(n: usize) -> io::Result<HeldPorts> {
    // Everything chosen is held until the end, so no port is chosen twice.
    let mut held: Vec<(TcpListener, UdpSocket)> = Vec::with_capacity(n);
    let mut attempts = 0;
    while held.len() < n {
        attempts += 1;
        if attempts > 100 * n.max(1) {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("found no {n} ports on 127.0.0.1 free for both TCP and UDP"),
            ));
        }
        let tcp = TcpListener::bind("127.0.0.1:0")?;
        let port = tcp.local_addr()?.port();
        if let Ok(udp) = UdpSocket::bind(("127.0.0.1", port)) {
            held.push((tcp, udp));
        }
    }
    Ok(HeldPorts { sockets: held })
}

/// A cluster file for `n` nodes with ids 0..n on 127.0.0.1, ports `base_port..` (or free ports,
/// let go: see [`cluster_file_holding`]).
pub fn cluster_file(
    n: u32,
    mutex: &str,
    election: &str,
    base_port: Option<u16>,
    timeouts: Timeouts,
) -> io::Result<ClusterFile> {
    cluster_file_holding(n, mutex, election, base_port, timeouts).map(|(file, _)| file)
}

/// [`cluster_file`], and without `base_port` the free ports it chose, still held, node i's at
/// index i, for [`start_nodes_holding`].
pub fn cluster_file_holding(
    n: u32,
    mutex: &str,
    election: &str,
    base_port: Option<u16>,
    timeouts: Timeouts,
) -> io::Result<(ClusterFile, Option<HeldPorts>)> {
    let (ports, held): (Vec<u16>, _) = match base_port {
        Some(p) => (
            (0..n)
                .map(|i| {
                    p.checked_add(i as u16).ok_or_else(|| {
                        io::Error::new(io::ErrorKind::InvalidInput, "ports run past 65535")
                    })
                })
                .collect::<io::Result<_>>()?,
            None,
        ),
        None => {
            let held = hold_free_ports(n as usize)?;
            (held.ports(), Some(held))
        }
    };
    let file = ClusterFile {
        mutex: mutex.to_string(),
        election: election.to_string(),
        secret: random_secret(),
        client_secret: Some(random_secret()),
        client_only: false,
        timeouts,
        clock: None,
        locks: Default::default(),
        store: Default::default(),
        nodes: (0..n)
            .map(|i| NodeEntry {
                id: NodeId(i),
                addr: format!("127.0.0.1:{}", ports[i as usize]),
            })
            .collect(),
    };
    Ok((file, held))
}

/// Makes sure `dir` is a private directory of the current user: creates it (mode 0700) if it
/// does not exist; refuses a symbolic link, another user's directory, or one that group or
/// others can write.
pub fn check_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| refuse(dir, &format!("cannot create the directory: {e}")))?;
            Ok(())
        }
        Err(e) => Err(refuse(dir, &e.to_string())),
        Ok(m) if m.file_type().is_symlink() => Err(refuse(
            dir,
            "is a symbolic link; give the real directory (it will hold the cluster secret)",
        )),
        Ok(m) if !m.is_dir() => Err(refuse(dir, "is not a directory")),
        Ok(m) => {
            // SAFETY: geteuid has no preconditions.
            let me = unsafe { libc::geteuid() };
            if m.uid() != me {
                return Err(refuse(
                    dir,
                    &format!(
                        "is owned by uid {}, not by you (uid {me}); it will hold the cluster secret",
                        m.uid()
                    ),
                ));
            }
            if m.mode() & 0o022 != 0 {
                return Err(refuse(
                    dir,
                    &format!(
                        "is writable by group or others (mode {:o}); it will hold the cluster secret (chmod go-w)",
                        m.mode() & 0o777
                    ),
                ));
            }
            Ok(())
        }
    }
}

/// The file in a cluster's directory that `cluster up` (and `cluster down`, `start`, `restart`)
/// lock while they work there ([`lock_dir`]).
pub const LOCK_FILE: &str = "cluster.lock";

/// An exclusive lock on a cluster's directory (`flock` on [`LOCK_FILE`], which names the
/// holder): released when dropped, or when the process ends however it ends.
#[derive(Debug)]
pub struct DirLock {
    _file: fs::File,
}

/// Locks `dir` for `verb` (as "cluster up"), so that two commands never start or stop the
/// same cluster's nodes at once (two `cluster up` at once both found no node running and
/// each started a full set, one of which `cluster down` then did not know). With `wait`, waits
/// for the holder to finish; without, an error names it (its pid and verb). `dir` must exist.
pub fn lock_dir(dir: &Path, verb: &str, wait: bool) -> io::Result<DirLock> {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(LOCK_FILE);
    let mut file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| refuse(&path, &e.to_string()))?;
    let flock = |how: i32| {
        // SAFETY: flock(2) on a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), how) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    };
    if let Err(e) = flock(libc::LOCK_EX | libc::LOCK_NB) {
        if e.kind() != io::ErrorKind::WouldBlock {
            return Err(refuse(&path, &format!("cannot lock it: {e}")));
        }
        if !wait {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "{}: another command is at work in this directory ({}); wait for it to end, or stop it, and try again",
                    dir.display(),
                    if holder.is_empty() { "its pid not written yet" } else { holder }
                ),
            ));
        }
        flock(libc::LOCK_EX).map_err(|e| refuse(&path, &format!("cannot lock it: {e}")))?;
    }
    file.set_len(0)?;
    file.rewind()?;
    write!(file, "pid {}: distsync {verb}", std::process::id())?;
    Ok(DirLock { _file: file })
}

/// Opens node `id`'s log for appending (mode 0600 when created), never through a link.
pub fn open_log(dir: &Path, id: NodeId) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = log_path(dir, id);
    no_symlink(&path)?;
    fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| refuse(&path, &e.to_string()))
}

/// Checks the directory and every file `cluster up` writes for nodes `ids` before anything is
/// written or started.
pub fn check_layout(dir: &Path, ids: &[NodeId]) -> io::Result<()> {
    check_dir(dir)?;
    no_symlink(&dir.join(CLUSTER_FILE))?;
    no_symlink(&dir.join(LOCK_FILE))?;
    for &id in ids {
        no_symlink(&log_path(dir, id))?;
        no_symlink(&pid_path(dir, id))?;
        no_symlink(&crate::persist::epoch_path(dir, id))?;
    }
    Ok(())
}

/// A cluster file for nodes at `addrs` (ids 0..n, in that order), with random node and client
/// keys: for `cluster init`, when the nodes run on several machines.
pub fn cluster_file_for(
    addrs: &[String],
    mutex: &str,
    election: &str,
    timeouts: Timeouts,
) -> ClusterFile {
    ClusterFile {
        mutex: mutex.to_string(),
        election: election.to_string(),
        secret: random_secret(),
        client_secret: Some(random_secret()),
        client_only: false,
        timeouts,
        clock: None,
        locks: Default::default(),
        store: Default::default(),
        nodes: addrs
            .iter()
            .enumerate()
            .map(|(i, a)| NodeEntry {
                id: NodeId(i as u32),
                addr: a.clone(),
            })
            .collect(),
    }
}

/// Writes `file` as `dir/cluster.toml` (readable by its owner only: it holds the secret),
/// atomically and durably, after checking the directory.
pub fn write_cluster(dir: &Path, file: &ClusterFile) -> io::Result<PathBuf> {
    let path = write_cluster_unsynced(dir, file)?;
    sync_files(std::slice::from_ref(&path))?;
    Ok(path)
}

/// [`write_cluster`] without waiting for the disk; [`sync_files`] makes it durable later
/// (`cluster up` does that while its nodes start).
pub fn write_cluster_unsynced(dir: &Path, file: &ClusterFile) -> io::Result<PathBuf> {
    check_dir(dir)?;
    let path = dir.join(CLUSTER_FILE);
    let text = toml::to_string(file).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    write_private_unsynced(&path, text.as_bytes())?;
    Ok(path)
}

/// Where node `id`'s pid goes.
pub fn pid_path(dir: &Path, id: NodeId) -> PathBuf {
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
    start_nodes_ready(dir, exe, ids, rust_log).map(|(started, _)| started)
}

/// The environment variable that gives a node started by [`start_nodes_ready`] the pipe on
/// which it says it is listening ([`ready_notifier`]).
pub const READY_FD_ENV: &str = "DISTSYNC_READY_FD";

/// [`start_nodes`], with the pipe on which the nodes say, each once, that they listen.
pub fn start_nodes_ready(
    dir: &Path,
    exe: &Path,
    ids: &[NodeId],
    rust_log: &str,
) -> io::Result<(Vec<(NodeId, u32)>, ReadyPipe)> {
    start_nodes_holding(dir, exe, ids, rust_log, None)
}

/// The environment variable that hands a node started by [`start_nodes_holding`] its held
/// sockets: "TCP,UDP", two inherited descriptors ([`take_inherited_tcp`],
/// [`take_inherited_udp`]).
pub const LISTEN_FDS_ENV: &str = "DISTSYNC_LISTEN_FDS";

/// The environment variable that hands a node started by [`start_nodes_holding`] the Unix socket
/// bound for it at its [`crate::transport::socket_path`]: one inherited descriptor
/// ([`take_inherited_unix`]).
pub const LISTEN_UNIX_FD_ENV: &str = "DISTSYNC_LISTEN_UNIX_FD";

/// Binds the Unix socket of each node of `ids` in `dir` (the cluster file's directory), for
/// [`start_nodes_holding`] to hand over; `None` for a node whose socket cannot be bound (the
/// node then tries itself, and says why it has none), and for every node with
/// `DISTSYNC_TRANSPORT=tcp`.
///
/// Bound before the first node starts, every node's socket accepts from the start: a node
/// dialing a peer not started yet (while `cluster up` holds the peer's TCP port listening)
/// reaches it over its socket, its connection waiting in the socket's backlog, instead of
/// finding the socket file missing and keeping that link on TCP.
fn bind_unix_sockets(dir: &Path, ids: &[NodeId]) -> Vec<Option<std::os::unix::net::UnixListener>> {
    ids.iter()
        .map(|&id| {
            if crate::transport::tcp_only() {
                return None;
            }
            let path = crate::transport::socket_path(dir, id);
            crate::transport::bind_unix(&path).ok()
        })
        .collect()
}

/// At most this many threads spawn a cluster's nodes.
const SPAWNERS: usize = 16;

/// [`start_nodes_ready`], handing node `ids[i]` the sockets of port i of `held` (which are then
/// closed here: each node keeps its own). With `held`, each node's Unix socket is bound here too
/// before the first node starts, and handed to its node the same way.
pub fn start_nodes_holding(
    dir: &Path,
    exe: &Path,
    ids: &[NodeId],
    rust_log: &str,
    held: Option<HeldPorts>,
) -> io::Result<(Vec<(NodeId, u32)>, ReadyPipe)> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let cluster = fs::canonicalize(dir.join(CLUSTER_FILE))?;
    let (pipe, write_fd) = ReadyPipe::new()?;
    let unix = match (&held, cluster.parent()) {
        (Some(_), Some(parent)) => bind_unix_sockets(parent, ids),
        _ => Vec::new(),
    };
    let mut started = Vec::new();
    let result = (|| {
        let mut cmds = Vec::with_capacity(ids.len());
        for (i, &id) in ids.iter().enumerate() {
            let log = open_log(dir, id)?;
            let mut cmd = Command::new(exe);
            cmd.arg("node")
                .arg("--cluster")
                .arg(&cluster)
                .arg("--id")
                .arg(id.to_string())
                .env("RUST_LOG", rust_log)
                .env(READY_FD_ENV, write_fd.to_string())
                .stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log)
                .process_group(0);
            if let Some((tcp, udp)) = held.as_ref().and_then(|h| h.sockets.get(i)) {
                let unix_fd = unix.get(i).and_then(|u| u.as_ref()).map(|u| u.as_raw_fd());
                let fds = [tcp.as_raw_fd(), udp.as_raw_fd(), unix_fd.unwrap_or(-1)];
                cmd.env(LISTEN_FDS_ENV, format!("{},{}", fds[0], fds[1]));
                if let Some(fd) = unix_fd {
                    cmd.env(LISTEN_UNIX_FD_ENV, fd.to_string());
                }
                // SAFETY: between fork and exec, only fcntl (async-signal-safe) on the
                // descriptors this process holds open: this child alone inherits them.
                unsafe {
                    cmd.pre_exec(move || {
                        for fd in fds.into_iter().filter(|&fd| fd >= 0) {
                            let flags = libc::fcntl(fd, libc::F_GETFD);
                            if flags < 0
                                || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0
                            {
                                return Err(io::Error::last_os_error());
                            }
                        }
                        Ok(())
                    });
                }
            }
            cmds.push((id, cmd));
        }
        // Spawned from several threads at once: each spawn waits until its child has exec'd
        // (2-4 ms on this busy machine), and those waits overlap instead of adding up.
        let threads = cmds.len().clamp(1, SPAWNERS);
        let mut spawned: Vec<(NodeId, io::Result<u32>)> = std::thread::scope(|s| {
            let mut shares: Vec<Vec<(NodeId, Command)>> =
                (0..threads).map(|_| Vec::new()).collect();
            for (k, c) in cmds.into_iter().enumerate() {
                shares[k % threads].push(c);
            }
            let handles: Vec<_> = shares
                .into_iter()
                .map(|share| {
                    s.spawn(move || {
                        share
                            .into_iter()
                            .map(|(id, mut cmd)| (id, cmd.spawn().map(|c| c.id())))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a spawning thread panicked"))
                .collect()
        });
        spawned.sort_by_key(|(id, _)| ids.iter().position(|i| i == id));
        // Every node that started gets its pid file (so that `cluster down` stops it), even
        // when another failed to start.
        let mut failed = None;
        for (id, pid) in spawned {
            match pid {
                Ok(pid) => {
                    // Not synced: a pid file means nothing after a reboot, and waiting for the
                    // disk here (once per node) was most of `cluster up`'s time on a busy disk.
                    write_private_unsynced(&pid_path(dir, id), format!("{pid}\n").as_bytes())?;
                    started.push((id, pid));
                }
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    })();
    // The nodes have their copies of the write end; with ours closed, the pipe ends when
    // theirs are (each node closes it once it has reported, or when it exits).
    // SAFETY: `write_fd` is the pipe's write end, opened by `ReadyPipe::new` and closed only here.
    unsafe { libc::close(write_fd) };
    // Our copies of the held sockets close here: each node has its own.
    drop(held);
    drop(unix);
    result.map(|()| (started, pipe))
}

/// The read end of the pipe on which nodes started by [`start_nodes_ready`] say they listen:
/// one line with its id from each, written by [`ready_notifier`]'s file.
pub struct ReadyPipe {
    read: fs::File,
    buf: Vec<u8>,
}

impl ReadyPipe {
    /// A pipe whose read end is kept here (closed on exec) and whose write end, returned, is
    /// inherited by the children.
    fn new() -> io::Result<(ReadyPipe, i32)> {
        use std::os::fd::FromRawFd;
        let mut fds = [0i32; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fds[0] was just opened by pipe(2) and is owned by nothing else.
        let read = unsafe { fs::File::from_raw_fd(fds[0]) };
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            libc::fcntl(fds[0], libc::F_SETFD, libc::FD_CLOEXEC);
            libc::fcntl(fds[0], libc::F_SETFL, libc::O_NONBLOCK);
        }
        Ok((
            ReadyPipe {
                read,
                buf: Vec::new(),
            },
            fds[1],
        ))
    }

    /// Waits until every node of `ids` has said it listens, the pipe ended (every node reported
    /// or exited), or `until`; returns the ids that reported.
    pub fn wait(&mut self, ids: &[NodeId], until: Instant) -> Vec<NodeId> {
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let mut seen: Vec<NodeId> = Vec::new();
        loop {
            let mut chunk = [0u8; 256];
            match self.read.read(&mut chunk) {
                Ok(0) => break, // every write end is closed
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    let mut pfd = libc::pollfd {
                        fd: self.read.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    let ms = left.as_millis().clamp(1, 1000) as i32;
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut pfd, 1, ms) };
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
            while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                if let Some(id) = std::str::from_utf8(&line)
                    .ok()
                    .and_then(|l| l.trim().parse::<u32>().ok())
                {
                    if !seen.contains(&NodeId(id)) {
                        seen.push(NodeId(id));
                    }
                }
            }
            if ids.iter().all(|id| seen.contains(id)) {
                break;
            }
        }
        seen
    }
}

/// In a node started by [`start_nodes_ready`]: the pipe on which to say it listens (write its
/// id and a newline, then drop the file), from [`READY_FD_ENV`]; `None` when the variable is not
/// set or does not name an open pipe.
pub fn ready_notifier() -> Option<fs::File> {
    use std::os::fd::FromRawFd;
    let fd: i32 = std::env::var(READY_FD_ENV).ok()?.parse().ok()?;
    if fd < 3 {
        return None;
    }
    // SAFETY: fstat writes into the struct we give it; an unknown descriptor fails with EBADF.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return None;
    }
    // SAFETY: an open pipe inherited for this purpose, owned by nothing else in this process.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Some(unsafe { fs::File::from_raw_fd(fd) })
}

/// The sockets handed to this process by [`start_nodes_holding`], each taken once.
static INHERITED: std::sync::Mutex<Option<[Option<i32>; 2]>> = std::sync::Mutex::new(None);

/// Takes descriptor `which` (0: TCP, 1: UDP) of [`LISTEN_FDS_ENV`] if it is an open socket
/// (marked close-on-exec from now on).
fn take_inherited(which: usize) -> Option<i32> {
    let mut slots = INHERITED.lock().unwrap_or_else(|p| p.into_inner());
    let slots = slots.get_or_insert_with(|| {
        let mut fds = [None, None];
        if let Ok(v) = std::env::var(LISTEN_FDS_ENV) {
            for (slot, part) in fds.iter_mut().zip(v.split(',')) {
                *slot = part.parse::<i32>().ok().filter(|&fd| {
                    // SAFETY: fstat writes into the struct we give it; an unknown descriptor
                    // fails with EBADF.
                    let mut st: libc::stat = unsafe { std::mem::zeroed() };
                    fd > 2
                        && unsafe { libc::fstat(fd, &mut st) } == 0
                        && st.st_mode & libc::S_IFMT == libc::S_IFSOCK
                });
            }
        }
        fds
    });
    let fd = slots[which].take()?;
    // SAFETY: fcntl on a descriptor this process inherited for this purpose.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    Some(fd)
}

/// In a node started by [`start_nodes_holding`]: the listening TCP socket held for it, if it is
/// bound to `addr` (one bound elsewhere is closed, and the node binds `addr` itself).
pub fn take_inherited_tcp(addr: std::net::SocketAddr) -> Option<TcpListener> {
    use std::os::fd::FromRawFd;
    let fd = take_inherited(0)?;
    // SAFETY: an open socket inherited for this purpose, owned by nothing else here.
    let listener = unsafe { TcpListener::from_raw_fd(fd) };
    if listener.local_addr().ok()? != addr {
        return None;
    }
    // The holder listened with std's backlog (128); a node takes bursts of connections.
    // SAFETY: listen(2) on a socket we own.
    unsafe { libc::listen(fd, 1024) };
    Some(listener)
}

/// In a node started by [`start_nodes_holding`]: the Unix socket bound for it
/// ([`LISTEN_UNIX_FD_ENV`]), if it is bound to `path` (one bound elsewhere is closed, and the
/// node binds `path` itself). Take it even when the node does not listen on a Unix socket (then
/// `path` is `None` and it is closed): a node keeps no socket it does not accept on.
pub fn take_inherited_unix(path: Option<&Path>) -> Option<std::os::unix::net::UnixListener> {
    use std::os::fd::FromRawFd;
    // Taken once: a second call finds nothing.
    static TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if TAKEN.swap(true, std::sync::atomic::Ordering::SeqCst) {
        return None;
    }
    let fd: i32 = std::env::var(LISTEN_UNIX_FD_ENV).ok()?.parse().ok()?;
    // SAFETY: fstat writes into the struct we give it; an unknown descriptor fails with EBADF.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if fd <= 2
        || unsafe { libc::fstat(fd, &mut st) } != 0
        || st.st_mode & libc::S_IFMT != libc::S_IFSOCK
    {
        return None;
    }
    // SAFETY: an open socket inherited for this purpose, owned by nothing else here.
    let listener = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
    // SAFETY: fcntl on a descriptor this process owns.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    let bound = listener.local_addr().ok()?;
    (path.is_some() && bound.as_pathname() == path).then_some(listener)
}

/// In a node started by [`start_nodes_holding`]: the UDP socket held for it (its clock's), if
/// it is bound to `addr`.
pub fn take_inherited_udp(addr: std::net::SocketAddr) -> Option<UdpSocket> {
    use std::os::fd::FromRawFd;
    let fd = take_inherited(1)?;
    // SAFETY: an open socket inherited for this purpose, owned by nothing else here.
    let socket = unsafe { UdpSocket::from_raw_fd(fd) };
    (socket.local_addr().ok()? == addr).then_some(socket)
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

/// Whether process `pid` is gone or a zombie (it has exited and nobody reaped it yet).
///
/// Unlike `!is_node_of(pid, ..)` this is never wrong about a process that has just been
/// started: right after `execve` there is a moment in which `/proc/PID/cmdline` is still empty,
/// so a node spawned a microsecond ago can fail `is_node_of` while it runs.
pub fn has_exited(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the command name, which is in parentheses and may
        // itself contain spaces or parentheses.
        Ok(stat) => stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .is_none_or(|state| matches!(state, 'Z' | 'X')),
        Err(_) => true,
    }
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
    stop_ids(dir, None, grace)
}

/// Stops the recorded nodes of `dir` whose ids are in `only` (all if `None`).
pub fn stop_ids(
    dir: &Path,
    only: Option<&[NodeId]>,
    grace: Duration,
) -> io::Result<Vec<(NodeId, u32, &'static str)>> {
    let mut out = Vec::new();
    let nodes: Vec<(NodeId, u32, bool)> = recorded(dir)?
        .into_iter()
        .filter(|(id, _, _)| only.is_none_or(|ids| ids.contains(id)))
        .collect();
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
            // Signalled as this cluster's node above: from here on, the pid is that process
            // until it has exited and been reaped (a pid is reused only after the kernel has
            // gone through all the others), so its state alone says when it is gone. Its
            // command line does not: it reads empty, or cut short, while the process exits.
            while !has_exited(pid) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
            if has_exited(pid) {
                "stopped"
            } else {
                let _ = signal(pid, libc::SIGKILL);
                // A kill takes effect at once, but the exit itself (letting go of the node's
                // memory) does not: wait for it, so that "killed" means the process is gone.
                let until = Instant::now() + KILL_WAIT;
                while !has_exited(pid) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(2));
                }
                "killed"
            }
        };
        let _ = fs::remove_file(pid_path(dir, id));
        out.push((id, pid, how));
    }
    Ok(out)
}

/// How long `stop` waits for a killed node's exit to finish.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// The last non-empty line of node `id`'s log (for error messages).
pub fn last_log_line(dir: &Path, id: NodeId) -> String {
    fs::read_to_string(log_path(dir, id))
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(empty log)")
        .to_string()
}

/// The name of the client file `cluster up` writes beside the cluster file: the addresses,
/// algorithms and timeouts with the client key only, for the users of the locks.
pub const CLIENT_FILE: &str = "client.toml";

/// Writes `dir/client.toml` for `cluster`: everything but the node key (mode 0600; hand it to
/// the users of the locks), atomically and durably.
pub fn write_client_file(dir: &Path, file: &ClusterFile) -> io::Result<PathBuf> {
    let path = write_client_file_unsynced(dir, file)?;
    sync_files(std::slice::from_ref(&path))?;
    Ok(path)
}

/// [`write_client_file`] without waiting for the disk ([`sync_files`] later).
pub fn write_client_file_unsynced(dir: &Path, file: &ClusterFile) -> io::Result<PathBuf> {
    let text = toml::to_string(&file.client_file())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let path = dir.join(CLIENT_FILE);
    write_private_unsynced(
        &path,
        format!(
            "# For the users of the locks: the client key only (it cannot act as a node).\n{text}"
        )
        .as_bytes(),
    )?;
    Ok(path)
}
