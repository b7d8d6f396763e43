//! The cluster file: which nodes there are and where they listen, which algorithms they run, the
//! timeouts, and the shared secret every connection must prove it knows.
//!
//! ```toml
//! mutex = "central"              # a mutual-exclusion algorithm of the registry
//! election = "bully"             # a leader-election algorithm of the registry
//! secret = "5f0c...e1"           # at least 16 characters; `distsync cluster up` writes a random one
//!
//! [timeouts]                     # all optional, durations with units
//! heartbeat = "100ms"            # how often a node tells every peer it is alive
//! heartbeat_timeout = "500ms"    # silence after which a peer (or the leader) is taken for crashed
//! answer_timeout = "100ms"       # the elections' T
//! coordinator_timeout = "1s"     # the elections' T'
//!
//! [[node]]
//! id = 0
//! addr = "127.0.0.1:7000"
//! ```
//!
//! Every field is checked when the file is read: an unknown field, a duration without a unit, an
//! id that appears twice, an address that does not parse or an algorithm of the wrong family is
//! refused with a message naming the file and the field, as scenario files are.
//!
//! An address is `HOST:PORT` where HOST is an IPv4 address, an IPv6 address in brackets
//! (`[::1]:7000`) or a host name (`node1.example:7000`, `localhost:7000`). Names are resolved by
//! the system's resolver (`/etc/hosts`, DNS) each time the file is read, that is when a node
//! starts and when a client starts: a name that does not resolve is refused then, naming the
//! host. A name with both IPv4 and IPv6 addresses takes its first IPv4 address (every machine
//! reading the same file then picks the same one for the same answers); an IPv6 address is
//! written as one. [`Cluster::check_offline`] checks a file without resolving anything, for a
//! file written on a machine that does not know the nodes' names (`distsync cluster init`).

use distsync_algorithms::registry::{self, Family};
use distsync_core::{serde_duration, NodeId, Params, Peers};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// Node ids must be below this, so that an epoch can carry its leader's id (see `view`).
pub const MAX_NODE_ID: u32 = 1023;
/// A secret shorter than this is refused: it would be guessable offline from one handshake.
pub const MIN_SECRET_LEN: usize = 16;

/// One `[[node]]` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// The node's id, unique in the file, at most [`MAX_NODE_ID`].
    pub id: NodeId,
    /// Where the node listens, for its peers and its clients: "HOST:PORT" (an IPv4 address,
    /// `[IPv6]`, or a host name resolved when the file is read).
    pub addr: String,
}

/// The `[timeouts]` table. Absent fields take the defaults of [`Timeouts::default`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// How often a node sends a heartbeat to every peer (and the leader to every node).
    #[serde(with = "serde_duration")]
    pub heartbeat: Duration,
    /// How long a peer may stay silent before it is taken for crashed.
    #[serde(with = "serde_duration")]
    pub heartbeat_timeout: Duration,
    /// The elections' T: the wait for an answer before taking the silent process for crashed.
    #[serde(with = "serde_duration")]
    pub answer_timeout: Duration,
    /// The elections' T': the wait for an election's result before starting it again.
    #[serde(with = "serde_duration")]
    pub coordinator_timeout: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            heartbeat: Duration::from_millis(200),
            heartbeat_timeout: Duration::from_millis(1000),
            answer_timeout: Duration::from_millis(200),
            coordinator_timeout: Duration::from_millis(2000),
        }
    }
}

/// A cluster file, as read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterFile {
    /// The mutual-exclusion algorithm every node runs (a registry name).
    pub mutex: String,
    /// The leader-election algorithm every node runs (a registry name).
    pub election: String,
    /// The node key: every link between nodes proves it knows it (see `auth`). In a client file
    /// (`client.toml`, no `client_secret`), the client key.
    pub secret: String,
    /// The client key: clients (`lock`, `leader`, ...) prove this one, and a connection that
    /// proves it can only be a client, never a node. Absent: clients use `secret` too (one
    /// shared secret: then any lock user can pose as a node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// `true` in a client file (`client.toml`): `secret` is the client key and there is no node
    /// key, so no node can run from it (`distsync node` refuses it and says so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub client_only: bool,
    /// Timeouts.
    #[serde(default)]
    pub timeouts: Timeouts,
    /// The nodes, in ring order for ring election algorithms.
    #[serde(rename = "node")]
    pub nodes: Vec<NodeEntry>,
    /// Clock synchronization among the nodes over UDP (`distsync time`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockSettings>,
    /// How the nodes serve locks (`[locks]`).
    #[serde(default, skip_serializing_if = "LockSettings::is_default")]
    pub locks: LockSettings,
    /// The replicated store and the snapshot bank (`[store]`).
    #[serde(default, skip_serializing_if = "StoreSettings::is_default")]
    pub store: StoreSettings,
}

