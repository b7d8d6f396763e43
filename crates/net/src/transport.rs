//! How a connection reaches a node: over TCP, or over a Unix domain socket when the node runs on
//! this machine.
//!
//! Every node listens on its TCP address. A node whose cluster file was read from a directory
//! (`cluster up`, `distsync node --cluster DIR/cluster.toml`) also listens on the Unix socket
//! `DIR/node-N.sock` ([`socket_path`]). A dialer (a node's link to a peer, a lock client, the
//! `leader`/`status` client) reaching node N uses that socket when N's address is a loopback
//! address (so N runs on this machine) and the socket is there, and TCP otherwise or when the
//! socket does not answer ([`dial`]). On a Unix socket a message costs the kernel less than on
//! loopback TCP (no TCP/IP processing, no acknowledgements); everything above the byte stream,
//! the Noise handshake, the encrypted frames, is the same on both.
//!
//! `DISTSYNC_TRANSPORT=tcp` in the environment turns the Unix sockets off for the process that
//! reads it: a node then does not listen on one and a dialer does not use one.

use crate::config::Cluster;
use distsync_core::NodeId;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{tcp, unix, TcpStream, UnixListener, UnixStream};

/// The longest path a Unix socket can have on Linux (`sun_path` is 108 bytes, NUL included).
pub const MAX_SOCKET_PATH: usize = 107;

/// Which transport a connection runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// TCP.
    Tcp,
    /// A Unix domain socket.
    Unix,
}

/// A connected byte stream: TCP or a Unix domain socket.
#[derive(Debug)]
pub enum Stream {
    /// TCP.
    Tcp(TcpStream),
    /// A Unix domain socket.
    Unix(UnixStream),
}

impl From<TcpStream> for Stream {
    fn from(s: TcpStream) -> Self {
        Stream::Tcp(s)
    }
}

impl From<UnixStream> for Stream {
    fn from(s: UnixStream) -> Self {
        Stream::Unix(s)
    }
}

impl Stream {
    /// Which transport this is.
    pub fn via(&self) -> Via {
        match self {
            Stream::Tcp(_) => Via::Tcp,
            Stream::Unix(_) => Via::Unix,
        }
    }

    /// Splits the stream into halves that can live in different tasks (TCP: with Nagle's
    /// algorithm off, every frame goes out at once).
    pub(crate) fn into_split(self) -> io::Result<(ReadHalf, WriteHalf)> {
        Ok(match self {
            Stream::Tcp(s) => {
                s.set_nodelay(true)?;
                let (r, w) = s.into_split();
                (ReadHalf::Tcp(r), WriteHalf::Tcp(w))
            }
            Stream::Unix(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
            }
        })
    }
}

/// The receiving half of a [`Stream`].
#[derive(Debug)]
pub enum ReadHalf {
    /// TCP.
    Tcp(tcp::OwnedReadHalf),
    /// A Unix domain socket.
    Unix(unix::OwnedReadHalf),
}

/// The sending half of a [`Stream`].
#[derive(Debug)]
pub enum WriteHalf {
    /// TCP.
    Tcp(tcp::OwnedWriteHalf),
    /// A Unix domain socket.
    Unix(unix::OwnedWriteHalf),
}

impl ReadHalf {
    /// Reads what has arrived into `buf` without waiting (`WouldBlock`: nothing yet).
    pub fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        match self {
            ReadHalf::Tcp(r) => r.try_read_buf(buf),
            ReadHalf::Unix(r) => r.try_read_buf(buf),
        }
    }
}

