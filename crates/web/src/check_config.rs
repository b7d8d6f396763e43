//! The exhaustive checker's configuration of a scenario: what `distsync check FILE` and the
//! page's "prove or refute" both explore, so that they give the same verdict and state count on
//! the same file.
//!
//! From the scenario it takes the algorithm, the processes (ids 0..N-1), the parameters, the
//! links (FIFO or not), the `elect` starters and the `[check]` table (bounds, workload, faults).
//! The scenario's own faults become fault bounds when `[check]` does not give them: a loss or
//! duplication probability above zero allows one lost or duplicated message, scripted crashes
//! and recoveries allow as many, and a scripted partition allows one partition (any split, at
//! any moment) and its heal. The checker explores every interleaving of these choices, a
//! superset of the scenario's one run.

use distsync_algorithms::registry;
use distsync_check::{family_checks, Bounds, Config, FaultBounds, Property, Workload};
use distsync_core::multicast::Order;
use distsync_sim::scenario::Action;
use distsync_sim::Scenario;
use serde::Deserialize;
use std::fmt;

/// The `[check]` table of a scenario file (docs/check.md).
#[derive(Deserialize, Default, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct CheckTable {
    /// Requests per competitor (mutual exclusion), multicasts or transfers per process.
    pub requests: Option<u32>,
    /// Stop after this many distinct states.
    pub max_states: Option<usize>,
    /// Do not explore deeper than this.
    pub max_depth: Option<usize>,
    /// Stop when the checker's memory exceeds this ("2GiB").
    pub max_memory: Option<String>,
    /// A bounded result fails.
    pub require_proof: Option<bool>,
    /// Up to this many crashes.
    pub crash: Option<u8>,
    /// Up to this many recoveries.
    pub recover: Option<u8>,
    /// Up to this many messages lost.
    pub loss: Option<u8>,
    /// Up to this many messages duplicated.
    pub duplicate: Option<u8>,
    /// One partition in two groups, and its heal.
    pub partition: Option<bool>,
    /// Any pending timer may fire at any moment.
    pub untimed: Option<bool>,
    /// Also check liveness under weak fairness.
    pub liveness: Option<bool>,
    /// Symmetry reduction.
    pub symmetry: Option<bool>,
    /// Multicast: the orders to check.
    pub order: Option<Vec<Order>>,
    /// Worker threads.
    pub threads: Option<usize>,
}

/// What the checker explores for a scenario.
#[derive(Clone, Debug)]
pub struct CheckSetup {
    /// The registry name.
    pub algorithm: String,
    /// The configuration.
    pub config: Config,
    /// The `[check]` table as written (the CLI's flags override it).
    pub table: CheckTable,
    /// What of the scenario the checker does not explore as written (scripted requests, the
    /// times of scripted faults), in a sentence each.
    pub notes: Vec<String>,
}

/// A scenario the checker cannot take: the field at fault and what was expected (the message
/// names the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetupError {
    /// The field ("ids", "check.max_memory"...), empty for the whole file.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SetupError {}

/// "2GiB", "500MB", "1g", "1048576": a size in bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size (write it like 2GiB or 500MB)"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" => 1e12,
        "tib" => 1024f64.powi(4),
        other => {
            return Err(format!(
                "`{other}` is not a size unit (use B, KB, MB, GB, KiB, MiB or GiB)"
            ))
        }
    };
    let bytes = value * scale;
    if bytes < 1.0 {
        return Err(format!("`{text}` must be more than zero"));
    }
    Ok(bytes as u64)
}