/// The `[store]` table: the replicated bank every node keeps a replica of (`distsync store`),
/// and the account each node holds for snapshots (`distsync cluster snapshot`).
///
/// ```toml
/// [store]
/// multicast = "total-order-multicast"   # or causal-broadcast, fifo-broadcast
/// balance = 1000                        # each node's own account, moved by `store send`
/// ```
///
/// Every update of the replicated bank is delivered through the multicast algorithm named here,
/// the registry's own file; the nodes' own accounts are the bank of the Chandy-Lamport file,
/// whose snapshots `cluster snapshot` takes (docs/store.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StoreSettings {
    /// A multicast algorithm of the registry.
    pub multicast: String,
    /// The opening balance of every node's own account.
    pub balance: u64,
}

/// The multicast algorithm of a cluster file without one.
pub const DEFAULT_MULTICAST: &str = "total-order-multicast";
/// The opening balance of a node's own account in a cluster file without one.
pub const DEFAULT_BALANCE: u64 = 1000;

impl Default for StoreSettings {
    fn default() -> Self {
        StoreSettings {
            multicast: DEFAULT_MULTICAST.into(),
            balance: DEFAULT_BALANCE,
        }
    }
}

impl StoreSettings {
    fn is_default(&self) -> bool {
        *self == StoreSettings::default()
    }
}

/// The `[locks]` table: how a node serves its clients.
///
/// ```toml
/// [locks]
/// handoff = 8   # at most 8 grants in a row handed from a releasing client to the next client
///               # waiting at the same node, without the algorithm (0, the default: never)
/// ```
///
/// A node whose client releases a lock while another of its clients waits for it may hand the
/// critical section it holds straight to that client (with a new, larger fencing token) instead
/// of giving it back to the algorithm and asking again: *lock cohorting*. Mutual exclusion and
/// the tokens' order are unchanged (the node stays in the algorithm's critical section
/// throughout); what changes is fairness across nodes, bounded by `handoff`: after that many
/// hand-offs in a row the node gives the critical section back, so a client waiting at another
/// node waits for at most `handoff + 1` grants of each node ahead of it. With 0 every grant goes
/// through the algorithm, which is what a student watching the algorithm wants to see.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LockSettings {
    /// Consecutive hand-offs between clients of one node, at most (0: none).
    pub handoff: u32,
}

impl LockSettings {
    fn is_default(&self) -> bool {
        *self == LockSettings::default()
    }
}

/// The `[clock]` table: the nodes keep virtual clocks synchronized by a clock-synchronization
/// algorithm over UDP, on the same port numbers as their TCP addresses (docs/time.md).
///
/// ```toml
/// [clock]
/// algorithm = "berkeley"    # berkeley, cristian or ntp (Berkeley's master: `election`)
/// skew = "200ms"            # artificial offsets, spread evenly over -skew..+skew by node order
/// drift_ppm = 50.0          # artificial drifts, spread evenly over +drift..-drift
/// sync_interval = "1s"      # how often the algorithm is told to synchronize
/// adjust = "step"           # step or slew the virtual clocks
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSettings {
    /// A clock-synchronization algorithm of the registry.
    pub algorithm: String,
    /// The largest artificial offset a node starts with.
    #[serde(default, with = "serde_duration")]
    pub skew: Duration,
    /// The largest artificial drift, in ppm.
    #[serde(default)]
    pub drift_ppm: f64,
    /// How often the algorithm is asked to synchronize.
    #[serde(default = "default_sync_interval", with = "serde_duration")]
    pub sync_interval: Duration,
    /// "step" (default) or "slew".
    #[serde(default = "default_adjust")]
    pub adjust: String,
}

fn default_sync_interval() -> Duration {
    Duration::from_secs(1)
}

