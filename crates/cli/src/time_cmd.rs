//! `distsync time serve|query|status`: an NTP server and client over UDP, and the clocks of a
//! cluster's nodes. docs/time.md describes them.

use crate::{InputError, Outcome};
use distsync_core::{parse_duration, parse_signed_duration, NodeId};
use distsync_time::packet::parse_refid;
use distsync_time::query::{QueryOptions, QueryReport};
use distsync_time::serve::{ServeOptions, DEFAULT_LOCAL_STRATUM};
use distsync_time::server::RateLimit;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `distsync time`.
#[derive(clap::Args)]
pub struct TimeArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Answer NTP (RFC 5905) and SNTP (RFC 4330) clients over UDP until SIGTERM/ctrl-c,
    /// serving the system clock, or with --upstream a virtual clock disciplined from upstream
    /// NTP servers by the simulator's NTP algorithm. Never touches the system clock.
    Serve(ServeArgs),
    /// Ask NTP servers for the time: offset, delay and dispersion per server, why a server is
    /// rejected, and the combined estimate.
    #[command(
        after_help = "Exit status: 0 when at least one server is usable, 1 when none \
is, 2 for bad input."
    )]
    Query(QueryArgs),
    /// The virtual clocks of a cluster started with `cluster up --clock ALGO`: each node's
    /// offset from this machine's system clock and from the other nodes, its last adjustment,
    /// the algorithm's error bound, and the largest skew between two nodes.
    #[command(
        after_help = "Exit status: 0 when every node answered, 1 when some did not, \
2 for bad input."
    )]
    Status(StatusArgs),
}

#[derive(clap::Args)]
struct StatusArgs {
    /// The cluster file (TOML), with a [clock] table.
    #[arg(long, value_name = "CLUSTER.toml")]
    cluster: PathBuf,
    /// One JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// How long to wait for each round of answers.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration_arg)]
    timeout: Duration,
    /// Questions per node; the answer with the smallest round trip is kept.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    samples: u32,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Where to listen (UDP), like 127.0.0.1:12300 (port 123 needs root).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: SocketAddr,
    /// The stratum served with the system clock (chrony's `local stratum` default).
    #[arg(long, value_name = "S", default_value_t = DEFAULT_LOCAL_STRATUM, conflicts_with = "upstream",
          value_parser = clap::value_parser!(u8).range(1..=15))]
    stratum: u8,
    /// The reference id served with the system clock: up to 4 ASCII characters or an IPv4
    /// address.
    #[arg(
        long,
        value_name = "ID",
        default_value = "LOCL",
        conflicts_with = "upstream"
    )]
    refid: String,
    /// Upstream NTP servers (ADDR[:PORT], port 123 by default): serve a virtual clock
    /// synchronized to them (stratum one more than theirs).
    #[arg(long, value_name = "ADDR", num_args = 1..)]
    upstream: Vec<String>,
    /// How often to poll the upstream servers.
    #[arg(long, value_name = "DURATION", default_value = "8s", value_parser = parse_duration_arg)]
    poll: Duration,
    /// Declare the clock unsynchronized: every reply says leap 3, stratum 0, and strict
    /// clients reject it.
    #[arg(long)]
    unsynchronized: bool,
    /// Serve the system clock shifted by this signed offset (an artificial error, e.g.
    /// -250ms). Not with --upstream, whose discipline would take it out again.
    #[arg(long, value_name = "DURATION", default_value = "0s", allow_hyphen_values = true,
          value_parser = parse_signed_arg, conflicts_with = "upstream")]
    skew: i64,
    /// Requests a client may send at once before it is rate-limited.
    #[arg(long, value_name = "N", default_value_t = RateLimit::default().burst)]
    rate_burst: u32,
    /// One more request allowed per this long; beyond, a Kiss-o'-Death RATE.
    #[arg(long, value_name = "DURATION", default_value = "250ms", value_parser = parse_duration_arg)]
    rate_interval: Duration,
    /// As chrony's `ratelimit ... leak L`: one in 2^L requests past the limit is answered
    /// anyway, so a flood spoofing a client's address cannot starve it (0: none; at most 32).
    #[arg(long, value_name = "L", default_value_t = RateLimit::default().leak,
          value_parser = clap::value_parser!(u32).range(0..=32))]
    rate_leak: u32,
    /// A chrony key file (`ID SHA256|SHA512 HEX:...`): requests signed with one of its keys
    /// are answered signed with it (RFC 5905 symmetric keys).
    #[arg(long, value_name = "FILE")]
    keys: Option<PathBuf>,
}