/// The checker's configuration of `scenario` (`origin` names it in errors): the one function
/// `distsync check FILE` and the page's "prove or refute" both use.
pub fn check_setup(scenario: &Scenario, origin: &str) -> Result<CheckSetup, SetupError> {
    let bad = |field: &str, message: String| SetupError {
        field: field.to_string(),
        message,
    };
    let table: CheckTable = match &scenario.check {
        Some(t) => t
            .clone()
            .try_into()
            .map_err(|e| bad("check", format!("{origin}: `check`: {e}")))?,
        None => CheckTable::default(),
    };
    let checked = scenario
        .check(origin)
        .map_err(|e| bad(&e.field, e.to_string()))?;
    let ids = checked.peers.ids();
    if ids.iter().enumerate().any(|(i, id)| id.0 != i as u32) {
        return Err(bad(
            "ids",
            format!(
                "{origin}: `ids`: the checker numbers processes 0..N-1 in order; give `nodes = {}`",
                ids.len()
            ),
        ));
    }
    let mut elect = Vec::new();
    let (mut crashes, mut recoveries, mut partitions, mut other) = (0u8, 0u8, false, 0usize);
    for (_, _, action) in &checked.actions {
        match action {
            Action::Elect(n) => elect.push(*n),
            Action::ElectAll => elect.extend_from_slice(ids),
            Action::Crash(_) => crashes = crashes.saturating_add(1),
            Action::Recover(_) => recoveries = recoveries.saturating_add(1),
            Action::Partition(_) => partitions = true,
            _ => other += 1,
        }
    }
    let mut notes = Vec::new();
    if other > 0 {
        notes.push(format!(
            "{origin}: the checker ignores the {other} timed event{} other than `elect`, crashes, \
             recoveries and partitions (it gives every process its requests itself)",
            if other == 1 { "" } else { "s" }
        ));
    }
    if crashes + recoveries > 0 || partitions {
        notes.push(format!(
            "{origin}: the scripted faults are explored at any moment, not at their times"
        ));
    }
    let max_memory = match &table.max_memory {
        Some(text) => Some(parse_size(text).map_err(|e| {
            bad(
                "check.max_memory",
                format!("{origin}: `check.max_memory`: {e}"),
            )
        })?),
        None => None,
    };
    // A workload's requests, for a family whose scenarios take one (mutual exclusion).
    let workload_requests = registry::lookup(&scenario.algorithm)
        .filter(|e| distsync_sim::takes(e, "workload"))
        .and_then(|_| scenario.workload.as_ref().and_then(|w| w.requests));
    let config = Config {
        nodes: ids.len(),
        requests: table
            .requests
            .or(workload_requests.map(|r| r.clamp(1, u64::from(u32::MAX)) as u32))
            .unwrap_or(1),
        fifo: scenario.network.fifo,
        params: scenario.params(),
        bounds: Bounds {
            max_states: table.max_states.unwrap_or(Bounds::default().max_states),
            max_depth: table.max_depth.unwrap_or(Bounds::default().max_depth),
            max_memory,
        },
        faults: FaultBounds {
            crash: table.crash.unwrap_or(crashes),
            recover: table.recover.unwrap_or(recoveries),
            loss: table.loss.unwrap_or(u8::from(scenario.network.loss > 0.0)),
            duplicate: table
                .duplicate
                .unwrap_or(u8::from(scenario.network.duplicate > 0.0)),
            partition: table.partition.unwrap_or(partitions),
        },
        untimed: table.untimed.unwrap_or(false),
        elect,
        orders: table.order.clone(),
        threads: table.threads.unwrap_or(0),
        liveness: table.liveness.unwrap_or(false),
        symmetry: table.symmetry.unwrap_or(false),
    };
    Ok(CheckSetup {
        algorithm: scenario.algorithm.clone(),
        config,
        table,
        notes,
    })
}

/// The properties the checker holds `algorithm` to under `config` (docs/check.md): for
/// multicast, only the orders asked for (or those the algorithm promises); `progress` only when
/// the whole space was explored (`complete`), as the checker checks it only then.
pub fn properties_explored(algorithm: &str, config: &Config, complete: bool) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = family_checks(algorithm, config)
        .map(|c| c.properties.into_iter().map(Property::name).collect())
        .unwrap_or_default();
    if !complete {
        out.retain(|p| *p != "progress");
    }
    if config.liveness {
        out.push("liveness");
    }
    out
}