fn default_adjust() -> String {
    "step".into()
}

impl Eq for ClockSettings {}

impl ClockSettings {
    /// Checks the table; the error names the field (without the `clock.` prefix).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        family(&self.algorithm, Family::ClockSync).map_err(|m| ("algorithm", m))?;
        if !(self.drift_ppm.is_finite() && self.drift_ppm.abs() <= 100_000.0) {
            return Err((
                "drift_ppm",
                format!(
                    "expected a drift between -100000 and 100000 ppm, got {}",
                    self.drift_ppm
                ),
            ));
        }
        if self.sync_interval.is_zero() {
            return Err(("sync_interval", "must be longer than zero".into()));
        }
        if self.adjust != "step" && self.adjust != "slew" {
            return Err((
                "adjust",
                format!("expected \"step\" or \"slew\", got {:?}", self.adjust),
            ));
        }
        Ok(())
    }

    /// The artificial offset (ns) and drift (fraction) of the node at position `pos` of `n`:
    /// offsets spread evenly from -skew (first node) to +skew (last), drifts from +drift to
    /// -drift; a single node gets +skew and +drift.
    pub fn artificial(&self, pos: usize, n: usize) -> (i64, f64) {
        let skew = self.skew.as_nanos() as f64;
        let x = if n <= 1 {
            1.0
        } else {
            2.0 * pos as f64 / (n - 1) as f64 - 1.0
        };
        ((skew * x).round() as i64, -x * self.drift_ppm * 1e-6)
    }
}

/// A cluster file that has been checked: addresses parsed, algorithms found.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// The file as read.
    pub file: ClusterFile,
    /// Where it was read from, for messages.
    pub origin: String,
    /// Every node id, in file order.
    pub peers: Peers,
    /// Each node's address, in file order, as resolved when the file was read.
    pub addrs: Vec<SocketAddr>,
    /// Where a node keeps its state (its epoch high-water mark, see `persist`): the directory
    /// of the cluster file when it was read from one; `None` keeps nothing on disk.
    pub state_dir: Option<std::path::PathBuf>,
}

/// A cluster file that cannot be used, naming the file and the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (or `"<text>"` for text not read from a file).
    pub origin: String,
    /// The field at fault, dotted (`"node[2].addr"`, `"timeouts.heartbeat"`), or `""` for the file.
    pub field: String,
    /// What was expected.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(f, "{}: `{}`: {}", self.origin, self.field, self.message)
        }
    }
}

impl std::error::Error for ConfigError {}