#[derive(clap::Args)]
struct QueryArgs {
    /// Servers, ADDR[:PORT] (port 123 by default); names are resolved.
    #[arg(value_name = "ADDR[:PORT]", required = true)]
    servers: Vec<String>,
    /// Requests per server (the best, lowest-delay, is kept).
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    samples: u32,
    /// How long to wait for each reply.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration_arg)]
    timeout: Duration,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// A chrony key file, for --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    keys: Option<PathBuf>,
    /// Sign the requests with this key of --keys and accept only replies signed with it.
    #[arg(long, value_name = "ID", requires = "keys")]
    key: Option<u32>,
}

/// Reads a chrony key file, naming it and the line in errors.
fn read_keys(path: &std::path::Path, flag: &str) -> Result<distsync_time::auth::Keys, InputError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| InputError(format!("{flag} {}: {e}", path.display())))?;
    distsync_time::auth::parse_keys(&text)
        .map_err(|e| InputError(format!("{flag} {}: {e}", path.display())))
}

fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

fn parse_signed_arg(s: &str) -> Result<i64, String> {
    parse_signed_duration(s).map_err(|e| e.to_string())
}

/// Runs one `time` action.
pub fn time(args: TimeArgs) -> Result<Outcome, InputError> {
    match args.action {
        Action::Serve(a) => serve(a),
        Action::Query(a) => query(a),
        Action::Status(a) => status(a),
    }
}

/// `ADDR[:PORT]` with port 123 by default, resolved to its first address.
pub fn resolve(text: &str, what: &str) -> Result<SocketAddr, InputError> {
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Ok(a);
    }
    if let Ok(ip) = text.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, 123));
    }
    let with_port = if text.contains(':') {
        text.to_string()
    } else {
        format!("{text}:123")
    };
    with_port
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            InputError(format!(
                "{what} {text:?}: expected ADDR[:PORT] (like 127.0.0.1:12300 or pool.example:123), and it does not resolve"
            ))
        })
}

fn serve(a: ServeArgs) -> Result<Outcome, InputError> {
    let refid = parse_refid(&a.refid).map_err(|e| InputError(format!("--refid {e}")))?;
    let upstream = a
        .upstream
        .iter()
        .map(|u| resolve(u, "--upstream"))
        .collect::<Result<Vec<_>, _>>()?;
    if a.rate_burst == 0 {
        return Err(InputError("--rate-burst: at least 1".into()));
    }
    if a.rate_interval.is_zero() || a.poll.is_zero() {
        return Err(InputError(
            "--rate-interval and --poll must be longer than zero".into(),
        ));
    }
    let opts = ServeOptions {
        listen: a.listen,
        stratum: a.stratum,
        refid,
        upstream,
        poll: a.poll,
        unsynchronized: a.unsynchronized,
        skew_ns: a.skew,
        rate: RateLimit {
            burst: a.rate_burst,
            interval_ns: a.rate_interval.as_nanos() as u64,
            leak: a.rate_leak,
        },
        keys: match &a.keys {
            Some(path) => read_keys(path, "--keys")?,
            None => Default::default(),
        },
    };
    distsync_net::init_logging();
    let rt = distsync_net::runtime()?;
    let result = rt.block_on(distsync_time::serve::serve(
        opts,
        |addr| {
            println!("serving NTP on {addr}");
            let _ = std::io::stdout().flush();
        },
        distsync_net::shutdown::signalled(),
    ));
    match result {
        Ok(stats) => {
            crate::output::note(format!(
                "stopped: {} answered, {} rate kisses, {} dropped",
                stats.answered, stats.kissed, stats.dropped
            ));
            Ok(Outcome::Ok)
        }
        Err(e) => Err(InputError(format!("--listen {}: {e}", a.listen))),
    }
}

