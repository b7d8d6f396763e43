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
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::{tcp, TcpStream, UnixListener, UnixStream};

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
                let (r, w) = unix_split(s)?;
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
            }
        })
    }
}

/// Splits a Unix stream into a reader registered for readability only and a writer that is not
/// registered at all (see [`UnixReader`]).
fn unix_split(s: UnixStream) -> io::Result<(UnixReader, UnixWriter)> {
    let s = s.into_std()?;
    let w = s.try_clone()?;
    // SAFETY: the `AsyncFd` owns the stream, whose descriptor stays open and the same until it
    // is dropped.
    let fd = unsafe { AsyncFd::register_with_interest(s, Interest::READABLE) }?;
    Ok((
        UnixReader { fd },
        UnixWriter {
            io: w,
            waiting: None,
        },
    ))
}

/// The receiving half of a Unix stream, registered with the runtime for readability only.
///
/// tokio registers a `UnixStream` (and each of its halves) for both readability and
/// writability, edge-triggered; on a Unix socket the kernel signals writability to the sender
/// every time the receiver takes data out of it, so every message a node or client sent woke
/// its own process once more when the other side read it (an `epoll_wait` returning only
/// `EPOLLOUT`, nobody waiting for it): two wake-ups per lock round trip at each end instead of
/// one. Registered for reading only, the socket wakes its process only for what it receives;
/// the writer ([`UnixWriter`]) registers a duplicate of the descriptor for writability only
/// while a write waits for room.
#[derive(Debug)]
pub struct UnixReader {
    fd: AsyncFd<std::os::unix::net::UnixStream>,
}

/// The sending half of a Unix stream: writes without waiting; only when the socket is full
/// does it register a duplicate descriptor for writability and wait on it, and drops that
/// registration once the write went through. Dropping it shuts the stream's writing side
/// down, as tokio's halves do.
#[derive(Debug)]
pub struct UnixWriter {
    io: std::os::unix::net::UnixStream,
    waiting: Option<AsyncFd<std::os::fd::OwnedFd>>,
}

