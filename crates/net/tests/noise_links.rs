//! The links of a running node are Noise links: through a proxy that records (or alters) the
//! bytes between a client and a node, no lock name crosses the network in clear, a frame
//! altered on the way closes the connection with the reason in the node's log, and a client
//! key is refused as a node's (the role is bound into the handshake, its key is the
//! pre-shared key).

use distsync_core::NodeId;
use distsync_net::auth::{Role, MAX_NOISE_MESSAGE};
use distsync_net::wire::{ClientReply, ClientRequest};
use distsync_net::{connection, frame, local, Cluster, Timeouts};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Everything the nodes of this test binary log (one process-wide subscriber, as a node
/// process has).
fn logs() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .with_writer(move || Sink(sink.clone()))
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        buf
    })
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log_text() -> String {
    String::from_utf8_lossy(&logs().lock().unwrap()).into_owned()
}

/// Waits (bounded) until the log holds a line with all of `parts`.
async fn wait_for_log(parts: &[&str]) -> String {
    for _ in 0..200 {
        let log = log_text();
        if log.lines().any(|l| parts.iter().all(|p| l.contains(p))) {
            return log;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no log line with {parts:?} in:\n{}", log_text());
}

/// A two-node ricart-agrawala cluster, its nodes running in this process; they serve until
/// the test ends.
async fn two_nodes() -> Cluster {
    logs();
    let file =
        local::cluster_file(2, "ricart-agrawala", "bully", None, Timeouts::default()).unwrap();
    let cluster = Cluster::check(file, "test").unwrap();
    for id in [NodeId(0), NodeId(1)] {
        let (up_tx, up) = tokio::sync::oneshot::channel::<()>();
        let node = distsync_net::node::run_notify(
            cluster.clone(),
            id,
            std::future::pending::<()>(),
            move || {
                let _ = up_tx.send(());
            },
        );
        tokio::spawn(node);
        up.await.unwrap();
    }
    cluster
}

/// The bytes a proxy forwarded, each direction.
#[derive(Default)]
struct Seen {
    to_node: Vec<u8>,
    from_node: Vec<u8>,
}

/// A proxy to `node`: its address, and what it forwarded. Frames to the node (numbered from 0:
/// the hello, the first Noise message, the key confirmation, then messages) pass through
/// `edit` first.
async fn proxy(node: SocketAddr, edit: fn(usize, &mut Vec<u8>)) -> (SocketAddr, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let record = seen.clone();
    tokio::spawn(async move {
        let (client, _) = listener.accept().await.unwrap();
        let (mut from_client, mut to_client) = client.into_split();
        let (mut from_node, mut to_node) = TcpStream::connect(node).await.unwrap().into_split();
        let back = record.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n @ 1..) = from_node.read(&mut buf).await {
                back.lock().unwrap().from_node.extend_from_slice(&buf[..n]);
                if to_client.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        });
        let (mut pending, mut buf, mut i) = (Vec::new(), vec![0u8; 1 << 16], 0);
        while let Ok(n @ 1..) = from_client.read(&mut buf).await {
            pending.extend_from_slice(&buf[..n]);
            while let Ok(Some(len)) = frame::parse(&pending, MAX_NOISE_MESSAGE) {
                let mut payload = pending[frame::HEADER..frame::HEADER + len].to_vec();
                pending.drain(..frame::HEADER + len);
                edit(i, &mut payload);
                i += 1;
                let mut out = Vec::new();
                frame::encode(&payload, &mut out);
                record.lock().unwrap().to_node.extend_from_slice(&out);
                if to_node.write_all(&out).await.is_err() {
                    return;
                }
            }
        }
    });
    (addr, seen)
}

