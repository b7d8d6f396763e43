//! One connection (TCP or a Unix domain socket, [`crate::transport`]): the handshake, then
//! sealed frames in both directions.
//!
//! [`initiate`] (dialing side) and [`respond`] (listening side) run the handshake of `auth` and
//! return the two halves, [`Reader`] and [`Writer`], which can then live in different tasks.
//! Every way a connection can go wrong is a [`ConnError`] naming what happened; the caller logs
//! it and drops the connection, and nothing here panics on what a peer sends.

use crate::auth::{self, Challenge, Hello, Opener, Proof, Role, Sealer, Side};
use crate::frame::{self, FrameError, HEADER, MAX_FRAME, MAX_HANDSHAKE_FRAME};
use crate::transport::{ReadHalf, Stream, Via, WriteHalf};
use crate::wire::{self, DecodeError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
use std::io;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// How long a handshake may take before the connection is dropped.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a connection ended or was refused.
#[derive(Debug)]
pub enum ConnError {
    /// A socket error.
    Io(io::Error),
    /// The peer closed the connection in the middle of a frame.
    Truncated,
    /// A frame that can never be valid (too large, empty).
    Frame(FrameError),
    /// A frame whose MAC does not verify.
    Mac,
    /// A payload that does not decode.
    Decode(DecodeError),
    /// The other side does not know the cluster secret (or speaks another version).
    Auth(String),
    /// The handshake took longer than [`HANDSHAKE_TIMEOUT`].
    Timeout,
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::Io(e) => write!(f, "{e}"),
            ConnError::Truncated => write!(f, "connection closed in the middle of a frame"),
            ConnError::Frame(e) => write!(f, "{e}"),
            ConnError::Mac => write!(f, "frame failed authentication (bad MAC)"),
            ConnError::Decode(e) => write!(f, "{e}"),
            ConnError::Auth(why) => write!(f, "authentication failed: {why}"),
            ConnError::Timeout => write!(f, "handshake timed out"),
        }
    }
}

impl std::error::Error for ConnError {}

impl From<io::Error> for ConnError {
    fn from(e: io::Error) -> Self {
        ConnError::Io(e)
    }
}

/// Reads frames from a byte stream, buffering partial ones.
pub struct FrameReader<R> {
    io: R,
    buf: Vec<u8>,
    start: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// A reader over `io`.
    pub fn new(io: R) -> Self {
        FrameReader {
            io,
            buf: Vec::with_capacity(4096),
            start: 0,
        }
    }

    /// The next frame's payload (at most `max` bytes), or `None` if the stream ended cleanly
    /// between frames.
    pub async fn next(&mut self, max: usize) -> Result<Option<Vec<u8>>, ConnError> {
        loop {
            match frame::parse(&self.buf[self.start..], max) {
                Ok(Some(n)) => {
                    let at = self.start + HEADER;
                    let payload = self.buf[at..at + n].to_vec();
                    self.start = at + n;
                    if self.start == self.buf.len() {
                        self.buf.clear();
                        self.start = 0;
                    }
                    return Ok(Some(payload));
                }
                Ok(None) => {}
                Err(e) => return Err(ConnError::Frame(e)),
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            // Read into the buffer's spare room (no zeroed chunk to copy from).
            self.buf.reserve(8192);
            let n = self.io.read_buf(&mut self.buf).await?;
            if n == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(ConnError::Truncated)
                };
            }
        }
    }
}

