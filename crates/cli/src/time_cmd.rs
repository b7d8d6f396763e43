//! `distsync time serve|query|status`: an NTP server and client over UDP, and the clocks of a
//! cluster's nodes. docs/time.md describes them.

use crate::{InputError, Outcome};
use distsync_core::{parse_duration, parse_signed_duration};
use distsync_time::packet::parse_refid;
use distsync_time::query::{QueryOptions, QueryReport};
use distsync_time::serve::{ServeOptions, DEFAULT_LOCAL_STRATUM};
use distsync_time::server::RateLimit;
use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
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
    /// Serve the clock shifted by this signed offset (an artificial error, e.g. -250ms).
    #[arg(long, value_name = "DURATION", default_value = "0s", allow_hyphen_values = true,
          value_parser = parse_signed_arg)]
    skew: i64,
    /// Requests a client may send at once before it is rate-limited.
    #[arg(long, value_name = "N", default_value_t = RateLimit::default().burst)]
    rate_burst: u32,
    /// One more request allowed per this long; beyond, a Kiss-o'-Death RATE.
    #[arg(long, value_name = "DURATION", default_value = "250ms", value_parser = parse_duration_arg)]
    rate_interval: Duration,
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
            eprintln!(
                "stopped: {} answered, {} rate kisses, {} dropped",
                stats.answered, stats.kissed, stats.dropped
            );
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
    let opts = QueryOptions {
        samples: a.samples,
        timeout: a.timeout,
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