fn ms(ns: i64) -> String {
    format!("{:+.3}ms", ns as f64 / 1e6)
}

fn query(a: QueryArgs) -> Result<Outcome, InputError> {
    let servers = a
        .servers
        .iter()
        .map(|s| Ok((s.clone(), resolve(s, "server")?)))
        .collect::<Result<Vec<_>, InputError>>()?;
    let key = match (&a.keys, a.key) {
        (Some(path), Some(id)) => {
            let mut keys = read_keys(path, "--keys")?;
            let key = keys.remove(&id).ok_or_else(|| {
                InputError(format!("--key {id}: no such key in {}", path.display()))
            })?;
            Some((id, key))
        }
        _ => None,
    };
    let opts = QueryOptions {
        samples: a.samples,
        timeout: a.timeout,
        key,
        ..QueryOptions::default()
    };
    let rt = distsync_net::runtime()?;
    let report: QueryReport = rt.block_on(distsync_time::query::query(&servers, opts));
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        for s in &report.servers {
            match (&s.rejected, s.offset_ns) {
                (None, Some(offset)) => println!(
                    "{}: stratum {}, offset {}, delay {:.3}ms, dispersion {:.3}ms, root distance {:.3}ms, refid {} ({}/{} good replies)",
                    s.server,
                    s.stratum.unwrap_or(0),
                    ms(offset),
                    s.delay_ns.unwrap_or(0) as f64 / 1e6,
                    s.dispersion_ns.unwrap_or(0) as f64 / 1e6,
                    s.root_distance_ns.unwrap_or(0) as f64 / 1e6,
                    s.refid.as_deref().unwrap_or("-"),
                    s.good_samples,
                    s.requests
                ),
                (Some(why), _) => println!("{}: rejected: {}", s.server, why.reason),
                (None, None) => println!("{}: no sample", s.server),
            }
        }
        match &report.combined {
            Some(c) => println!(
                "combined: offset {} ± {:.3}ms from {} server(s){}",
                ms(c.offset_ns),
                c.bound_ns as f64 / 1e6,
                c.truechimers.len(),
                if c.falsetickers.is_empty() {
                    String::new()
                } else {
                    format!(", falsetickers: {}", c.falsetickers.join(", "))
                }
            ),
            None if report.usable == 0 => println!("no usable server"),
            None => println!("combined: no majority of the usable servers agrees"),
        }
    }
    Ok(if report.usable > 0 {
        Outcome::Ok
    } else {
        Outcome::Code(1)
    })
}

#[derive(serde::Serialize)]
struct NodeRow {
    id: NodeId,
    reachable: bool,
    /// This node's virtual clock minus the asking machine's system clock.
    offset_ns: Option<i64>,
    delay_ns: Option<i64>,
    /// This node's clock minus each other reachable node's.
    from_others_ns: BTreeMap<String, i64>,
    master: Option<NodeId>,
    stratum: Option<u8>,
    adjustments: Option<u64>,
    last_adjust_ns: Option<i64>,
    last_adjust_age_ns: Option<u64>,
    bound_ns: Option<u64>,
    reference: Option<NodeId>,
    rounds: Option<u64>,
    initial_offset_ns: Option<i64>,
    drift_ppm: Option<f64>,
    error: Option<String>,
}

#[derive(serde::Serialize)]
struct StatusReport {
    algorithm: Option<String>,
    reference: &'static str,
    answered: usize,
    max_skew_ns: i64,
    nodes: Vec<NodeRow>,
}