impl FrameReader<ReadHalf> {
    /// The next frame if one has arrived, without waiting: `Ok(None)` when none is complete
    /// yet; [`ConnError::Truncated`] (or `Io`) when the stream ended.
    pub fn try_next(&mut self, max: usize) -> Result<Option<Vec<u8>>, ConnError> {
        loop {
            match frame::parse(&self.buf[self.start..], max) {
                Ok(Some(n)) => {
                    let at = self.start + HEADER;
                    let payload = self.buf[at..at + n].to_vec();
                    self.start = at + n;
                    if self.start == self.buf.len() {
                        self.buf.clear();
                        self.start = 0;
                    }
                    return Ok(Some(payload));
                }
                Ok(None) => {}
                Err(e) => return Err(ConnError::Frame(e)),
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            self.buf.reserve(8192);
            match self.io.try_read_buf(&mut self.buf) {
                Ok(0) => return Err(ConnError::Truncated),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(ConnError::Io(e)),
            }
        }
    }
}

async fn write_frame<W: AsyncWrite + Unpin>(io: &mut W, payload: &[u8]) -> io::Result<()> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    frame::encode(payload, &mut out);
    io.write_all(&out).await
}

/// The receiving half of an authenticated connection.
pub struct Reader {
    frames: FrameReader<ReadHalf>,
    opener: Opener,
}

impl Reader {
    /// The next message, or `None` when the other side closed the connection cleanly.
    pub async fn recv<T: DeserializeOwned>(&mut self) -> Result<Option<T>, ConnError> {
        let Some(sealed) = self.frames.next(MAX_FRAME + auth::TAG).await? else {
            return Ok(None);
        };
        let payload = self.opener.open(&sealed).map_err(|_| ConnError::Mac)?;
        wire::decode(payload).map(Some).map_err(ConnError::Decode)
    }
}

impl Reader {
    /// The next message if one has arrived, without waiting (`Ok(None)`: none yet). A stream
    /// that ended is an error here.
    pub fn try_recv<T: DeserializeOwned>(&mut self) -> Result<Option<T>, ConnError> {
        let Some(sealed) = self.frames.try_next(MAX_FRAME + auth::TAG)? else {
            return Ok(None);
        };
        let payload = self.opener.open(&sealed).map_err(|_| ConnError::Mac)?;
        wire::decode(payload).map(Some).map_err(ConnError::Decode)
    }
}

/// The sending half of an authenticated connection.
///
/// Frames are sealed into an output buffer and written from it; [`Writer::send_many`] writes
/// several in one system call, and [`Writer::try_send_now`] writes without waiting (what a
/// `Drop` can do), keeping what the socket did not take for the next send or [`Writer::flush`].
pub struct Writer {
    io: WriteHalf,
    sealer: Sealer,
    out: Vec<u8>,
}

impl Writer {
    /// Which transport the connection runs over.
    pub fn via(&self) -> Via {
        match self.io {
            WriteHalf::Tcp(_) => Via::Tcp,
            WriteHalf::Unix(_) => Via::Unix,
        }
    }
}

impl Writer {
    fn seal_into<T: Serialize>(&mut self, msg: &T) -> Result<(), ConnError> {
        let payload = wire::encode(msg);
        if payload.len() > MAX_FRAME {
            return Err(ConnError::Frame(FrameError::TooLarge {
                len: payload.len(),
                max: MAX_FRAME,
            }));
        }
        let sealed = self.sealer.seal(&payload);
        frame::encode(&sealed, &mut self.out);
        Ok(())
    }

    /// Sends one message.
    pub async fn send<T: Serialize>(&mut self, msg: &T) -> Result<(), ConnError> {
        self.seal_into(msg)?;
        self.flush().await
    }

    /// Sends these messages, in order, in as few writes as the socket allows.
    pub async fn send_many<T: Serialize>(&mut self, msgs: &[T]) -> Result<(), ConnError> {
        for m in msgs {
            self.seal_into(m)?;
        }
        self.flush().await
    }

    /// Writes whatever earlier sends left unwritten.
    pub async fn flush(&mut self) -> Result<(), ConnError> {
        if !self.out.is_empty() {
            let r = self.io.write_all(&self.out).await;
            self.out.clear();
            r?;
        }
        Ok(())
    }

