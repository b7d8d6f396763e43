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

/// The first protocol version whose hello can be answered with a refusal it reads
/// ([`Challenge::Refused`]); an earlier one is just closed.
const MIN_VERSION_EVER: u16 = 3;

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
    /// The other side does not know the cluster secret.
    Auth(String),
    /// The two sides speak no protocol version in common (the text names both ranges).
    Version(String),
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
            ConnError::Version(why) => write!(f, "protocol version mismatch: {why}"),
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
    initiate_speaking(stream, secret, role, auth::versions()).await
}

/// [`initiate`], offering the protocol versions `mine` (min, max).
async fn initiate_speaking(
    stream: impl Into<Stream>,
    secret: &[u8],
    role: Role,
    mine: (u16, u16),
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
                version: mine.1,
                min_version: mine.0,
                role,
                nonce: nonce_i,
            },
        )
        .await?;
        let nonce_r = match recv_plain(&mut frames).await {
            Ok(Challenge::Go { version, nonce }) => {
                if auth::agree(mine, (version, version)).is_none() {
                    return Err(ConnError::Version(format!(
                        "the node chose protocol version {version}, outside the {} this side speaks",
                        auth::range_text(mine)
                    )));
                }
                nonce
            }
            Ok(Challenge::Refused {
                version,
                min_version,
            }) => {
                return Err(ConnError::Version(format!(
                    "the node speaks {}, this side {}: upgrade the older side (docs/net.md, \"Rolling upgrades\")",
                    auth::range_text((min_version, version)),
                    auth::range_text(mine)
                )))
            }
            Err(ConnError::Truncated | ConnError::Io(_)) => {
                return Err(ConnError::Version(format!(
                    "the node closed the connection at this side's hello ({}): it speaks another protocol version (a release before version 3 closes without a word) or refuses this address",
                    auth::range_text(mine)
                )))
            }
            Err(e) => return Err(e),
        };
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
    respond_speaking(stream, node_secret, client_secret, auth::versions()).await
}

/// [`respond`], speaking the protocol versions `mine` (min, max).
async fn respond_speaking(
    stream: impl Into<Stream>,
    node_secret: &[u8],
    client_secret: &[u8],
    mine: (u16, u16),
) -> Result<(Role, Reader, Writer), ConnError> {
    let (node_secret, client_secret) = (node_secret.to_vec(), client_secret.to_vec());
    let stream: Stream = stream.into();
    tokio::time::timeout(HANDSHAKE_TIMEOUT, async move {
        let (r, mut w) = stream.into_split()?;
        let mut frames = FrameReader::new(r);
        let payload = frames
            .next(MAX_HANDSHAKE_FRAME)
            .await?
            .ok_or(ConnError::Truncated)?;
        // The highest version the other side speaks comes first, encoded alike in every
        // version: read it before the rest, which another version may lay out differently.
        let theirs_max = postcard::take_from_bytes::<u16>(&payload)
            .map_err(|e| ConnError::Decode(DecodeError(format!("hello: {e}"))))?
            .0;
        let hello: Option<Hello> = match wire::decode(&payload) {
            // A release before negotiation (bincode): the rest may decode, as nonsense.
            _ if theirs_max < MIN_VERSION_EVER => None,
            Ok(h) => Some(h),
            // A version this node speaks, yet not a hello of it: malformed.
            Err(e) if (mine.0..=mine.1).contains(&theirs_max) => return Err(ConnError::Decode(e)),
            Err(_) => None,
        };
        let theirs = hello
            .as_ref()
            .map_or((theirs_max, theirs_max), |h| (h.min_version, h.version));
        let agreed = match &hello {
            Some(h) if h.min_version <= h.version => auth::agree(mine, theirs),
            _ => None,
        };
        let Some(hello) = hello.filter(|_| agreed.is_some()) else {
            if theirs_max >= MIN_VERSION_EVER {
                // A later version reads this refusal; an earlier one closes at anything.
                let _ = send_plain(
                    &mut w,
                    &Challenge::Refused {
                        version: mine.1,
                        min_version: mine.0,
                    },
                )
                .await;
            }
            return Err(ConnError::Version(format!(
                "the other side speaks {}, this node {}; no version in common",
                auth::range_text(theirs),
                auth::range_text(mine)
            )));
        };
        let agreed = agreed.expect("checked");
        let secret = match hello.role {
            Role::Peer(_) | Role::Admin => &node_secret,
            Role::Client => &client_secret,
        };
        let nonce_r = auth::nonce();
        send_plain(
            &mut w,
            &Challenge::Go {
                version: agreed,
                nonce: nonce_r,
            },
        )
        .await?;
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

    /// Both ends of one handshake, each speaking the given range of versions.
    async fn pair_speaking(
        initiator: (u16, u16),
        responder: (u16, u16),
    ) -> (
        Result<(Reader, Writer), ConnError>,
        Result<(Role, Reader, Writer), ConnError>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            respond_speaking(s, b"k", b"k", responder).await
        });
        let s = TcpStream::connect(addr).await.unwrap();
        let client = initiate_speaking(s, b"k", Role::Client, initiator).await;
        (client, server.await.unwrap())
    }

    /// Versions: overlapping ranges connect (a rolling upgrade's old and new release), disjoint
    /// ones are refused on both sides with a message naming both ranges.
    #[tokio::test]
    async fn versions_in_common_connect_and_disjoint_ones_are_refused_naming_both() {
        let (c, s) = pair_speaking((3, 4), (3, 3)).await;
        assert!(c.is_ok() && s.is_ok(), "3-4 and 3 share version 3");
        let (c, s) = pair_speaking((3, 3), (3, 4)).await;
        assert!(c.is_ok() && s.is_ok(), "3 and 3-4 share version 3");
        let (c, s) = pair_speaking((4, 4), (3, 3)).await;
        let c = c.err().expect("refused").to_string();
        let s = s.err().expect("refused").to_string();
        assert!(
            c.contains("the node speaks protocol version 3, this side protocol version 4"),
            "{c}"
        );
        assert!(
            s.contains("the other side speaks protocol version 4, this node protocol version 3"),
            "{s}"
        );
        let (c, s) = pair_speaking((3, 3), (4, 5)).await;
        let c = c.err().expect("refused").to_string();
        assert!(
            c.contains("protocol versions 4 to 5") && c.contains("protocol version 3"),
            "{c}"
        );
        assert!(matches!(s, Err(ConnError::Version(_))), "{:?}", s.err());
    }

    /// A hello of the previous release (bincode: the version 2 as one byte, then the role's
    /// variant, its id, and the nonce) is refused naming version 2; that release's node reads
    /// nothing more from this one, which closes the connection.
    #[tokio::test]
    async fn a_hello_of_version_2_is_refused_naming_it() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            respond_speaking(s, b"k", b"k", (3, 3)).await
        });
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut hello = vec![2u8, 0, 1];
        hello.extend_from_slice(&[7u8; 32]);
        write_frame(&mut s, &hello).await.unwrap();
        let refused = server.await.unwrap().err().expect("refused").to_string();
        assert!(
            refused.contains("speaks protocol version 2, this node protocol version 3"),
            "{refused}"
        );
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await.unwrap();
        assert!(
            rest.is_empty(),
            "nothing is sent to a version 2 node: {rest:?}"
        );
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
