//! Lock acquire-and-release latency and throughput on loopback, for scripts/bench-locks.sh.
//!
//! `lockbench distsync CLUSTER.toml CLIENTS SECONDS` runs CLIENTS clients of the persistent
//! lock client (`distsync_net::lock_client`), spread over the nodes round-robin (with central,
//! unless the environment says `PLACEMENT=spread`, each connects where `LockClient::connect`
//! puts it: the coordinator's node), each taking lock "bench" and dropping its guard in a loop
//! for SECONDS (the dropped guard's `Release` goes out with the next `Lock`, in one write).
//! `distsync-release` instead waits for the node to confirm each release (`Guard::release`), a
//! second round trip per entry as Redis's `DEL` is.
//!
//! `lockbench entries CLUSTER.toml PROCESSES ENTRIES` is DistAlgo's mutual-exclusion workload:
//! PROCESSES clients, client i on node i, each entering the critical section ENTRIES times; it
//! prints the wall time.
//!
//! `lockbench redis HOST:PORT CLIENTS SECONDS` does the same against a Redis lock: acquire with
//! `SET bench TOKEN NX PX 10000`, retried after 1ms (the timer granularity of tokio) while another client holds it; release with
//! the compare-and-delete script (`if GET == TOKEN then DEL`).
//!
//! Prints one JSON line: ops, seconds, throughput_per_s, p50_us, p99_us, max_us.

use distsync_net::lock_client::LockClient;
use distsync_net::Cluster;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!("usage: lockbench distsync|distsync-release CLUSTER.toml CLIENTS SECONDS | lockbench redis HOST:PORT CLIENTS SECONDS | lockbench entries CLUSTER.toml PROCESSES ENTRIES");
        std::process::exit(2);
    }
    if args[1] == "entries" {
        let procs: usize = args[3].parse().expect("PROCESSES is a number");
        let n: usize = args[4].parse().expect("ENTRIES is a number");
        let rt = distsync_net::runtime().unwrap();
        let wall = rt.block_on(entries(&args[2], procs, n));
        println!(
            "{{\"processes\":{procs},\"entries\":{n},\"wall_s\":{:.3}}}",
            wall.as_secs_f64()
        );
        return;
    }
    let clients: usize = args[3].parse().expect("CLIENTS is a number");
    let secs: f64 = args[4].parse().expect("SECONDS is a number");
    let rt = distsync_net::runtime().unwrap();
    let (lat, elapsed) = rt.block_on(async {
        let until = Instant::now() + Duration::from_secs_f64(secs);
        let start = Instant::now();
        let mut tasks = Vec::new();
        for i in 0..clients {
            let mode = args[1].clone();
            let target = args[2].clone();
            tasks.push(tokio::spawn(async move {
                match mode.as_str() {
                    "distsync" => distsync_loop(&target, i, until, false).await,
                    "distsync-release" => distsync_loop(&target, i, until, true).await,
                    "redis" => redis_loop(&target, i, until).await,
                    m => panic!("unknown mode {m}"),
                }
            }));
        }
        let mut lat = Vec::new();
        for t in tasks {
            lat.extend(t.await.unwrap());
        }
        (lat, start.elapsed())
    });
    let mut lat = lat;
    lat.sort();
    let q = |p: f64| -> f64 {
        if lat.is_empty() {
            return f64::NAN;
        }
        let i = ((lat.len() as f64 - 1.0) * p).round() as usize;
        lat[i].as_secs_f64() * 1e6
    };
    println!(
        "{{\"ops\":{},\"seconds\":{:.3},\"throughput_per_s\":{:.1},\"p50_us\":{:.0},\"p99_us\":{:.0},\"max_us\":{:.0}}}",
        lat.len(),
        elapsed.as_secs_f64(),
        lat.len() as f64 / elapsed.as_secs_f64(),
        q(0.5),
        q(0.99),
        q(1.0)
    );
}

async fn distsync_loop(cluster: &str, i: usize, until: Instant, explicit: bool) -> Vec<Duration> {
    let cluster = Cluster::load(Path::new(cluster)).unwrap();
    let ids = cluster.peers.ids().to_vec();
    // PLACEMENT=spread: client i on node i mod N, whatever the algorithm. Otherwise (auto)
    // where the library puts a client: central's clients on the coordinator's node
    // (`LockClient::connect`), the other algorithms' spread as above.
    let spread = std::env::var("PLACEMENT").is_ok_and(|p| p == "spread");
    let mut locks = if spread || cluster.file.mutex != "central" {
        LockClient::connect_to(&cluster, ids[i % ids.len()])
            .await
            .unwrap()
    } else {
        LockClient::connect(&cluster).await.unwrap()
    };
    let mut lat = Vec::new();
    while Instant::now() < until {
        let t0 = Instant::now();
        let g = locks.lock("bench").await.unwrap();
        if explicit {
            g.release().await.unwrap();
        } else {
            drop(g);
        }
        lat.push(t0.elapsed());
    }
    lat
}

/// DistAlgo's workload: `procs` clients, client i connected to node i, each entering the
/// critical section `entries` times; returns the wall time.
async fn entries(cluster: &str, procs: usize, entries: usize) -> Duration {
    let cluster = Cluster::load(Path::new(cluster)).unwrap();
    let ids = cluster.peers.ids().to_vec();
    let mut clients = Vec::new();
    for i in 0..procs {
        clients.push(
            LockClient::connect_to(&cluster, ids[i % ids.len()])
                .await
                .unwrap(),
        );
    }
    let start = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                for _ in 0..entries {
                    drop(c.lock("cs").await.unwrap());
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    start.elapsed()
}

/// A minimal RESP client: sends one command, reads one reply line (enough for SET NX, EVAL).
struct Resp {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Resp {
    async fn call(&mut self, args: &[&str]) -> String {
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out += &format!("${}\r\n{}\r\n", a.len(), a);
        }
        self.s.write_all(out.as_bytes()).await.unwrap();
        loop {
            if let Some(p) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..p]).to_string();
                self.buf.drain(..p + 2);
                return line;
            }
            let mut chunk = [0u8; 512];
            let n = self.s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "redis closed the connection");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

const UNLOCK: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

async fn redis_loop(addr: &str, i: usize, until: Instant) -> Vec<Duration> {
    let s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let mut r = Resp { s, buf: Vec::new() };
    let mut lat = Vec::new();
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let token = format!("{i}-{n}");
        let t0 = Instant::now();
        loop {
            let reply = r.call(&["SET", "bench", &token, "NX", "PX", "10000"]).await;
            if reply == "+OK" {
                break;
            }
            // "$-1": held by another client; retry shortly.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let reply = r.call(&["EVAL", UNLOCK, "1", "bench", &token]).await;
        assert_eq!(reply, ":1", "the compare-and-delete found our token");
        lat.push(t0.elapsed());
    }
    lat
}
