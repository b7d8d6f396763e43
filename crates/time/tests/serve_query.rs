//! The NTP server and client over loopback UDP, in one process: the client reads the server's
//! clock within the on-wire error bound, rejects it when it says it is unsynchronized, gets a
//! RATE kiss when it floods it; malformed datagrams get no reply and leave the server serving;
//! a server with an upstream follows the upstream's (skewed) clock at one stratum more.

use distsync_time::packet::{Packet, Timestamp};
use distsync_time::query::{query, QueryOptions, QueryReport};
use distsync_time::serve::{serve, system_now_ns, ServeOptions};
use distsync_time::server::RateLimit;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::oneshot;

/// Starts a server; returns its address and the sender that stops it.
async fn start(opts: ServeOptions) -> (SocketAddr, oneshot::Sender<()>) {
    let (addr_tx, addr_rx) = oneshot::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        serve(
            opts,
            |a| {
                let _ = addr_tx.send(a);
            },
            async {
                let _ = stop_rx.await;
            },
        )
        .await
        .expect("the server runs");
    });
    (addr_rx.await.expect("the server listens"), stop_tx)
}

fn local() -> ServeOptions {
    ServeOptions::local("127.0.0.1:0".parse().unwrap())
}

async fn ask(addr: SocketAddr, samples: u32) -> QueryReport {
    let opts = QueryOptions {
        samples,
        timeout: Duration::from_secs(2),
        gap: Duration::from_millis(10),
        key: None,
    };
    query(&[(addr.to_string(), addr)], opts).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_reads_the_system_clock_within_the_error_bound() {
    let (addr, _stop) = start(ServeOptions {
        stratum: 3,
        refid: *b"TEST",
        ..local()
    })
    .await;
    let r = ask(addr, 4).await;
    let s = &r.servers[0];
    assert!(s.usable, "{s:?}");
    assert_eq!(s.stratum, Some(3));
    assert_eq!(s.refid.as_deref(), Some("TEST"));
    assert_eq!(s.good_samples, 4);
    // Both ends read the same clock: the true offset is 0, and NTP's bound on the error of a
    // sample is half its round trip.
    let (offset, delay) = (s.offset_ns.unwrap(), s.delay_ns.unwrap());
    // (+3ns: each timestamp is truncated to the nanosecond.)
    assert!(offset.abs() <= delay / 2 + 3, "{offset} vs delay {delay}");
    assert_eq!(r.usable, 1);
    assert_eq!(r.combined.as_ref().unwrap().offset_ns, offset);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_server_is_read_at_its_skew() {
    let skew = 250_000_000;
    let (addr, _stop) = start(ServeOptions {
        skew_ns: skew,
        ..local()
    })
    .await;
    let s = &ask(addr, 2).await.servers[0];
    let (offset, delay) = (s.offset_ns.unwrap(), s.delay_ns.unwrap());
    assert!((offset - skew).abs() <= delay / 2 + 3, "{offset} vs {skew}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsynchronized_server_is_rejected_with_the_reason() {
    let (addr, _stop) = start(ServeOptions {
        unsynchronized: true,
        ..local()
    })
    .await;
    let r = ask(addr, 2).await;
    let s = &r.servers[0];
    assert!(!s.usable);
    assert_eq!(s.stratum, Some(0));
    let why = s.rejected.as_ref().unwrap();
    assert_eq!(why.code, "unsynchronized");
    assert!(why.reason.contains("leap indicator 3"), "{}", why.reason);
    assert_eq!(r.usable, 0);
    assert!(r.combined.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_asking_too_fast_gets_a_rate_kiss() {
    let (addr, _stop) = start(ServeOptions {
        rate: RateLimit {
            burst: 3,
            interval_ns: 3_600_000_000_000,
            leak: 0,
        },
        ..local()
    })
    .await;
    let r = ask(addr, 6).await;
    let s = &r.servers[0];
    // Three answered, the fourth kissed: the client stops there and drops the server.
    assert_eq!(s.requests, 4, "{s:?}");
    assert!(!s.usable);
    let why = s.rejected.as_ref().unwrap();
    assert_eq!(why.code, "kiss");
    assert!(why.reason.contains("RATE"), "{}", why.reason);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_datagrams_get_no_reply_and_do_not_disturb_the_server() {
    let (addr, _stop) = start(local()).await;
    let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    sock.connect(addr).await.unwrap();
    let good = Packet::request(Timestamp::from_unix_nanos(system_now_ns())).encode();
    let mut server_mode = good;
    server_mode[0] = (server_mode[0] & !7) | 4;
    let mut version_2 = good;
    version_2[0] = (version_2[0] & !0b0011_1000) | (2 << 3);
    let mut control = good;
    control[0] = (control[0] & !7) | 6;
    let mut long = good.to_vec();
    long.extend_from_slice(&[0u8; 24]);
    let zero_transmit = Packet::request(Timestamp::ZERO).encode();
    let bad: Vec<Vec<u8>> = vec![
        vec![],
        good[..47].to_vec(),
        long,
        server_mode.to_vec(),
        version_2.to_vec(),
        control.to_vec(),
        zero_transmit.to_vec(),
        vec![0xff; 48],
        vec![0x1b; 1000],
    ];
    for b in &bad {
        sock.send(b).await.unwrap();
    }
    // Then a good request: the first (and only) datagram back answers it.
    sock.send(&good).await.unwrap();
    let mut buf = [0u8; 1500];
    let n = tokio::time::timeout(Duration::from_secs(5), sock.recv(&mut buf))
        .await
        .expect("the server still answers")
        .unwrap();
    let reply = Packet::decode_reply(&buf[..n]).unwrap();
    assert_eq!(reply.origin_ts, Packet::decode(&good).unwrap().transmit_ts);
    // And nothing else arrives: the bad datagrams got no reply. (Bounded wait; a reply to
    // any of them would have been sent before the good one's.)
    assert!(
        tokio::time::timeout(Duration::from_millis(200), sock.recv(&mut buf))
            .await
            .is_err(),
        "a malformed datagram was answered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_an_upstream_follows_it_one_stratum_down() {
    let skew = -180_000_000;
    let (upstream, _stop_a) = start(ServeOptions {
        stratum: 2,
        skew_ns: skew,
        ..local()
    })
    .await;
    let (addr, _stop_b) = start(ServeOptions {
        upstream: vec![upstream],
        poll: Duration::from_millis(100),
        ..local()
    })
    .await;
    // Unsynchronized until its first good sample from the upstream, then stratum 3.
    let mut last = None;
    for _ in 0..100 {
        let r = ask(addr, 1).await;
        if r.usable == 1 {
            last = Some(r);
            break;
        }
        assert_eq!(
            r.servers[0].rejected.as_ref().unwrap().code,
            "unsynchronized"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = last.expect("the server synchronizes to its upstream");
    let s = &r.servers[0];
    assert_eq!(s.stratum, Some(3));
    assert_eq!(s.refid.as_deref(), Some("127.0.0.1"));
    // The virtual clock was stepped to the upstream's: it now reads the skew, within the root
    // distance (our half round trip and dispersion, plus the error bound it advertises).
    let offset = s.offset_ns.unwrap();
    let bound = s.root_distance_ns.unwrap() as i64;
    assert!(
        (offset - skew).abs() <= bound,
        "offset {offset}, expected {skew} within {bound}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_falseticker_upstream_is_outvoted() {
    // Two upstreams agree (+40ms), one is 700ms off: the intersection keeps the two.
    let agree = 40_000_000;
    let mut stops = Vec::new();
    let mut upstreams = Vec::new();
    for skew in [agree, agree, 700_000_000] {
        let (addr, stop) = start(ServeOptions {
            stratum: 1,
            skew_ns: skew,
            ..local()
        })
        .await;
        upstreams.push(addr);
        stops.push(stop);
    }
    let (addr, _stop) = start(ServeOptions {
        upstream: upstreams,
        poll: Duration::from_millis(100),
        ..local()
    })
    .await;
    let mut last = None;
    for _ in 0..100 {
        let r = ask(addr, 1).await;
        if r.usable == 1 {
            last = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = last.expect("the server synchronizes to its upstreams");
    let s = &r.servers[0];
    assert_eq!(s.stratum, Some(2));
    let offset = s.offset_ns.unwrap();
    let bound = s.root_distance_ns.unwrap() as i64;
    assert!(
        (offset - agree).abs() <= bound,
        "offset {offset}, expected {agree} within {bound}: the falseticker pulled it"
    );
}

fn keys(text: &str) -> distsync_time::auth::Keys {
    distsync_time::auth::parse_keys(text).unwrap()
}

async fn ask_with_key(addr: SocketAddr, key_file: &str, id: u32) -> QueryReport {
    let key = keys(key_file).remove(&id).unwrap();
    let opts = QueryOptions {
        samples: 2,
        timeout: Duration::from_millis(500),
        gap: Duration::from_millis(10),
        key: Some((id, key)),
    };
    query(&[(addr.to_string(), addr)], opts).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_requests_get_signed_replies_and_a_wrong_key_gets_nothing() {
    let server_keys = "1 SHA256 HEX:00112233445566778899aabbccddeeff\n2 SHA512 ASCII:tulip\n";
    let (addr, _stop) = start(ServeOptions {
        keys: keys(server_keys),
        ..local()
    })
    .await;
    for id in [1, 2] {
        let r = ask_with_key(addr, server_keys, id).await;
        assert!(r.servers[0].usable, "key {id}: {:?}", r.servers[0]);
    }
    // Unsigned requests are still answered.
    assert!(ask(addr, 1).await.servers[0].usable);
    // The same id with another secret, or an id the server does not have: no reply.
    for (file, id) in [
        ("1 SHA256 HEX:ff112233\n", 1),
        ("9 SHA256 ASCII:tulip\n", 9),
    ] {
        let s = &ask_with_key(addr, file, id).await.servers[0];
        assert!(!s.usable);
        assert_eq!(s.rejected.as_ref().unwrap().code, "timeout", "{s:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_a_key_refuses_an_unsigned_reply() {
    // This server has no keys: it refuses the signed request (its MAC cannot check), and a
    // forger answering unsigned would be refused by the client; both end in no usable reply.
    let (addr, _stop) = start(local()).await;
    let s = &ask_with_key(addr, "1 SHA256 ASCII:tulip\n", 1)
        .await
        .servers[0];
    assert!(!s.usable);
    // An unsigned reply to a signed request: sent here by hand from a fake server.
    let fake = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let fake_addr = fake.local_addr().unwrap();
    let answer = tokio::spawn(async move {
        let mut buf = [0u8; 256];
        let (n, from) = fake.recv_from(&mut buf).await.unwrap();
        assert_eq!(n, 48 + 4 + 32, "a signed request");
        let req = Packet::decode(&buf[..48]).unwrap();
        assert_eq!(req.version, 3, "signed requests go out as NTPv3");
        let now = Timestamp::from_unix_nanos(system_now_ns());
        let reply = Packet {
            mode: distsync_time::packet::Mode::Server,
            stratum: 2,
            reference_id: *b"FAKE",
            reference_ts: now,
            origin_ts: req.transmit_ts,
            receive_ts: now,
            transmit_ts: now,
            ..req
        };
        fake.send_to(&reply.encode(), from).await.unwrap();
    });
    let key = keys("1 SHA256 ASCII:tulip\n").remove(&1).unwrap();
    let opts = QueryOptions {
        samples: 1,
        timeout: Duration::from_millis(500),
        gap: Duration::from_millis(10),
        key: Some((1, key)),
    };
    let r = query(&[(fake_addr.to_string(), fake_addr)], opts).await;
    answer.await.unwrap();
    let why = r.servers[0].rejected.as_ref().unwrap();
    assert_eq!(why.code, "unauthenticated", "{why:?}");
    assert!(why.reason.contains("no MAC"), "{why:?}");
}
