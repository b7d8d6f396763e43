//! The example scenarios: the files of `scenarios/`, built into the binary, so that an installed
//! `distsync` has them (`distsync examples`) and the page offers them in its examples menu (a
//! test of the CLI checks this list against the directory).

/// Every file of `scenarios/`: its name (the file name without `.toml`) and its text.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "berkeley-master-crash",
        include_str!("../../../scenarios/berkeley-master-crash.toml"),
    ),
    (
        "bully-eight-processes",
        include_str!("../../../scenarios/bully-eight-processes.toml"),
    ),
    (
        "bully-timeout-detection",
        include_str!("../../../scenarios/bully-timeout-detection.toml"),
    ),
    (
        "causal-broadcast",
        include_str!("../../../scenarios/causal-broadcast.toml"),
    ),
    (
        "central-lock-manager",
        include_str!("../../../scenarios/central-lock-manager.toml"),
    ),
    (
        "chandy-lamport-bank",
        include_str!("../../../scenarios/chandy-lamport-bank.toml"),
    ),
    (
        "chandy-lamport-bank-non-fifo",
        include_str!("../../../scenarios/chandy-lamport-bank-non-fifo.toml"),
    ),
    (
        "chang-roberts-all-start",
        include_str!("../../../scenarios/chang-roberts-all-start.toml"),
    ),
    (
        "cristian-time-server",
        include_str!("../../../scenarios/cristian-time-server.toml"),
    ),
    (
        "fifo-broadcast-causal-non-fifo",
        include_str!("../../../scenarios/fifo-broadcast-causal-non-fifo.toml"),
    ),
    (
        "fifo-broadcast",
        include_str!("../../../scenarios/fifo-broadcast.toml"),
    ),
    (
        "lamport-light",
        include_str!("../../../scenarios/lamport-light.toml"),
    ),
    (
        "lamport-non-fifo",
        include_str!("../../../scenarios/lamport-non-fifo.toml"),
    ),
    (
        "maekawa-deadlock",
        include_str!("../../../scenarios/maekawa-deadlock.toml"),
    ),
    (
        "maekawa-basic-light",
        include_str!("../../../scenarios/maekawa-basic-light.toml"),
    ),
    (
        "maekawa-plane",
        include_str!("../../../scenarios/maekawa-plane.toml"),
    ),
    (
        "majority-vote-lock-manager",
        include_str!("../../../scenarios/majority-vote-lock-manager.toml"),
    ),
    (
        "ntp-falseticker",
        include_str!("../../../scenarios/ntp-falseticker.toml"),
    ),
    (
        "ntp-no-majority",
        include_str!("../../../scenarios/ntp-no-majority.toml"),
    ),
    (
        "peterson-example-4-21",
        include_str!("../../../scenarios/peterson-example-4-21.toml"),
    ),
    (
        "poisson-duplicates",
        include_str!("../../../scenarios/poisson-duplicates.toml"),
    ),
    (
        "poisson-lossy",
        include_str!("../../../scenarios/poisson-lossy.toml"),
    ),
    (
        "raymond-tree",
        include_str!("../../../scenarios/raymond-tree.toml"),
    ),
    (
        "ricart-agrawala-heavy",
        include_str!("../../../scenarios/ricart-agrawala-heavy.toml"),
    ),
    (
        "ricart-agrawala-partition",
        include_str!("../../../scenarios/ricart-agrawala-partition.toml"),
    ),
    (
        "ricart-agrawala-token-heavy",
        include_str!("../../../scenarios/ricart-agrawala-token-heavy.toml"),
    ),
    (
        "ring-active-list-four-processes",
        include_str!("../../../scenarios/ring-active-list-four-processes.toml"),
    ),
    (
        "ring-simultaneous-elections",
        include_str!("../../../scenarios/ring-simultaneous-elections.toml"),
    ),
    (
        "ring-six-processes",
        include_str!("../../../scenarios/ring-six-processes.toml"),
    ),
    (
        "singhal-light",
        include_str!("../../../scenarios/singhal-light.toml"),
    ),
    (
        "singhal-token-light",
        include_str!("../../../scenarios/singhal-token-light.toml"),
    ),
    (
        "suzuki-kasami-light",
        include_str!("../../../scenarios/suzuki-kasami-light.toml"),
    ),
    (
        "token-ring-heavy",
        include_str!("../../../scenarios/token-ring-heavy.toml"),
    ),
    (
        "total-order-replicated-database",
        include_str!("../../../scenarios/total-order-replicated-database.toml"),
    ),
];

/// What a scenario file says about itself: its leading comment lines, joined.
pub fn description(text: &str) -> String {
    text.lines()
        .map_while(|l| l.strip_prefix('#'))
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_example_parses_and_describes_itself() {
        for (name, text) in super::EXAMPLES {
            distsync_sim::Scenario::from_toml(text, name).unwrap();
            assert!(
                !super::description(text).is_empty(),
                "{name} has no comment"
            );
        }
    }
}