    /// Seals `msg` and writes as much as the socket takes now, without waiting. `Ok(true)`: all
    /// written; `Ok(false)`: the rest waits in the buffer for the next send or [`Writer::flush`]
    /// (frames stay in order either way).
    pub fn try_send_now<T: Serialize>(&mut self, msg: &T) -> Result<bool, ConnError> {
        self.seal_into(msg)?;
        while !self.out.is_empty() {
            match self.io.try_write(&self.out) {
                Ok(0) => return Err(ConnError::Io(io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(ConnError::Io(e)),
            }
        }
        Ok(true)
    }
}

async fn recv_plain<T: DeserializeOwned, R: AsyncRead + Unpin>(
    frames: &mut FrameReader<R>,
) -> Result<T, ConnError> {
    match frames.next(MAX_HANDSHAKE_FRAME).await? {
        Some(payload) => wire::decode(&payload).map_err(ConnError::Decode),
        None => Err(ConnError::Truncated),
    }
}

async fn send_plain<T: Serialize, W: AsyncWrite + Unpin>(io: &mut W, msg: &T) -> io::Result<()> {
    write_frame(io, &wire::encode(msg)).await
}

/// Dials side of the handshake over `stream` (a `TcpStream`, a `UnixStream` or a
/// [`Stream`]), as `role`.
pub async fn initiate(
    stream: impl Into<Stream>,
    secret: &[u8],
    role: Role,
) -> Result<(Reader, Writer), ConnError> {
    let secret = secret.to_vec();
    let stream: Stream = stream.into();
    tokio::time::timeout(HANDSHAKE_TIMEOUT, async move {
        let (r, mut w) = stream.into_split()?;
        let mut frames = FrameReader::new(r);
        let nonce_i = auth::nonce();
        send_plain(
            &mut w,
            &Hello {
                version: auth::VERSION,
                role,
                nonce: nonce_i,
            },
        )
        .await?;
        let Challenge { nonce: nonce_r } = recv_plain(&mut frames).await?;
        let mine = auth::proof(&secret, Side::Initiator, &nonce_i, &nonce_r, role);
        send_plain(&mut w, &mine).await?;
        let theirs: Proof = recv_plain(&mut frames).await.map_err(|e| match e {
            ConnError::Truncated | ConnError::Io(_) => ConnError::Auth(
                "the node closed the connection: it does not accept our secret".into(),
            ),
            e => e,
        })?;
        if !auth::check(&secret, Side::Responder, &nonce_i, &nonce_r, role, &theirs) {
            return Err(ConnError::Auth(
                "the node's proof is wrong: it does not know the cluster secret".into(),
            ));
        }
        let (sealer, opener) = auth::session_keys(&secret, Side::Initiator, &nonce_i, &nonce_r);
        Ok((
            Reader { frames, opener },
            Writer {
                io: w,
                sealer,
                out: Vec::new(),
            },
        ))
    })
    .await
    .map_err(|_| ConnError::Timeout)?
}

/// Listening side of the handshake: who connected, and the connection's halves. A node or an
/// admin proves `node_secret`, a client `client_secret` (the role is bound into the proof, so a
/// client key never opens a node's link nor an admin's connection).
pub async fn respond(
    stream: impl Into<Stream>,
    node_secret: &[u8],
    client_secret: &[u8],
) -> Result<(Role, Reader, Writer), ConnError> {
    let (node_secret, client_secret) = (node_secret.to_vec(), client_secret.to_vec());
    let stream: Stream = stream.into();
    tokio::time::timeout(HANDSHAKE_TIMEOUT, async move {
        let (r, mut w) = stream.into_split()?;
        let mut frames = FrameReader::new(r);
        let hello: Hello = recv_plain(&mut frames).await?;
        if hello.version != auth::VERSION {
            return Err(ConnError::Auth(format!(
                "protocol version {} (this node speaks {})",
                hello.version,
                auth::VERSION
            )));
        }
        let secret = match hello.role {
            Role::Peer(_) | Role::Admin => &node_secret,
            Role::Client => &client_secret,
        };
        let nonce_r = auth::nonce();
        send_plain(&mut w, &Challenge { nonce: nonce_r }).await?;
        let theirs: Proof = recv_plain(&mut frames).await?;
        if !auth::check(
            secret,
            Side::Initiator,
            &hello.nonce,
            &nonce_r,
            hello.role,
            &theirs,
        ) {
            return Err(ConnError::Auth(format!(
                "{} does not know the cluster secret{}",
                hello.role,
                match hello.role {
                    Role::Peer(_) | Role::Admin => " (the node key)",
                    Role::Client => " (the client key)",
                }
            )));
        }
        let mine = auth::proof(secret, Side::Responder, &hello.nonce, &nonce_r, hello.role);
        send_plain(&mut w, &mine).await?;
        let (sealer, opener) = auth::session_keys(secret, Side::Responder, &hello.nonce, &nonce_r);
        Ok((
            hello.role,
            Reader { frames, opener },
            Writer {
                io: w,
                sealer,
                out: Vec::new(),
            },
        ))
    })
    .await
    .map_err(|_| ConnError::Timeout)?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ClientRequest;
    use distsync_core::NodeId;
    use tokio::net::{TcpListener, TcpStream};

    async fn pair(
        secret_i: &'static [u8],
        secret_r: &'static [u8],
    ) -> (
        Result<(Reader, Writer), ConnError>,
        Result<(Role, Reader, Writer), ConnError>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            respond(s, secret_r, secret_r).await
        });
        let s = TcpStream::connect(addr).await.unwrap();
        let client = initiate(s, secret_i, Role::Peer(NodeId(4))).await;
        (client, server.await.unwrap())
    }