impl UnixReader {
    /// One `read(2)` into `buf`'s unfilled part; `Ok(0)` at the end of the stream.
    fn read_into(&self, buf: &mut ReadBuf<'_>) -> io::Result<usize> {
        // SAFETY: only the kernel writes into these bytes, and `assume_init` below counts only
        // those it wrote.
        let unfilled = unsafe { buf.unfilled_mut() };
        let len = unfilled.len();
        // SAFETY: read(2) writes at most `len` bytes into the unfilled part of the buffer,
        // which is valid for writes of that length.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                unfilled.as_mut_ptr().cast::<libc::c_void>(),
                len,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = n as usize;
        // SAFETY: the kernel initialized the first `n` bytes.
        unsafe { buf.assume_init(n) };
        buf.advance(n);
        Ok(n)
    }

    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        loop {
            let mut guard = match self.fd.poll_read_ready(cx) {
                Poll::Ready(g) => g?,
                Poll::Pending => return Poll::Pending,
            };
            let len = buf.remaining();
            match guard.try_io(|_| self.read_into(buf)) {
                Ok(Ok(n)) => {
                    // Edge-triggered: a read that did not fill the buffer emptied the socket, so
                    // the next read waits for the next edge instead of trying first and getting
                    // `EAGAIN` (tokio's own streams do the same).
                    if 0 < n && n < len {
                        guard.clear_ready();
                    }
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }

    fn try_read_buf(&self, buf: &mut Vec<u8>) -> io::Result<usize> {
        self.fd.try_io(Interest::READABLE, |_| {
            let spare = buf.spare_capacity_mut();
            let mut rb = ReadBuf::uninit(spare);
            let n = self.read_into(&mut rb)?;
            // SAFETY: `read_into` initialized the first `n` bytes of the spare capacity.
            unsafe { buf.set_len(buf.len() + n) };
            Ok(n)
        })
    }
}

impl UnixWriter {
    /// One `send(2)` without waiting (no SIGPIPE on a closed stream).
    fn send_now(&self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: send(2) reads at most `buf.len()` bytes from `buf`.
        let n = unsafe {
            libc::send(
                self.io.as_raw_fd(),
                buf.as_ptr().cast::<libc::c_void>(),
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    fn poll_write(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            match self.send_now(buf) {
                Ok(n) => {
                    // Room again: the socket no longer wakes this process when it drains.
                    self.waiting = None;
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
            if self.waiting.is_none() {
                // Registering reports writability at once if room appeared since the send.
                let dup = std::os::fd::OwnedFd::from(self.io.try_clone()?);
                // SAFETY: the `AsyncFd` owns the duplicate, open and the same until dropped.
                self.waiting =
                    Some(unsafe { AsyncFd::register_with_interest(dup, Interest::WRITABLE) }?);
            }
            let waiting = self.waiting.as_ref().expect("registered above");
            match waiting.poll_write_ready(cx) {
                Poll::Ready(Ok(mut guard)) => guard.clear_ready(),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for UnixWriter {
    fn drop(&mut self) {
        let _ = self.io.shutdown(std::net::Shutdown::Write);
    }
}

/// The receiving half of a [`Stream`].
#[derive(Debug)]
pub enum ReadHalf {
    /// TCP.
    Tcp(tcp::OwnedReadHalf),
    /// A Unix domain socket.
    Unix(UnixReader),
}

/// The sending half of a [`Stream`].
#[derive(Debug)]
pub enum WriteHalf {
    /// TCP.
    Tcp(tcp::OwnedWriteHalf),
    /// A Unix domain socket.
    Unix(UnixWriter),
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
            WriteHalf::Unix(w) => w.send_now(buf),
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
            ReadHalf::Unix(r) => r.poll_read(cx, buf),
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
            WriteHalf::Unix(w) => w.poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(w) => Pin::new(w).poll_flush(cx),
            WriteHalf::Unix(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(w) => Pin::new(w).poll_shutdown(cx),
            WriteHalf::Unix(w) => Poll::Ready(w.io.shutdown(std::net::Shutdown::Write)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn unix_pair() -> ((ReadHalf, WriteHalf), (ReadHalf, WriteHalf)) {
        let (a, b) = UnixStream::pair().unwrap();
        (
            Stream::Unix(a).into_split().unwrap(),
            Stream::Unix(b).into_split().unwrap(),
        )
    }

    /// The event masks this process's epoll instances hold for descriptor `fd` (from
    /// `/proc/self/fdinfo`: a line `tfd: FD events: MASK ...` per registration).
    fn epoll_masks(fd: i32) -> Vec<u32> {
        let mut masks = Vec::new();
        for entry in std::fs::read_dir("/proc/self/fdinfo").unwrap().flatten() {
            let Ok(info) = std::fs::read_to_string(entry.path()) else {
                continue;
            };
            for line in info.lines() {
                let mut words = line.split_whitespace();
                if words.next() == Some("tfd:")
                    && words.next().and_then(|w| w.parse::<i32>().ok()) == Some(fd)
                    && words.next() == Some("events:")
                {
                    masks.push(u32::from_str_radix(words.next().unwrap(), 16).unwrap());
                }
            }
        }
        masks
    }

    #[tokio::test]
    async fn a_unix_stream_is_registered_for_reading_only_so_its_own_sends_draining_wake_nobody() {
        let ((ra, mut wa), (mut rb, _wb)) = unix_pair();
        let ReadHalf::Unix(reader) = &ra else {
            panic!("a Unix half")
        };
        let WriteHalf::Unix(writer) = &wa else {
            panic!("a Unix half")
        };
        let masks = epoll_masks(reader.fd.as_raw_fd());
        assert!(!masks.is_empty(), "the reader is registered");
        for m in masks {
            assert_ne!(m & libc::EPOLLIN as u32, 0, "mask {m:#x}: readable");
            assert_eq!(
                m & libc::EPOLLOUT as u32,
                0,
                "mask {m:#x}: the kernel signals EPOLLOUT each time the peer drains the socket"
            );
        }
        assert!(
            epoll_masks(writer.io.as_raw_fd()).is_empty(),
            "the writer is not registered while it has room"
        );
        wa.write_all(b"ping").await.unwrap();
        let mut got = [0u8; 4];
        rb.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
    }

    #[tokio::test]
    async fn a_unix_writer_waits_for_room_and_every_byte_arrives_in_order() {
        let ((_ra, mut wa), (mut rb, _wb)) = unix_pair();
        // Far more than the socket buffer holds: the writer meets `WouldBlock` and waits.
        let data: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
        let sent = data.clone();
        let writer = tokio::spawn(async move {
            wa.write_all(&sent).await.unwrap();
            let WriteHalf::Unix(w) = &wa else {
                panic!("a Unix half")
            };
            assert!(
                w.waiting.is_none(),
                "the registration is dropped once written"
            );
            wa
        });
        let mut got = Vec::new();
        let mut chunk = vec![0u8; 1000];
        while got.len() < data.len() {
            let n = rb.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the stream ended early");
            got.extend_from_slice(&chunk[..n]);
            if got.len() % 7 == 0 {
                tokio::task::yield_now().await;
            }
        }
        assert!(got == data, "bytes lost or reordered");
        drop(writer.await.unwrap());
        assert_eq!(rb.read(&mut chunk).await.unwrap(), 0, "end of stream");
    }

    #[tokio::test]
    async fn a_dropped_unix_writer_ends_the_peers_stream_and_its_reader_still_reads() {
        let ((mut ra, wa), (mut rb, mut wb)) = unix_pair();
        drop(wa);
        let mut buf = [0u8; 8];
        assert_eq!(rb.read(&mut buf).await.unwrap(), 0, "the peer sees the end");
        wb.write_all(b"still").await.unwrap();
        let n = ra.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"still");
        // A read without waiting: nothing more yet, then what arrives.
        let mut v = Vec::with_capacity(64);
        let e = ra.try_read_buf(&mut v).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        wb.write_all(b"more").await.unwrap();
        // Once the runtime has seen the socket become readable (a yield lets it poll).
        let mut n = None;
        for _ in 0..1000 {
            match ra.try_read_buf(&mut v) {
                Ok(k) => {
                    n = Some(k);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => tokio::task::yield_now().await,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(n, Some(4));
        assert_eq!(v, b"more");
    }
}
