//! `distsync time query`: ask NTP servers for the time (the thin tokio layer over
//! [`crate::client`]).
//!
//! The arrival time T4 of a reply is the kernel's receive timestamp where it gives one
//! ([`crate::rxstamp`]). Each server gets `samples` requests, one after the other (each waits for its reply or the
//! timeout, then `gap`); every reply is checked as a strict client does; the server's best
//! sample (lowest delay) stands for it; the servers with a good sample are combined by the
//! intersection algorithm. A server is rejected, with the reason, when none of its replies is
//! good, or when it sent a Kiss-o'-Death (a client must stop asking it).

use crate::auth::{self, Key, Keys, Verdict};
use crate::client::{self, Combined, Rejection, Sample};
use crate::packet::{Packet, Timestamp};
use crate::serve::{measure_precision, system_now_ns};
use serde::Serialize;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// How to query.
#[derive(Clone, Debug)]
pub struct QueryOptions {
    /// Sign requests with this key (id, key) and accept only replies signed with it.
    pub key: Option<(u32, Key)>,
    /// Requests per server.
    pub samples: u32,
    /// How long to wait for each reply.
    pub timeout: Duration,
    /// The pause between two requests to the same server.
    pub gap: Duration,
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions {
            key: None,
            samples: 4,
            timeout: Duration::from_secs(1),
            gap: Duration::from_millis(50),
        }
    }
}

/// What one server said.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerReport {
    /// The server as given.
    pub server: String,
    /// Its address.
    pub address: String,
    /// Whether its time is used.
    pub usable: bool,
    /// Its stratum (from its best sample, or from the last reply that decoded).
    pub stratum: Option<u8>,
    /// Offset of its clock from ours, in ns (best sample).
    pub offset_ns: Option<i64>,
    /// Round-trip delay, in ns (best sample).
    pub delay_ns: Option<i64>,
    /// Dispersion of the best sample, in ns.
    pub dispersion_ns: Option<u64>,
    /// Root distance of the best sample, in ns.
    pub root_distance_ns: Option<u64>,
    /// Its reference id.
    pub refid: Option<String>,
    /// Good samples out of the requests sent.
    pub good_samples: u32,
    /// Requests sent.
    pub requests: u32,
    /// Why it is not used (`null` when it is): a code and a sentence.
    pub rejected: Option<RejectedWhy>,
    /// Each bad reply's reason, in order.
    pub bad_replies: Vec<String>,
}

/// Why a server is not used.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RejectedWhy {
    /// `malformed`, `origin_mismatch`, `kiss`, `unsynchronized`, `zero_timestamp`,
    /// `unauthenticated`,
    /// `too_far`, `timeout`, `unreachable`, or `falseticker`.
    pub code: String,
    /// In words.
    pub reason: String,
}

/// The whole answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueryReport {
    /// One entry per server, in the order given.
    pub servers: Vec<ServerReport>,
    /// The combined estimate over the usable servers, if a majority of them agree.
    pub combined: Option<CombinedReport>,
    /// How many servers are usable.
    pub usable: usize,
}

/// The combined estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CombinedReport {
    /// Offset of the servers' time from ours, in ns.
    pub offset_ns: i64,
    /// Its error bound, in ns.
    pub bound_ns: u64,
    /// The servers that agree.
    pub truechimers: Vec<String>,
    /// The servers left out.
    pub falsetickers: Vec<String>,
}

