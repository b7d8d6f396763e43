//! One connection (TCP or a Unix domain socket, [`crate::transport`]): the Noise handshake,
//! then encrypted frames in both directions.
//!
//! [`initiate`] (dialing side) and [`respond`] (listening side) run the handshake of `auth` and
//! return the two halves, [`Reader`] and [`Writer`], which can then live in different tasks.
//! Every way a connection can go wrong is a [`ConnError`] naming what happened; the caller logs
//! it and drops the connection, and nothing here panics on what a peer sends.

use crate::auth::{self, Agreed, Answer, Hello, LinkError, Opener, Role, Sealer, Side};
use crate::frame::{self, FrameError, HEADER, MAX_HANDSHAKE_FRAME};
use crate::transport::{ReadHalf, Stream, Via, WriteHalf};
use crate::wire::{self, DecodeError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
use std::io;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The first protocol version whose hello can be answered with a refusal it reads
/// ([`Answer::Refused`]); an earlier one is just closed.
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
    /// A frame after the handshake that does not decrypt (forged, altered, replayed,
    /// reordered), or a message above the bound.
    Link(LinkError),
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
            ConnError::Link(e) => write!(f, "{e}"),
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
        loop {
            let Some(sealed) = self.frames.next(auth::MAX_NOISE_MESSAGE).await? else {
                if self.opener.in_message() {
                    return Err(ConnError::Truncated);
                }
                return Ok(None);
            };
            if let Some(payload) = self.opener.open(&sealed).map_err(ConnError::Link)? {
                return wire::decode(&payload).map(Some).map_err(ConnError::Decode);
            }
        }
    }

    /// The next message if one has arrived, without waiting (`Ok(None)`: none yet). A stream
    /// that ended is an error here.
    pub fn try_recv<T: DeserializeOwned>(&mut self) -> Result<Option<T>, ConnError> {
        loop {
            let Some(sealed) = self.frames.try_next(auth::MAX_NOISE_MESSAGE)? else {
                return Ok(None);
            };
            if let Some(payload) = self.opener.open(&sealed).map_err(ConnError::Link)? {
                return wire::decode(&payload).map(Some).map_err(ConnError::Decode);
            }
        }
    }
}

/// The sending half of an authenticated connection.
///
/// Messages are encrypted into an output buffer and written from it; [`Writer::send_many`]
/// writes several in one system call, and [`Writer::try_send_now`] writes without waiting
/// (what a `Drop` can do), keeping what the socket did not take for the next send or
/// [`Writer::flush`].
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
        self.sealer
            .seal(&payload, &mut self.out)
            .map_err(ConnError::Link)
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

/// A Noise state error (the parameters are fixed and valid, so this is a handshake message
/// that does not fit or does not decrypt).
fn noise(what: &str, e: snow::Error) -> ConnError {
    ConnError::Auth(format!("{what}: {e}"))
}

/// Which key a role proves, in messages.
fn key_of(role: Role) -> &'static str {
    match role {
        Role::Peer(_) | Role::Admin => "the node key",
        Role::Client => "the client key",
    }
}