impl WriteHalf {
    /// Writes what the socket takes now without waiting (`WouldBlock`: nothing).
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            WriteHalf::Tcp(w) => w.try_write(buf),
            WriteHalf::Unix(w) => w.try_write(buf),
        }
    }
}

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Tcp(r) => Pin::new(r).poll_read(cx, buf),
            ReadHalf::Unix(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Tcp(w) => Pin::new(w).poll_write(cx, buf),
            WriteHalf::Unix(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(w) => Pin::new(w).poll_flush(cx),
            WriteHalf::Unix(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(w) => Pin::new(w).poll_shutdown(cx),
            WriteHalf::Unix(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}

/// The Unix socket node `id` listens on beside its TCP address, in the cluster's directory.
pub fn socket_path(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}.sock"))
}

/// Whether Unix sockets are turned off for this process (`DISTSYNC_TRANSPORT=tcp`).
pub fn tcp_only() -> bool {
    std::env::var("DISTSYNC_TRANSPORT").is_ok_and(|v| v.eq_ignore_ascii_case("tcp"))
}

/// The Unix socket a dialer may use to reach node `id` of `cluster`: its [`socket_path`] when the
/// cluster file was read from a directory and the node's address is a loopback address (it runs
/// on this machine); `None` otherwise or with `DISTSYNC_TRANSPORT=tcp`.
pub fn local_socket(cluster: &Cluster, id: NodeId) -> Option<PathBuf> {
    let dir = cluster.state_dir.as_ref()?;
    let addr = cluster.addr_of(id)?;
    (addr.ip().is_loopback() && !tcp_only()).then(|| socket_path(dir, id))
}

/// Connects to node `id` of `cluster` at `addr`: over its Unix socket when [`local_socket`]
/// names one that answers, else over TCP. Each attempt waits at most `timeout`.
pub async fn dial(
    cluster: &Cluster,
    id: NodeId,
    addr: SocketAddr,
    timeout: Duration,
) -> io::Result<Stream> {
    if let Some(path) = local_socket(cluster, id) {
        // A missing or stale socket (a node not started yet, or one that crashed) is refused at
        // once; TCP then says whether the node is really down.
        if let Ok(Ok(s)) = tokio::time::timeout(timeout, UnixStream::connect(&path)).await {
            return Ok(Stream::Unix(s));
        }
    }
    match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(r) => r.map(Stream::Tcp),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer from {addr} within {timeout:?}"),
        )),
    }
}

/// Listens on the Unix socket `path` (a node's [`local_socket`]), replacing a stale socket file
/// a node that crashed left there. Refuses, naming the path and what is wrong, a path that is
/// too long for a Unix socket, or that exists and is not a socket (it is never removed then).
///
/// Call it only once the node has its TCP address: that proves no other node with this id
/// runs, so the socket found there is stale.
pub fn listen_unix(path: &Path) -> Result<UnixListener, String> {
    let listener = bind_unix(path)?;
    listener
        .set_nonblocking(true)
        .and_then(|()| UnixListener::from_std(listener))
        .map_err(|e| format!("{}: cannot listen: {e}", path.display()))
}

/// [`listen_unix`] as a blocking `std` listener, outside any runtime (`cluster up` binds its new
/// nodes' sockets before it starts them, `crate::local`). The same checks and the same rule:
/// only where no node with this id can run.
pub fn bind_unix(path: &Path) -> Result<std::os::unix::net::UnixListener, String> {
    use std::os::unix::fs::FileTypeExt;
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(format!(
            "{}: {len} bytes, longer than a Unix socket path can be ({MAX_SOCKET_PATH}); use a \
             shorter cluster directory",
            path.display()
        ));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            std::fs::remove_file(path)
                .map_err(|e| format!("{}: cannot remove the old socket: {e}", path.display()))?;
        }
        Ok(_) => {
            return Err(format!(
                "{}: exists and is not a socket; remove it (the node's Unix socket goes there)",
                path.display()
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    let listener = std::os::unix::net::UnixListener::bind(path)
        .map_err(|e| format!("{}: cannot listen: {e}", path.display()))?;
    // A node takes bursts of connections (its peers and clients at once): the backlog tokio
    // gives its own listeners, above std's.
    // SAFETY: listen(2) on a socket we own.
    unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&listener), 1024) };
    Ok(listener)
}