fn status(a: StatusArgs) -> Result<Outcome, InputError> {
    let cluster = distsync_net::Cluster::load(&a.cluster)?;
    // The clocks answer only questions signed with the node key: a client file's key would be
    // ignored until the timeout.
    cluster.node_key("`time status`")?;
    let Some(settings) = &cluster.file.clock else {
        return Err(InputError(format!(
            "{}: no [clock] table (start the cluster with `cluster up --clock berkeley|cristian|ntp`)",
            cluster.origin
        )));
    };
    let rt = distsync_net::runtime()?;
    let answers = rt.block_on(distsync_time::cluster::status(
        &cluster, a.timeout, a.samples,
    ))?;
    let offsets: Vec<(NodeId, i64)> = answers
        .iter()
        .filter_map(|(id, r)| r.as_ref().ok().map(|o| (*id, o.offset_ns)))
        .collect();
    let max_skew_ns =
        distsync_time::cluster::max_skew(&offsets.iter().map(|o| o.1).collect::<Vec<_>>());
    let nodes: Vec<NodeRow> = answers
        .into_iter()
        .map(|(id, r)| match r {
            Ok(o) => NodeRow {
                id,
                reachable: true,
                offset_ns: Some(o.offset_ns),
                delay_ns: Some(o.delay_ns),
                from_others_ns: offsets
                    .iter()
                    .filter(|(other, _)| *other != id)
                    .map(|(other, off)| (other.to_string(), o.offset_ns - off))
                    .collect(),
                master: o.clock.master,
                stratum: o.clock.stratum,
                adjustments: Some(o.clock.adjustments),
                last_adjust_ns: o.clock.last_adjust_ns,
                last_adjust_age_ns: o.clock.last_adjust_age_ns,
                bound_ns: o.clock.bound_ns,
                reference: o.clock.reference,
                rounds: Some(o.clock.rounds),
                initial_offset_ns: Some(o.clock.initial_offset_ns),
                drift_ppm: Some(o.clock.drift_ppm),
                error: None,
            },
            Err(e) => NodeRow {
                id,
                reachable: false,
                offset_ns: None,
                delay_ns: None,
                from_others_ns: BTreeMap::new(),
                master: None,
                stratum: None,
                adjustments: None,
                last_adjust_ns: None,
                last_adjust_age_ns: None,
                bound_ns: None,
                reference: None,
                rounds: None,
                initial_offset_ns: None,
                drift_ppm: None,
                error: Some(e),
            },
        })
        .collect();
    let report = StatusReport {
        algorithm: Some(settings.algorithm.clone()),
        reference: "the system clock of the machine asking",
        answered: offsets.len(),
        max_skew_ns,
        nodes,
    };
    if a.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "clock {}: offsets from this machine's system clock (started up to {} off, drift up to {} ppm)",
            settings.algorithm,
            distsync_core::format_duration(settings.skew),
            settings.drift_ppm
        );
        // Berkeley follows a master, Cristian a reference (its server), NTP a stratum.
        let (head, follows): (&str, fn(&NodeRow) -> String) = match settings.algorithm.as_str() {
            "ntp" => ("stratum", |n| {
                n.stratum.map_or("-".into(), |s| s.to_string())
            }),
            "cristian" => ("server", |n| {
                n.reference.map_or("-".into(), |r| r.to_string())
            }),
            _ => ("master", |n| n.master.map_or("-".into(), |m| m.to_string())),
        };
        println!(
            "node  offset       to others    delay     {head:<7} adjustments  last adjust  age      bound"
        );
        let opt_ms = |v: Option<i64>| v.map_or("-".to_string(), ms);
        for n in &report.nodes {
            match &n.error {
                Some(e) => println!("{:<5} {e}", n.id.to_string()),
                None => println!(
                    "{:<5} {:<12} {:<12} {:<9} {:<7} {:<12} {:<12} {:<8} {}",
                    n.id.to_string(),
                    opt_ms(n.offset_ns),
                    // The farthest other node, as this node's clock minus it.
                    n.from_others_ns
                        .values()
                        .max_by_key(|d| d.unsigned_abs())
                        .map_or("-".into(), |d| ms(*d)),
                    format!("{:.3}ms", n.delay_ns.unwrap_or(0) as f64 / 1e6),
                    follows(n),
                    n.adjustments.unwrap_or(0),
                    opt_ms(n.last_adjust_ns),
                    n.last_adjust_age_ns
                        .map_or("-".into(), |a| format!("{:.1}s", a as f64 / 1e9)),
                    n.bound_ns
                        .map_or("-".into(), |b| format!("{:.3}ms", b as f64 / 1e6)),
                ),
            }
        }
        println!(
            "max skew: {:.3}ms across {} node(s)",
            max_skew_ns as f64 / 1e6,
            report.answered
        );
    }
    Ok(if report.answered == report.nodes.len() {
        Outcome::Ok
    } else {
        Outcome::Code(1)
    })
}