/// The bounds of `config` in words: "3 processes, 1 request each, non-FIFO links, at most 1
/// duplicate".
pub fn bounds_in_words(algorithm: &str, config: &Config) -> String {
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = vec![plural(config.nodes as u64, "process", "processes")];
    let r = config.requests as u64;
    match family_checks(algorithm, config).map(|c| c.workload) {
        Some(Workload::PerProcess(one, many)) => {
            parts.push(format!("{} each", plural(r, one, many)))
        }
        Some(Workload::Election) => {
            let starters = if config.elect.is_empty() {
                "the lowest id starts the election".to_string()
            } else {
                let ids: Vec<String> = config.elect.iter().map(|n| n.0.to_string()).collect();
                format!(
                    "{} start{} elections",
                    ids.join(", "),
                    if ids.len() == 1 { "s" } else { "" }
                )
            };
            parts.push(starters);
        }
        None => {}
    }
    parts.push(
        if config.fifo {
            "FIFO links"
        } else {
            "non-FIFO links"
        }
        .to_string(),
    );
    let f = &config.faults;
    for (k, one, many) in [
        (f.crash, "crash", "crashes"),
        (f.recover, "recovery", "recoveries"),
        (f.loss, "lost message", "lost messages"),
        (f.duplicate, "duplicate", "duplicates"),
    ] {
        if k > 0 {
            parts.push(format!("at most {}", plural(k as u64, one, many)));
        }
    }
    if f.partition {
        parts.push("one partition and its heal".into());
    }
    if config.untimed {
        parts.push("timers at any moment".into());
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(toml: &str) -> CheckSetup {
        let s = Scenario::from_toml(toml, "t.toml").unwrap();
        check_setup(&s, "t.toml").unwrap()
    }

    #[test]
    fn the_check_table_faults_and_starters_are_read() {
        let s = setup(
            "algorithm = \"bully\"\nnodes = 3\n[[event]]\nat = \"1ms\"\nelect = 2\n\
             [check]\npartition = true\nmax_states = 1000\n",
        );
        assert!(s.config.faults.partition);
        assert_eq!(s.config.bounds.max_states, 1000);
        assert_eq!(s.config.elect, vec![distsync_core::NodeId(2)]);
        assert_eq!(
            bounds_in_words("bully", &s.config),
            "3 processes, 2 starts elections, FIFO links, one partition and its heal"
        );
    }

    #[test]
    fn the_scenarios_own_faults_become_bounds_unless_check_says_otherwise() {
        let s = setup(
            "algorithm = \"token-ring\"\nnodes = 3\n[network]\nduplicate = 0.1\nfifo = false\n",
        );
        assert_eq!(s.config.faults.duplicate, 1);
        assert_eq!(
            bounds_in_words("token-ring", &s.config),
            "3 processes, 1 request each, non-FIFO links, at most 1 duplicate"
        );
        let s = setup(
            "algorithm = \"token-ring\"\nnodes = 3\n[network]\nduplicate = 0.1\n[check]\nduplicate = 0\n",
        );
        assert_eq!(s.config.faults.duplicate, 0);
        let s = setup(
            "algorithm = \"bully\"\nnodes = 3\n[[event]]\nat = \"1ms\"\npartition = [[0], [1, 2]]\n",
        );
        assert!(s.config.faults.partition);
        assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
    }

    #[test]
    fn only_the_orders_explored_are_listed() {
        let s = setup("algorithm = \"fifo-broadcast\"\nnodes = 3\n");
        assert_eq!(
            properties_explored("fifo-broadcast", &s.config, true),
            vec!["fifo-order", "completion"]
        );
        let s =
            setup("algorithm = \"causal-broadcast\"\nnodes = 3\n[check]\norder = [\"total\"]\n");
        assert_eq!(
            properties_explored("causal-broadcast", &s.config, true),
            vec!["total-order", "completion"]
        );
        let s = setup("algorithm = \"lamport-mutex\"\nnodes = 2\n");
        assert!(!properties_explored("lamport-mutex", &s.config, false).contains(&"progress"));
    }

    #[test]
    fn bad_tables_and_ids_name_the_field() {
        let s = Scenario::from_toml(
            "algorithm = \"bully\"\nnodes = 3\n[check]\ncrashes = 1\n",
            "t.toml",
        )
        .unwrap();
        let e = check_setup(&s, "t.toml").unwrap_err();
        assert_eq!(e.field, "check");
        assert!(e.message.contains("crashes"), "{e}");
        let s = Scenario::from_toml("algorithm = \"bully\"\nids = [3, 5]\n", "t.toml").unwrap();
        assert_eq!(check_setup(&s, "t.toml").unwrap_err().field, "ids");
    }
}