    #[tokio::test]
    async fn same_secret_connects_and_messages_flow() {
        let (c, s) = pair(b"0123456789abcdef", b"0123456789abcdef").await;
        let (_cr, mut cw) = c.unwrap();
        let (role, mut sr, _sw) = s.unwrap();
        assert_eq!(role, Role::Peer(NodeId(4)));
        cw.send(&ClientRequest::Status).await.unwrap();
        cw.send(&ClientRequest::Ping).await.unwrap();
        assert_eq!(
            sr.recv::<ClientRequest>().await.unwrap(),
            Some(ClientRequest::Status)
        );
        assert_eq!(
            sr.recv::<ClientRequest>().await.unwrap(),
            Some(ClientRequest::Ping)
        );
        drop(cw);
        drop(_cr);
        assert!(sr.recv::<ClientRequest>().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_wrong_secret_is_refused_on_both_sides() {
        let (c, s) = pair(b"0123456789abcdeX", b"0123456789abcdef").await;
        assert!(matches!(s, Err(ConnError::Auth(_))), "{:?}", s.err());
        assert!(matches!(c, Err(ConnError::Auth(_))), "{:?}", c.err());
    }

    #[tokio::test]
    async fn an_oversized_frame_is_refused_before_it_is_read() {
        let (r, mut w) = tokio::io::duplex(64);
        let mut frames = FrameReader::new(r);
        w.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
        assert!(matches!(
            frames.next(MAX_FRAME).await,
            Err(ConnError::Frame(FrameError::TooLarge { .. }))
        ));
    }

    #[tokio::test]
    async fn a_truncated_frame_is_an_error_and_a_clean_close_is_not() {
        let (r, mut w) = tokio::io::duplex(64);
        let mut frames = FrameReader::new(r);
        w.write_all(&[0, 0, 0, 5, 1, 2]).await.unwrap();
        drop(w);
        assert!(matches!(
            frames.next(MAX_FRAME).await,
            Err(ConnError::Truncated)
        ));
        let (r, mut w) = tokio::io::duplex(64);
        let mut frames = FrameReader::new(r);
        w.write_all(&[0, 0, 0, 1, 9]).await.unwrap();
        drop(w);
        assert_eq!(frames.next(MAX_FRAME).await.unwrap(), Some(vec![9]));
        assert_eq!(frames.next(MAX_FRAME).await.unwrap(), None);
    }
}