impl Cluster {
    /// Reads and checks the cluster file at `path`.
    pub fn load(path: &Path) -> Result<Cluster, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            field: String::new(),
            message: format!("cannot read the cluster file: {e}"),
        })?;
        let mut cluster = Cluster::from_toml(&text, &origin)?;
        if let Some(warning) = crate::files::readable_by_others(path) {
            eprintln!("distsync: warning: {warning}");
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        cluster.state_dir = Some(if dir.as_os_str().is_empty() {
            Path::new(".").to_path_buf()
        } else {
            dir.to_path_buf()
        });
        Ok(cluster)
    }

    /// Parses and checks cluster-file text; `origin` names it in messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<Cluster, ConfigError> {
        let file: ClusterFile = toml::from_str(text).map_err(|e| ConfigError {
            origin: origin.to_string(),
            field: String::new(),
            message: match e.span() {
                // Line and column counted from 1, the column in characters, as editors show.
                Some(s) => {
                    let before = &text.as_bytes()[..s.start.min(text.len())];
                    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
                    let last = before.rsplit(|&b| b == b'\n').next().unwrap_or_default();
                    let column = String::from_utf8_lossy(last).chars().count() + 1;
                    format!("line {line}, column {column}: {}", e.message())
                }
                None => e.message().to_string(),
            },
        })?;
        Cluster::check(file, origin)
    }

    /// Checks a parsed cluster file and resolves its nodes' addresses.
    pub fn check(file: ClusterFile, origin: &str) -> Result<Cluster, ConfigError> {
        let peers = Cluster::check_offline(&file, origin)?;
        let mut addrs: Vec<SocketAddr> = Vec::with_capacity(file.nodes.len());
        for (i, n) in file.nodes.iter().enumerate() {
            let addr = resolve(&n.addr).map_err(|message| ConfigError {
                origin: origin.to_string(),
                field: format!("node[{i}].addr"),
                message,
            })?;
            if let Some(j) = addrs.iter().position(|a| *a == addr) {
                return Err(ConfigError {
                    origin: origin.to_string(),
                    field: format!("node[{i}].addr"),
                    message: format!(
                        "{:?} is {addr}, also the address of node[{j}] ({:?})",
                        n.addr, file.nodes[j].addr
                    ),
                });
            }
            addrs.push(addr);
        }
        Ok(Cluster {
            file,
            origin: origin.to_string(),
            peers,
            addrs,
            state_dir: None,
        })
    }

    /// Checks every field of a parsed cluster file, the addresses' form included, without
    /// resolving any host name (nothing is looked up); returns the node ids in file order.
    /// [`Cluster::check`] does this and then resolves the addresses.
    pub fn check_offline(file: &ClusterFile, origin: &str) -> Result<Peers, ConfigError> {
        let err = |field: String, message: String| ConfigError {
            origin: origin.to_string(),
            field,
            message,
        };
        family(&file.mutex, Family::Mutex).map_err(|m| err("mutex".into(), m))?;
        if file.mutex == "maekawa-basic" {
            return Err(err(
                "mutex".into(),
                "maekawa-basic can deadlock by design (Maekawa as first stated: a node votes \
                 for one request and never takes its vote back), and a deadlocked lock service \
                 serves nobody until restarted; the service does not run it. Use `maekawa` (the \
                 same quorums, with INQUIRE and RELINQUISH, deadlock-free); the simulator and \
                 checker still run maekawa-basic"
                    .into(),
            ));
        }
        family(&file.election, Family::Election).map_err(|m| err("election".into(), m))?;
        if file.secret.len() < MIN_SECRET_LEN {
            return Err(err(
                "secret".into(),
                format!(
                    "must be at least {MIN_SECRET_LEN} characters (`distsync cluster up` writes a random one)"
                ),
            ));
        }
        if file
            .client_secret
            .as_ref()
            .is_some_and(|s| s.len() < MIN_SECRET_LEN)
        {
            return Err(err(
                "client_secret".into(),
                format!("must be at least {MIN_SECRET_LEN} characters"),
            ));
        }
        if file.client_only && file.client_secret.is_some() {
            return Err(err(
                "client_secret".into(),
                "a client file (`client_only = true`) holds one key, the client key, as `secret`"
                    .into(),
            ));
        }
        if file.nodes.is_empty() {
            return Err(err(
                "node".into(),
                "at least one [[node]] with `id` and `addr` is needed".into(),
            ));
        }
        let mut seen: Vec<(String, u16)> = Vec::with_capacity(file.nodes.len());
        for (i, n) in file.nodes.iter().enumerate() {
            if n.id.0 > MAX_NODE_ID {
                return Err(err(
                    format!("node[{i}].id"),
                    format!("{} is too large: node ids go up to {MAX_NODE_ID}", n.id),
                ));
            }
            let (host, port) = host_port(&n.addr).map_err(|m| err(format!("node[{i}].addr"), m))?;
            let key = (host.to_ascii_lowercase(), port);
            if seen.contains(&key) {
                return Err(err(
                    format!("node[{i}].addr"),
                    format!("{:?} is also the address of another node", n.addr),
                ));
            }
            seen.push(key);
        }
        let peers = Peers::new(file.nodes.iter().map(|n| n.id).collect())
            .map_err(|e| err("node".into(), e.to_string()))?;
        let t = &file.timeouts;
        for (field, value) in [
            ("heartbeat", t.heartbeat),
            ("heartbeat_timeout", t.heartbeat_timeout),
            ("answer_timeout", t.answer_timeout),
            ("coordinator_timeout", t.coordinator_timeout),
        ] {
            if value.is_zero() {
                return Err(err(
                    format!("timeouts.{field}"),
                    "must be longer than zero".into(),
                ));
            }
        }
        if t.heartbeat_timeout < t.heartbeat * 2 {
            return Err(err(
                "timeouts.heartbeat_timeout".into(),
                format!(
                    "must be at least twice the heartbeat ({:?}), or live peers are taken for crashed",
                    t.heartbeat
                ),
            ));
        }
        family(&file.store.multicast, Family::Multicast)
            .map_err(|m| err("store.multicast".into(), m))?;
        if let Some(c) = &file.clock {
            c.check()
                .map_err(|(field, m)| err(format!("clock.{field}"), m))?;
        }
        crate::machine::validate(&file.mutex, &file.election, &params_of(t), &peers)
            .map_err(|e| err(e.field.to_string(), e.message))?;
        Ok(peers)
    }

    /// The algorithm parameters every node derives from the file (the election timeouts).
    pub fn params(&self) -> Params {
        params_of(&self.file.timeouts)
    }

    /// The address of node `id`.
    pub fn addr_of(&self, id: NodeId) -> Option<SocketAddr> {
        self.peers.position(id).map(|i| self.addrs[i])
    }

    /// The node key's bytes (in a client file: the client key).
    pub fn secret(&self) -> &[u8] {
        self.file.secret.as_bytes()
    }

    /// The key a client proves: `client_secret`, or `secret` when there is none.
    pub fn client_secret(&self) -> &[u8] {
        self.file
            .client_secret
            .as_deref()
            .unwrap_or(&self.file.secret)
            .as_bytes()
    }

    /// The same file for clients: the client key as its only secret, no node key.
    pub fn client_file(&self) -> ClusterFile {
        self.file.client_file()
    }
}