/// Locks `name` through the connection until it is granted (the node elects itself first).
async fn lock(r: &mut connection::Reader, w: &mut connection::Writer, name: &str) -> u64 {
    for _ in 0..100 {
        w.send(&ClientRequest::Lock { name: name.into() })
            .await
            .unwrap();
        match r.recv::<ClientReply>().await.unwrap() {
            Some(ClientReply::Granted { name: n, token, .. }) if n == name => return token,
            Some(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            None => panic!("the node closed the connection"),
        }
    }
    panic!("{name} never granted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sniffed_connection_shows_no_lock_name_in_clear() {
    let cluster = two_nodes().await;
    let (via, seen) = proxy(cluster.addrs[0], |_, _| {}).await;
    let name = "payroll-ledger-7f3a9c";
    let stream = TcpStream::connect(via).await.unwrap();
    let (mut r, mut w) = connection::initiate(stream, cluster.client_secret(), Role::Client)
        .await
        .unwrap();
    lock(&mut r, &mut w, name).await;
    w.send(&ClientRequest::Unlock { name: name.into() })
        .await
        .unwrap();
    assert!(matches!(
        r.recv::<ClientReply>().await.unwrap(),
        Some(ClientReply::Released { .. })
    ));
    let seen = seen.lock().unwrap();
    // The requests and the replies crossed the proxy (the grant named the lock, to the client).
    assert!(seen.to_node.len() > 100 && seen.from_node.len() > 100);
    for (dir, bytes) in [
        ("to the node", &seen.to_node),
        ("from the node", &seen.from_node),
    ] {
        for needle in [name.as_bytes(), b"payroll", b"ledger"] {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle),
                "{:?} in clear {dir}",
                String::from_utf8_lossy(needle)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_frame_closes_the_connection_with_a_logged_reason() {
    let cluster = two_nodes().await;
    // Frame 4: the second request after the handshake (0 hello, 1 Noise, 2 confirmation).
    let (via, _) = proxy(cluster.addrs[0], |i, f| {
        if i == 4 {
            let last = f.len() - 1;
            f[last] ^= 1;
        }
    })
    .await;
    let stream = TcpStream::connect(via).await.unwrap();
    let (mut r, mut w) = connection::initiate(stream, cluster.client_secret(), Role::Client)
        .await
        .unwrap();
    w.send(&ClientRequest::Ping).await.unwrap();
    assert_eq!(
        r.recv::<ClientReply>().await.unwrap(),
        Some(ClientReply::Pong)
    );
    w.send(&ClientRequest::Ping).await.unwrap();
    // The node closes: no answer to the altered request.
    match tokio::time::timeout(Duration::from_secs(10), r.recv::<ClientReply>()).await {
        Ok(Ok(None) | Err(_)) => {}
        other => panic!("the connection stays open after a tampered frame: {other:?}"),
    }
    wait_for_log(&["closing client connection", "frame failed authentication"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_key_is_refused_as_a_node_and_a_wrong_key_is_refused() {
    let cluster = two_nodes().await;
    let addr = cluster.addrs[0];
    let stream = TcpStream::connect(addr).await.unwrap();
    let e = connection::initiate(stream, cluster.client_secret(), Role::Peer(NodeId(1)))
        .await
        .err()
        .expect("a client key as a node")
        .to_string();
    assert!(e.contains("does not accept this side's key"), "{e}");
    wait_for_log(&[
        "refused connection",
        "node 1 does not know the cluster secret (the node key)",
    ])
    .await;
    let stream = TcpStream::connect(addr).await.unwrap();
    let e = connection::initiate(stream, b"not the key of this cluster", Role::Client)
        .await
        .err()
        .expect("a wrong key")
        .to_string();
    assert!(e.contains("does not accept this side's key"), "{e}");
    wait_for_log(&[
        "refused connection",
        "client does not know the cluster secret (the client key)",
    ])
    .await;
    // The right keys open their roles.
    let stream = TcpStream::connect(addr).await.unwrap();
    assert!(
        connection::initiate(stream, cluster.client_secret(), Role::Client)
            .await
            .is_ok()
    );
    let stream = TcpStream::connect(addr).await.unwrap();
    assert!(connection::initiate(stream, cluster.secret(), Role::Admin)
        .await
        .is_ok());
}