/// Queries one server.
pub async fn query_one(name: &str, addr: SocketAddr, opts: QueryOptions) -> ServerReport {
    let mut report = ServerReport {
        server: name.to_string(),
        address: addr.to_string(),
        usable: false,
        stratum: None,
        offset_ns: None,
        delay_ns: None,
        dispersion_ns: None,
        root_distance_ns: None,
        refid: None,
        good_samples: 0,
        requests: 0,
        rejected: None,
        bad_replies: Vec::new(),
    };
    let bind: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal")
    } else {
        "[::]:0".parse().expect("literal")
    };
    let socket = match UdpSocket::bind(bind).await {
        Ok(s) => s,
        Err(e) => return reject(report, Rejection::Unreachable(e.to_string())),
    };
    // Connected: the kernel passes on only this server's datagrams.
    if let Err(e) = socket.connect(addr).await {
        return reject(report, Rejection::Unreachable(e.to_string()));
    }
    // T4 from the kernel where it can: not late by our wake-up.
    let kernel_stamps = crate::rxstamp::enable(&socket).is_ok();
    let precision = measure_precision();
    let keys: Keys = opts.key.iter().cloned().collect();
    let mut good: Vec<Sample> = Vec::new();
    let mut last: Option<Rejection> = None;
    let mut buf = [0u8; 1024];
    for i in 0..opts.samples {
        if i > 0 {
            tokio::time::sleep(opts.gap).await;
        }
        let t1 = Timestamp::from_unix_nanos(system_now_ns());
        report.requests += 1;
        let request = match &opts.key {
            // NTPv3 with a MAC longer than 20 bytes, as chronyd sends it: in an NTPv4 packet
            // it would read as an extension field (RFC 7822).
            Some((id, key)) => auth::seal(
                &Packet {
                    version: 3,
                    ..Packet::request(t1)
                }
                .encode(),
                *id,
                key,
            ),
            None => Packet::request(t1).encode().to_vec(),
        };
        if let Err(e) = socket.send(&request).await {
            last = Some(Rejection::Unreachable(e.to_string()));
            report
                .bad_replies
                .push(format!("{}", last.as_ref().expect("set")));
            continue;
        }
        let deadline = Instant::now() + opts.timeout;
        // Wait for the reply to this request; a reply that fails the checks is recorded, and
        // a later good one within the timeout still counts.
        // A reply refused while waiting (bogus origin, not signed with our key): what the
        // exchange ends with if no good reply follows.
        let mut refused: Option<Rejection> = None;
        let outcome = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, crate::rxstamp::recv_from(&socket, &mut buf)).await {
                Err(_) => break Err(refused.take().unwrap_or(Rejection::Timeout)),
                Ok(Err(e)) => break Err(Rejection::Unreachable(e.to_string())),
                Ok(Ok((n, _, stamp))) => {
                    let now = system_now_ns();
                    let t4 = Timestamp::from_unix_nanos(match stamp {
                        Some(k) if kernel_stamps && k <= now => k,
                        _ => now,
                    });
                    // With a key, only a reply signed with it counts (anything else is recorded
                    // and the wait goes on, as for a bogus origin).
                    let reply = match &opts.key {
                        None => Ok(&buf[..n]),
                        Some((id, _)) => match auth::open(&buf[..n], &keys) {
                            Verdict::Authentic(header, rid) if rid == *id => Ok(header),
                            Verdict::CryptoNak => Err(Rejection::Unauthenticated(
                                "crypto-NAK: the server does not accept our key".into(),
                            )),
                            Verdict::Plain(_) => Err(Rejection::Unauthenticated(
                                "the reply carries no MAC".into(),
                            )),
                            _ => Err(Rejection::Unauthenticated(
                                "the reply's MAC does not check under our key".into(),
                            )),
                        },
                    };
                    let checked = reply.and_then(|r| {
                        if let Ok(p) = Packet::decode(r) {
                            report.stratum = Some(p.stratum);
                        }
                        client::evaluate(r, t1, t4, precision)
                    });
                    match checked {
                        Err(e @ (Rejection::OriginMismatch | Rejection::Unauthenticated(_))) => {
                            refused = Some(e);
                            continue;
                        }
                        r => break r,
                    }
                }
            }
        };
        match outcome {
            Ok(s) => good.push(s),
            Err(e) => {
                report.bad_replies.push(e.to_string());
                let kiss = matches!(e, Rejection::Kiss(_));
                last = Some(e);
                if kiss {
                    // RFC 5905 section 7.4: stop sending to a server that kissed us.
                    good.clear();
                    break;
                }
            }
        }
    }
    report.good_samples = good.len() as u32;
    match client::best(&good) {
        Some(s) => {
            report.usable = true;
            report.stratum = Some(s.stratum);
            report.offset_ns = Some(s.offset_ns);
            report.delay_ns = Some(s.delay_ns);
            report.dispersion_ns = Some(s.dispersion_ns);
            report.root_distance_ns = Some(s.root_distance_ns());
            report.refid = Some(s.refid.clone());
            report
        }
        None => reject(report, last.unwrap_or(Rejection::Timeout)),
    }
}

fn reject(mut report: ServerReport, why: Rejection) -> ServerReport {
    report.usable = false;
    report.rejected = Some(RejectedWhy {
        code: why.code().to_string(),
        reason: why.to_string(),
    });
    report
}

/// Queries every server at once and combines the usable ones.
pub async fn query(servers: &[(String, SocketAddr)], opts: QueryOptions) -> QueryReport {
    let tasks: Vec<_> = servers
        .iter()
        .map(|(name, addr)| {
            let (name, addr, opts) = (name.clone(), *addr, opts.clone());
            tokio::spawn(async move { query_one(&name, addr, opts).await })
        })
        .collect();
    let mut reports = Vec::new();
    for t in tasks {
        reports.push(t.await.expect("a query task panicked"));
    }
    combine(reports)
}

/// Selection over the servers' best samples; falsetickers are marked rejected.
pub fn combine(mut servers: Vec<ServerReport>) -> QueryReport {
    let usable: Vec<(usize, Sample)> = servers
        .iter()
        .enumerate()
        .filter(|(_, s)| s.usable)
        .map(|(i, s)| {
            (
                i,
                Sample {
                    offset_ns: s.offset_ns.expect("usable"),
                    delay_ns: s.delay_ns.expect("usable"),
                    dispersion_ns: 0,
                    stratum: s.stratum.unwrap_or(16),
                    refid: String::new(),
                    root_delay_ns: 0,
                    // The whole root distance rides here, so Sample::root_distance_ns is it.
                    root_dispersion_ns: s
                        .root_distance_ns
                        .expect("usable")
                        .saturating_sub(s.delay_ns.expect("usable").max(0) as u64 / 2),
                },
            )
        })
        .collect();
    let refs: Vec<(usize, &Sample)> = usable.iter().map(|(i, s)| (*i, s)).collect();
    let combined = match client::select(&refs) {
        Ok(Combined {
            offset_ns,
            bound_ns,
            truechimers,
            falsetickers,
        }) => {
            for &i in &falsetickers {
                servers[i].usable = false;
                servers[i].rejected = Some(RejectedWhy {
                    code: "falseticker".into(),
                    reason: "its interval does not meet the majority's (falseticker)".into(),
                });
            }
            Some(CombinedReport {
                offset_ns,
                bound_ns,
                truechimers: truechimers
                    .iter()
                    .map(|&i| servers[i].server.clone())
                    .collect(),
                falsetickers: falsetickers
                    .iter()
                    .map(|&i| servers[i].server.clone())
                    .collect(),
            })
        }
        Err(_) => None,
    };
    let usable = servers.iter().filter(|s| s.usable).count();
    QueryReport {
        servers,
        combined,
        usable,
    }
}