impl ClusterFile {
    /// The same file for clients: the client key as its only secret, no node key.
    pub fn client_file(&self) -> ClusterFile {
        ClusterFile {
            secret: self.client_secret.as_ref().unwrap_or(&self.secret).clone(),
            client_secret: None,
            client_only: true,
            ..self.clone()
        }
    }
}

impl Cluster {
    /// Refuses a client file where the node key is needed (`what`: "a node", "the clocks"),
    /// naming the file and saying what to use instead.
    pub fn node_key(&self, what: &str) -> Result<(), ConfigError> {
        if self.file.client_only {
            return Err(ConfigError {
                origin: self.origin.clone(),
                field: String::new(),
                message: format!(
                    "this file has no node key (`client_only = true`: it holds the client key \
                     only, for lock users), and {what} needs the node key: use the cluster file \
                     (cluster.toml)"
                ),
            });
        }
        Ok(())
    }
}

fn params_of(t: &Timeouts) -> Params {
    Params {
        answer_timeout: Some(t.answer_timeout),
        coordinator_timeout: Some(t.coordinator_timeout),
        heartbeat: Some(t.heartbeat),
        heartbeat_timeout: Some(t.heartbeat_timeout),
        ..Params::default()
    }
}

/// Splits `HOST:PORT` (HOST a host name, an IPv4 address, or an IPv6 address in brackets),
/// checking its form only; the error says what was expected.
pub fn host_port(addr: &str) -> Result<(&str, u16), String> {
    let expected =
        "expected HOST:PORT, like \"10.0.0.1:7000\", \"node1.example:7000\" or \"[::1]:7000\"";
    let (host, port) = if let Some(rest) = addr.strip_prefix('[') {
        let Some((v6, port)) = rest.split_once("]:") else {
            return Err(format!("{addr:?}: {expected}"));
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("{addr:?}: {v6:?} is not an IPv6 address"));
        }
        (v6, port)
    } else {
        let Some((host, port)) = addr.rsplit_once(':') else {
            return Err(format!("{addr:?}: no port; {expected}"));
        };
        if host.contains(':') {
            return Err(format!(
                "{addr:?}: an IPv6 address goes in brackets, like \"[{host}]:{port}\""
            ));
        }
        (host, port)
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{addr:?}: the port {port:?} is not a number from 0 to 65535"))?;
    if host.is_empty() {
        return Err(format!("{addr:?}: no host; {expected}"));
    }
    if host.parse::<std::net::IpAddr>().is_err() && !is_host_name(host) {
        return Err(format!(
            "{addr:?}: {host:?} is neither an IP address nor a host name (letters, digits, \
             '-' and '.'); {expected}"
        ));
    }
    Ok((host, port))
}

/// A host name as RFC 1123 allows: dot-separated labels of 1 to 63 letters, digits and '-',
/// not starting or ending with '-', 253 characters at most.
fn is_host_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    host.len() <= 253
        && host.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// Resolves `HOST:PORT` (see [`host_port`]) with the system's resolver: an IP address is taken
