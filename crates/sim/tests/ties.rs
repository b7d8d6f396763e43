//! `ties = "seeded"`: timers due at exactly the same time go off in an order drawn from the
//! run's seed, so that the simulator takes the orders the exhaustive checker explores. The
//! checker's counterexample of ring-active-list with one crash (`distsync check --algo
//! ring-active-list --nodes 3 --crash 1`: "one election announced 0, then node 1 announced 1")
//! needs node 1's two acknowledgement timers, set at the same instant for the two messages it
//! forwarded to the crashed 2, to go off in the reverse of the order they were set: the
//! simulator used to take only the order they were set, and could not show it.

mod support;

use distsync_sim::Scenario;
use support::batch;

fn scenario(ties: Option<&str>, seed: u64) -> Scenario {
    let ties = ties.map_or(String::new(), |t| format!("ties = \"{t}\"\n"));
    let text = format!(
        r#"
algorithm = "ring-active-list"
nodes = 3
until = "2s"
answer_timeout = "10ms"
seed = {seed}
{ties}
[network]
delay = "1ms"
[[event]]
at = "0ms"
crash = 2
[[event]]
at = "1ms"
elect = 0
"#
    );
    Scenario::from_toml(&text, "ties.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn one_leader(s: &Scenario) -> Option<String> {
    let (report, _) = batch(s);
    report
        .violations
        .iter()
        .find(|v| v.property == "one-leader")
        .map(|v| v.detail.clone())
}

#[test]
fn seeded_ties_show_the_checkers_ring_active_list_counterexample() {
    let seeds = 1..=8;
    for seed in seeds.clone() {
        assert_eq!(one_leader(&scenario(None, seed)), None, "seed {seed}");
        assert_eq!(
            one_leader(&scenario(Some("scheduled"), seed)),
            None,
            "seed {seed}"
        );
    }
    let found: Vec<String> = seeds
        .filter_map(|seed| one_leader(&scenario(Some("seeded"), seed)))
        .collect();
    assert!(!found.is_empty(), "no seed took the reverse order");
    for detail in &found {
        assert!(
            detail.contains("announced 0, then node 1 announced 1"),
            "{detail}"
        );
    }
}

/// `ties = "scheduled"` is the default, byte for byte; seeded ties are deterministic (same
/// seed, same bytes) and change only the order of timers due together.
#[test]
fn scheduled_ties_are_the_default_and_seeded_ties_are_deterministic() {
    for seed in 1..=4 {
        let (r0, t0) = batch(&scenario(None, seed));
        let (r1, t1) = batch(&scenario(Some("scheduled"), seed));
        assert_eq!(t0, t1, "seed {seed}");
        assert_eq!(
            serde_json::to_string(&r0).unwrap(),
            serde_json::to_string(&r1).unwrap()
        );
        let (a, ta) = batch(&scenario(Some("seeded"), seed));
        let (b, tb) = batch(&scenario(Some("seeded"), seed));
        assert_eq!(ta, tb, "seed {seed}");
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
    // Without a tie, seeded ties change nothing: a mutex run whose timers never meet.
    let text = |ties: &str| {
        format!(
            "algorithm = \"ricart-agrawala\"\nnodes = 4\nseed = 3\n{ties}\n[network]\ndelay = {{ uniform = [\"1ms\", \"3ms\"] }}\n[workload]\nkind = \"poisson\"\nrate = 20.0\nrequests = 3\n"
        )
    };
    let plain = Scenario::from_toml(&text(""), "t.toml").unwrap();
    let seeded = Scenario::from_toml(&text("ties = \"seeded\""), "t.toml").unwrap();
    assert_eq!(batch(&plain).1, batch(&seeded).1);
}

#[test]
fn a_bad_ties_value_is_refused_naming_the_field() {
    let e = Scenario::from_toml(
        "algorithm = \"bully\"\nnodes = 3\nties = \"random\"\n",
        "t.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("ties") || e.contains("seeded"), "{e}");
}