/// Dials side of the handshake over `stream` (a `TcpStream`, a `UnixStream` or a
/// [`Stream`]), as `role`, proving the key `secret` (the node key for a node or an admin, the
/// client key for a client).
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
        let hello = wire::encode(&Hello {
            version: mine.1,
            min_version: mine.0,
            role,
        });
        let mut hs = auth::handshake(&secret, &hello, Side::Initiator)
            .map_err(|e| noise("the Noise handshake", e))?;
        let mut msg = [0u8; MAX_HANDSHAKE_FRAME];
        let n = hs
            .write_message(&[], &mut msg)
            .map_err(|e| noise("the first Noise message", e))?;
        // The Hello and the first Noise message in one write.
        let mut out = Vec::with_capacity(2 * HEADER + hello.len() + n);
        frame::encode(&hello, &mut out);
        frame::encode(&msg[..n], &mut out);
        w.write_all(&out).await?;
        let answer = match recv_plain(&mut frames).await {
            Ok(Answer::Accepted { noise }) => noise,
            Ok(Answer::Refused {
                version,
                min_version,
            }) => {
                return Err(ConnError::Version(format!(
                    "the node speaks {}, this side {}: upgrade the older side (docs/net.md, \"Rolling upgrades\")",
                    auth::range_text((min_version, version)),
                    auth::range_text(mine)
                )))
            }
            Ok(Answer::Denied) => {
                return Err(ConnError::Auth(format!(
                    "the node does not accept this side's key as a {role}'s ({}): it is not this cluster's secret for that role (check the file)",
                    key_of(role)
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
        let mut payload = [0u8; MAX_HANDSHAKE_FRAME];
        let n = hs.read_message(&answer, &mut payload).map_err(|_| {
            ConnError::Auth(format!(
                "the node's answer does not decrypt: it does not hold {} (or the handshake was altered on the way)",
                key_of(role)
            ))
        })?;
        let agreed: Agreed = wire::decode(&payload[..n]).map_err(ConnError::Decode)?;
        let theirs = (agreed.min_version, agreed.max_version);
        if auth::agree(mine, theirs) != Some(agreed.version) {
            return Err(ConnError::Version(format!(
                "the node chose protocol version {}, not the highest of the {} this side speaks and the {} it speaks",
                agreed.version,
                auth::range_text(mine),
                auth::range_text(theirs)
            )));
        }
        let (sealer, opener) = auth::split(hs).map_err(|e| noise("the Noise handshake", e))?;
        let mut writer = Writer {
            io: w,
            sealer,
            out: Vec::new(),
        };
        // The key confirmation the responder waits for (auth, step 3).
        writer
            .sealer
            .seal(auth::CONFIRM, &mut writer.out)
            .map_err(ConnError::Link)?;
        writer.flush().await?;
        Ok((Reader { frames, opener }, writer))
    })
    .await
    .map_err(|_| ConnError::Timeout)?
}

/// Listening side of the handshake: who connected, and the connection's halves. A node or an
/// admin proves `node_secret`, a client `client_secret` (the role is in the Noise prologue and
/// picks the pre-shared key, so a client key never opens a node's link nor an admin's
/// connection).
pub async fn respond(
    stream: impl Into<Stream>,
    node_secret: &[u8],
    client_secret: &[u8],
) -> Result<(Role, Reader, Writer), ConnError> {
    respond_speaking(stream, &[node_secret], &[client_secret], auth::versions()).await
}

/// [`respond`], accepting any of several keys per role: during a key rotation (`distsync
/// cluster rekey`) a node accepts the new keys and, for a stated window, the old ones too. The
/// first Noise message decrypts under one key at most; each is tried in turn.
pub async fn respond_any(
    stream: impl Into<Stream>,
    node_secrets: &[&[u8]],
    client_secrets: &[&[u8]],
) -> Result<(Role, Reader, Writer), ConnError> {
    respond_speaking(stream, node_secrets, client_secrets, auth::versions()).await
}

/// [`respond`], speaking the protocol versions `mine` (min, max).
async fn respond_speaking(
    stream: impl Into<Stream>,
    node_secrets: &[&[u8]],
    client_secrets: &[&[u8]],
    mine: (u16, u16),
) -> Result<(Role, Reader, Writer), ConnError> {
    let node_secrets: Vec<Vec<u8>> = node_secrets.iter().map(|k| k.to_vec()).collect();
    let client_secrets: Vec<Vec<u8>> = client_secrets.iter().map(|k| k.to_vec()).collect();
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
                    &Answer::Refused {
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
        let secrets = match hello.role {
            Role::Peer(_) | Role::Admin => &node_secrets,
            Role::Client => &client_secrets,
        };
        let first = frames
            .next(MAX_HANDSHAKE_FRAME)
            .await?
            .ok_or(ConnError::Truncated)?;
        let mut scratch = [0u8; MAX_HANDSHAKE_FRAME];
        // The prologue is the Hello as received: one altered on the way is not the one the
        // initiator's state began with, and its Noise message fails below (under every key).
        let mut decrypted = None;
        for secret in secrets {
            let mut hs = auth::handshake(secret, &payload, Side::Responder)
                .map_err(|e| noise("the Noise handshake", e))?;
            if hs.read_message(&first, &mut scratch).is_ok() {
                decrypted = Some(hs);
                break;
            }
        }
        let Some(mut hs) = decrypted else {
            let _ = send_plain(&mut w, &Answer::Denied).await;
            return Err(ConnError::Auth(format!(
                "{} does not know the cluster secret ({}), or its hello was altered on the way",
                hello.role,
                key_of(hello.role)
            )));
        };
        let mut msg = [0u8; MAX_HANDSHAKE_FRAME];
        let n = hs
            .write_message(
                &wire::encode(&Agreed {
                    version: agreed,
                    min_version: mine.0,
                    max_version: mine.1,
                }),
                &mut msg,
            )
            .map_err(|e| noise("the second Noise message", e))?;
        send_plain(
            &mut w,
            &Answer::Accepted {
                noise: msg[..n].to_vec(),
            },
        )
        .await?;
        let (sealer, opener) = auth::split(hs).map_err(|e| noise("the Noise handshake", e))?;
        let mut reader = Reader { frames, opener };
        // The initiator's key confirmation: only the holder of its ephemeral key can send it,
        // so a recorded handshake replayed here stops now.
        let unconfirmed = |why: String| {
            ConnError::Auth(format!(
                "{} did not confirm the link's keys ({why}): a replayed handshake, or not a distsync peer",
                hello.role
            ))
        };
        match reader.frames.next(auth::MAX_NOISE_MESSAGE).await {
            Ok(Some(sealed)) => match reader.opener.open(&sealed) {
                Ok(Some(m)) if m == auth::CONFIRM => {}
                Ok(_) => return Err(unconfirmed("its first message is not the confirmation".into())),
                Err(e) => return Err(unconfirmed(e.to_string())),
            },
            Ok(None) => return Err(unconfirmed("it closed the connection".into())),
            Err(e) => return Err(unconfirmed(e.to_string())),
        }
        Ok((
            hello.role,
            reader,
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
    use crate::frame::MAX_FRAME;
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
            respond_speaking(s, &[&b"k"[..]], &[&b"k"[..]], responder).await
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
        let (refused, rest) = old_hello_refused(vec![2u8, 0, 1]).await;
        assert!(
            refused.contains("speaks protocol version 2, this node protocol version 4"),
            "{refused}"
        );
        assert!(
            rest.is_empty(),
            "nothing is sent to a version 2 node: {rest:?}"
        );
    }

    /// A hello of version 3 (the HMAC handshake: the range, the role, a nonce) is refused
    /// naming both versions, with a refusal laid out as version 3's, which it reads.
    #[tokio::test]
    async fn a_hello_of_version_3_is_refused_in_a_form_it_reads() {
        let (refused, rest) = old_hello_refused(vec![3u8, 3, 1]).await;
        assert!(
            refused.contains("speaks protocol version 3, this node protocol version 4"),
            "{refused}"
        );
        // Version 3's `Challenge::Refused { version: 4, min_version: 4 }`, framed.
        assert_eq!(rest, [0, 0, 0, 3, 1, 4, 4]);
    }

    /// An old release's hello (`head`, then a 32-byte nonce) sent to a node speaking version 4
    /// only: the node's refusal, and every byte the old side then reads until the close.
    async fn old_hello_refused(mut hello: Vec<u8>) -> (String, Vec<u8>) {
        let (at, server) = responder((4, 4)).await;
        let mut s = TcpStream::connect(at).await.unwrap();
        hello.extend_from_slice(&[7u8; 32]);
        write_frame(&mut s, &hello).await.unwrap();
        let refused = server.await.unwrap().err().expect("refused").to_string();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await.unwrap();
        (refused, rest)
    }

    /// Frames from the initiator to the responder through a proxy that passes each (numbered
    /// from 0: the hello, the first Noise message, the key confirmation, then messages) to
    /// `edit`, and records the bytes it forwards; the other direction is copied as it is.
    async fn proxy(
        to: std::net::SocketAddr,
        edit: fn(usize, &mut Vec<u8>),
    ) -> (std::net::SocketAddr, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let (from, _) = listener.accept().await.unwrap();
            let (from_r, mut from_w) = from.into_split();
            let (mut to_r, mut to_w) = TcpStream::connect(to).await.unwrap().into_split();
            tokio::spawn(async move { tokio::io::copy(&mut to_r, &mut from_w).await });
            let mut frames = FrameReader::new(from_r);
            let mut seen = Vec::new();
            let mut i = 0;
            while let Ok(Some(mut f)) = frames.next(auth::MAX_NOISE_MESSAGE).await {
                edit(i, &mut f);
                i += 1;
                let mut out = Vec::new();
                frame::encode(&f, &mut out);
                seen.extend_from_slice(&out);
                if to_w.write_all(&out).await.is_err() {
                    break;
                }
            }
            seen
        });
        (addr, task)
    }

    /// A responder speaking `range` with a node key and a client key, and its address.
    async fn responder(
        range: (u16, u16),
    ) -> (
        std::net::SocketAddr,
        tokio::task::JoinHandle<Result<(Role, Reader, Writer), ConnError>>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            respond_speaking(s, &[NODE_KEY], &[CLIENT_KEY], range).await
        });
        (addr, task)
    }

    const NODE_KEY: &[u8] = b"node key 0123456789";
    const CLIENT_KEY: &[u8] = b"client key 0123456789";

    /// An active attacker who rewrites the hello's range (4 to 5, cut to 4: the older version)
    /// breaks the handshake instead of downgrading it: the range is in the Noise prologue.
    #[tokio::test]
    async fn a_hello_altered_on_the_way_fails_the_handshake_so_no_downgrade() {
        // Untouched, both sides agree on 5.
        let (at, server) = responder((4, 5)).await;
        let (via, _) = proxy(at, |_, _| {}).await;
        let c = initiate_speaking(
            TcpStream::connect(via).await.unwrap(),
            CLIENT_KEY,
            Role::Client,
            (4, 5),
        )
        .await;
        assert!(c.is_ok(), "{:?}", c.err());
        assert!(server.await.unwrap().is_ok());
        // The hello's highest version (its first byte) cut from 5 to 4.
        let (at, server) = responder((4, 5)).await;
        let (via, _) = proxy(at, |i, f| {
            if i == 0 {
                assert_eq!(f[0], 5);
                f[0] = 4;
            }
        })
        .await;
        let c = initiate_speaking(
            TcpStream::connect(via).await.unwrap(),
            CLIENT_KEY,
            Role::Client,
            (4, 5),
        )
        .await;
        let s = server.await.unwrap().err().expect("refused").to_string();
        assert!(s.contains("or its hello was altered on the way"), "{s}");
        let c = c.err().expect("refused").to_string();
        assert!(c.contains("does not accept this side's key"), "{c}");
    }

    /// A client key is refused as a node's or an admin's, and says so on both sides.
    #[tokio::test]
    async fn a_client_key_is_refused_as_a_node_and_as_an_admin() {
        for role in [Role::Peer(NodeId(1)), Role::Admin] {
            let (at, server) = responder((4, 4)).await;
            let c = initiate_speaking(
                TcpStream::connect(at).await.unwrap(),
                CLIENT_KEY,
                role,
                (4, 4),
            )
            .await;
            let s = server.await.unwrap().err().expect("refused").to_string();
            assert!(
                s.contains(&format!(
                    "{role} does not know the cluster secret (the node key)"
                )),
                "{s}"
            );
            let c = c.err().expect("refused").to_string();
            assert!(c.contains(&format!("as a {role}'s (the node key)")), "{c}");
        }
        // The node key does not open a client's connection either: one key per role.
        let (at, server) = responder((4, 4)).await;
        let c = initiate_speaking(
            TcpStream::connect(at).await.unwrap(),
            NODE_KEY,
            Role::Client,
            (4, 4),
        )
        .await;
        assert!(matches!(c, Err(ConnError::Auth(_))), "{:?}", c.err());
        assert!(matches!(server.await.unwrap(), Err(ConnError::Auth(_))));
        // And each key opens its own role's.
        let (at, server) = responder((4, 4)).await;
        let c = initiate_speaking(
            TcpStream::connect(at).await.unwrap(),
            NODE_KEY,
            Role::Admin,
            (4, 4),
        )
        .await;
        assert!(c.is_ok(), "{:?}", c.err());
        assert_eq!(server.await.unwrap().unwrap().0, Role::Admin);
    }

    /// A frame altered after the handshake does not decrypt: the receiver's `recv` ends the
    /// connection with the reason (the node logs it and closes, `peer.rs`).
    #[tokio::test]
    async fn a_tampered_frame_fails_with_its_reason() {
        let (at, server) = responder((4, 4)).await;
        let (via, _) = proxy(at, |i, f| {
            if i == 4 {
                f[2] ^= 0x40;
            }
        })
        .await;
        let (_cr, mut cw) = initiate_speaking(
            TcpStream::connect(via).await.unwrap(),
            CLIENT_KEY,
            Role::Client,
            (4, 4),
        )
        .await
        .unwrap();
        let (_, mut sr, _sw) = server.await.unwrap().unwrap();
        cw.send(&ClientRequest::Ping).await.unwrap();
        cw.send(&ClientRequest::Status).await.unwrap();
        assert_eq!(
            sr.recv::<ClientRequest>().await.unwrap(),
            Some(ClientRequest::Ping)
        );
        let e = sr
            .recv::<ClientRequest>()
            .await
            .expect_err("tampered")
            .to_string();
        assert!(e.contains("frame failed authentication"), "{e}");
    }

    /// The bytes of a whole connection, recorded and replayed to the node on a new one, do not
    /// open a connection: the node's answer carries a new ephemeral key, the recorded key
    /// confirmation does not decrypt under the keys it makes.
    #[tokio::test]
    async fn a_replayed_handshake_fails() {
        let (at, server) = responder((4, 4)).await;
        let (via, recorded) = proxy(at, |_, _| {}).await;
        let (cr, mut cw) = initiate_speaking(
            TcpStream::connect(via).await.unwrap(),
            CLIENT_KEY,
            Role::Client,
            (4, 4),
        )
        .await
        .unwrap();
        let (_, mut sr, _sw) = server.await.unwrap().unwrap();
        cw.send(&ClientRequest::Ping).await.unwrap();
        assert_eq!(
            sr.recv::<ClientRequest>().await.unwrap(),
            Some(ClientRequest::Ping)
        );
        drop((cr, cw));
        let recorded = recorded.await.unwrap();
        assert!(!recorded.is_empty());
        let (at, server) = responder((4, 4)).await;
        let mut s = TcpStream::connect(at).await.unwrap();
        s.write_all(&recorded).await.unwrap();
        let e = server
            .await
            .unwrap()
            .err()
            .expect("replay refused")
            .to_string();
        assert!(e.contains("client did not confirm the link's keys"), "{e}");
        assert!(e.contains("a replayed handshake"), "{e}");
    }

    /// A message longer than one Noise message crosses a connection in pieces, whole.
    #[tokio::test]
    async fn a_message_above_one_noise_message_arrives_whole() {
        let (c, s) = pair(b"0123456789abcdef", b"0123456789abcdef").await;
        let (_cr, mut cw) = c.unwrap();
        let (_, mut sr, _sw) = s.unwrap();
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 7) as u8).collect();
        cw.send(&big).await.unwrap();
        cw.send(&ClientRequest::Ping).await.unwrap();
        assert_eq!(sr.recv::<Vec<u8>>().await.unwrap(), Some(big));
        assert_eq!(
            sr.recv::<ClientRequest>().await.unwrap(),
            Some(ClientRequest::Ping)
        );
        let too_big = vec![1u8; MAX_FRAME];
        let e = cw
            .send(&too_big)
            .await
            .expect_err("above the bound")
            .to_string();
        assert!(e.contains("exceeds the limit of 1048576 bytes"), "{e}");
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