/// as it is; a host name gives its first IPv4 address, else its first address. The error names
/// the host and what the resolver said.
pub fn resolve(addr: &str) -> Result<SocketAddr, String> {
    let (host, port) = host_port(addr)?;
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    use std::net::ToSocketAddrs;
    let found: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("the host {host:?} does not resolve: {e}"))?
        .collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or(found.first())
        .copied()
        .ok_or_else(|| format!("the host {host:?} does not resolve: no address"))
}

fn family(name: &str, want: Family) -> Result<(), String> {
    match registry::lookup(name) {
        Some(e) if e.family == want => Ok(()),
        Some(e) => Err(format!(
            "{name:?} is a {} algorithm, not a {} algorithm",
            e.family.name(),
            want.name()
        )),
        None => {
            let hint = registry::suggest(name)
                .map(|s| format!(" (did you mean {s:?}?)"))
                .unwrap_or_default();
            Err(format!(
                "no {} algorithm is called {name:?}{hint}; see `distsync list`",
                want.name()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
mutex = "central"
election = "bully"
secret = "0123456789abcdef0123"
[timeouts]
heartbeat = "50ms"
heartbeat_timeout = "300ms"
[[node]]
id = 0
addr = "127.0.0.1:7000"
[[node]]
id = 1
addr = "127.0.0.1:7001"
[[node]]
id = 2
addr = "127.0.0.1:7002"
"#;

    fn field_of(text: &str) -> String {
        let e = Cluster::from_toml(text, "c.toml").unwrap_err();
        assert_eq!(e.origin, "c.toml");
        e.field
    }

    #[test]
    fn a_good_file_is_read_with_defaults() {
        let c = Cluster::from_toml(GOOD, "c.toml").unwrap();
        assert_eq!(c.peers.ids(), &[NodeId(0), NodeId(1), NodeId(2)]);
        assert_eq!(c.addr_of(NodeId(2)).unwrap().port(), 7002);
        assert_eq!(c.file.timeouts.heartbeat, Duration::from_millis(50));
        assert_eq!(c.file.timeouts.answer_timeout, Duration::from_millis(200));
        assert_eq!(
            c.params().heartbeat_timeout,
            Some(Duration::from_millis(300))
        );
    }

    #[test]
    fn bad_fields_are_named() {
        assert_eq!(
            field_of(&GOOD.replace("\"central\"", "\"centrl\"")),
            "mutex"
        );
        let e = Cluster::from_toml(&GOOD.replace("\"central\"", "\"centrl\""), "c.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean \"central\""), "{e}");
        assert_eq!(field_of(&GOOD.replace("\"central\"", "\"bully\"")), "mutex");
        assert_eq!(
            field_of(&GOOD.replace("\"bully\"", "\"central\"")),
            "election"
        );
        assert_eq!(
            field_of(&GOOD.replace("0123456789abcdef0123", "short")),
            "secret"
        );
        assert_eq!(
            field_of(&GOOD.replace("127.0.0.1:7001", "nowhere")),
            "node[1].addr"
        );
        assert_eq!(
            field_of(&GOOD.replace("127.0.0.1:7001", "127.0.0.1:7000")),
            "node[1].addr"
        );
        assert_eq!(field_of(&GOOD.replace("id = 2", "id = 5000")), "node[2].id");
        assert_eq!(field_of(&GOOD.replace("id = 2", "id = 1")), "node");
        assert_eq!(
            field_of(&GOOD.replace("\"300ms\"", "\"60ms\"")),
            "timeouts.heartbeat_timeout"
        );
    }

    #[test]
    fn addresses_take_host_names_and_bracketed_ipv6() {
        assert_eq!(host_port("localhost:7000"), Ok(("localhost", 7000)));
        assert_eq!(
            host_port("node1.example:17200"),
            Ok(("node1.example", 17200))
        );
        assert_eq!(host_port("[::1]:7000"), Ok(("::1", 7000)));
        assert_eq!(host_port("10.0.0.1:7000"), Ok(("10.0.0.1", 7000)));
        for (bad, says) in [
            ("::1:7000", "in brackets"),
            ("[::1]7000", "expected HOST:PORT"),
            ("[nope]:7000", "not an IPv6 address"),
            ("localhost", "no port"),
            (":7000", "no host"),
            ("node_1:7000", "neither an IP address nor a host name"),
            ("-node:7000", "neither an IP address nor a host name"),
            ("localhost:70000", "not a number from 0 to 65535"),
        ] {
            let e = host_port(bad).unwrap_err();
            assert!(e.contains(says) && e.contains(bad), "{bad}: {e}");
        }
        assert_eq!(resolve("[::1]:7000").unwrap().to_string(), "[::1]:7000");
        // `localhost` resolves everywhere; its IPv4 address is preferred.
        let local = resolve("localhost:7000").unwrap();
        assert!(local.ip().is_loopback() && local.is_ipv4(), "{local}");
        let e = resolve("no-such-host.invalid:7000").unwrap_err();
        assert!(
            e.contains("\"no-such-host.invalid\" does not resolve"),
            "{e}"
        );
    }

    #[test]
    fn names_resolve_when_the_file_is_read_and_only_then() {
        let named = GOOD
            .replace("127.0.0.1:7000", "localhost:7000")
            .replace("127.0.0.1:7001", "[::1]:7001");
        let c = Cluster::from_toml(&named, "c.toml").unwrap();
        assert_eq!(c.addrs[0].to_string(), "127.0.0.1:7000");
        assert_eq!(c.addrs[1].to_string(), "[::1]:7001");
        // Two spellings of one address are one address.
        let twice = GOOD.replace("127.0.0.1:7001", "localhost:7000");
        let e = Cluster::from_toml(&twice, "c.toml").unwrap_err();
        assert_eq!(e.field, "node[1].addr");
        assert!(e.message.contains("also the address of node[0]"), "{e}");
        // A name that does not resolve is refused when the file is read, naming the host...
        let far = GOOD.replace("127.0.0.1:7002", "node2.invalid:7002");
        let e = Cluster::from_toml(&far, "c.toml").unwrap_err();
        assert_eq!(e.field, "node[2].addr");
        assert!(
            e.to_string().contains("\"node2.invalid\" does not resolve"),
            "{e}"
        );
        // ...but a file can be checked without resolving anything (`cluster init`).
        let file: ClusterFile = toml::from_str(&far).unwrap();
        let peers = Cluster::check_offline(&file, "c.toml").unwrap();
        assert_eq!(peers.len(), 3);
        let file: ClusterFile = toml::from_str(&GOOD.replace("127.0.0.1:7001", "a_b:1")).unwrap();
        let e = Cluster::check_offline(&file, "c.toml").unwrap_err();
        assert_eq!(e.field, "node[1].addr");
    }

    #[test]
    fn the_store_table_is_checked() {
        let c = Cluster::from_toml(GOOD, "c.toml").unwrap();
        assert_eq!(c.file.store, StoreSettings::default());
        let with = format!("{GOOD}\n[store]\nmulticast = \"causal-broadcast\"\nbalance = 5\n");
        let c = Cluster::from_toml(&with, "c.toml").unwrap();
        assert_eq!(c.file.store.multicast, "causal-broadcast");
        assert_eq!(c.file.store.balance, 5);
        assert_eq!(
            field_of(&with.replace("causal-broadcast", "bully")),
            "store.multicast"
        );
        assert_eq!(
            field_of(&with.replace("causal-broadcast", "casual-broadcast")),
            "store.multicast"
        );
        let e = Cluster::from_toml(&with.replace("balance", "balanse"), "c.toml").unwrap_err();
        assert!(e.message.contains("balanse"), "{e}");
    }

    #[test]
    fn syntax_errors_and_unknown_fields_name_the_file() {
        let e = Cluster::from_toml(&GOOD.replace("\"50ms\"", "50"), "c.toml").unwrap_err();
        assert!(e.to_string().starts_with("c.toml: "), "{e}");
        assert!(e.message.contains("unit"), "{e}");
        let e = Cluster::from_toml(&format!("{GOOD}\nsecrte = 1"), "c.toml").unwrap_err();
        assert!(e.message.contains("secrte"), "{e}");
        let e = Cluster::load(Path::new("/nonexistent/c.toml")).unwrap_err();
        assert!(e.message.contains("cannot read"), "{e}");
    }
}
