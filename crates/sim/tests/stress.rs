//! `stress`: every algorithm holds under what it claims to survive; stress finds the known
//! breaks outside those claims, each with a scenario that reproduces it; the result does not
//! depend on the number of threads.

use distsync_algorithms::registry;
use distsync_core::multicast::Order;
use distsync_sim::stress::{self, claims, Fault, StressOptions, StressResult};
use distsync_sim::{run, RunOptions, Scenario};

/// Seeds per algorithm in the suite's stress of everything (the `stress` verb runs thousands).
const SEEDS: u64 = 40;

fn failures_text(result: &StressResult) -> String {
    let mut s = String::new();
    for a in &result.algorithms {
        for f in a.failures.iter().take(3) {
            s += &format!(
                "\n  {} (faults {:?}): {} nodes, run {}, seed {}: {} at {}ns: {}\n    reproduce: distsync run {}",
                a.algorithm,
                a.faults,
                f.nodes,
                f.run,
                f.seed,
                f.first.property,
                f.first.time_ns,
                f.first.detail,
                f.file.as_deref().unwrap_or("(not written)")
            );
        }
    }
    s
}

#[test]
fn every_algorithm_holds_under_its_claims() {
    let names: Vec<String> = registry::entries()
        .into_iter()
        .map(|e| e.name.to_string())
        .collect();
    let options = StressOptions::new(names.clone(), SEEDS);
    let mut result = stress::stress(&options, &|_, _| {}).unwrap();
    assert_eq!(result.algorithms.len(), names.len());
    for a in &result.algorithms {
        assert_eq!(a.runs, SEEDS, "{}", a.algorithm);
        assert!(a.events > 0, "{} processed no event", a.algorithm);
    }
    let tmp = tempfile::TempDir::with_prefix("distsync-stress-claims-").unwrap();
    stress::write_failures(&mut result, tmp.path(), 3).unwrap();
    if result.found() {
        // The message below names these files to reproduce the violations with: keep them.
        let _ = tmp.keep();
    }
    assert!(
        !result.found(),
        "stress (seed {}) found violations under the algorithms' own claims:{}",
        result.seed,
        failures_text(&result)
    );
}

#[test]
fn claims_follow_the_registry_and_the_notes() {
    let entry = |n: &str| registry::lookup(n).unwrap();
    // FIFO where the registry says it is needed, and then no reordering.
    let lamport = claims(entry("lamport-mutex"));
    assert!(lamport.needs_fifo);
    assert!(!lamport.faults().contains(&Fault::Reorder));
    assert!(claims(entry("ricart-agrawala"))
        .faults()
        .contains(&Fault::Reorder));
    // Crashes only for what claims to survive them.
    assert!(claims(entry("bully")).faults().contains(&Fault::Crash));
    assert!(!claims(entry("central")).faults().contains(&Fault::Crash));
    assert!(!claims(entry("chandy-lamport"))
        .faults()
        .contains(&Fault::Crash));
    // No loss anywhere without reliable links.
    for e in registry::entries() {
        assert!(!claims(e).faults().contains(&Fault::Loss), "{}", e.name);
    }
}

#[test]
fn lamport_mutex_without_fifo_breaks_mutual_exclusion_and_the_file_reproduces_it() {
    let mut options = StressOptions::new(vec!["lamport-mutex".into()], 60);
    options.faults = Some(vec![Fault::Delay, Fault::Reorder]);
    let mut result = stress::stress(&options, &|_, _| {}).unwrap();
    assert!(result.found());
    let a = &result.algorithms[0];
    assert!(a.violations.get("mutual-exclusion").copied().unwrap_or(0) > 0);
    // Smallest first.
    assert!(a.failures.windows(2).all(|w| w[0].nodes <= w[1].nodes));
    let tmp = tempfile::TempDir::with_prefix("distsync-stress-lamport-").unwrap();
    stress::write_failures(&mut result, tmp.path(), 2).unwrap();
    let f = &result.algorithms[0].failures[0];
    let file = f.file.as_ref().expect("written");
    assert_eq!(
        f.reproduce.as_deref(),
        Some(&*format!("distsync run {file}"))
    );
    // The file alone (its own seed) reproduces the same first violation.
    let scenario = Scenario::load(std::path::Path::new(file)).unwrap();
    let report = run(&scenario, RunOptions::default()).unwrap();
    assert_eq!(report.violations.first(), Some(&f.first));
}

/// `--faults reorder` alone (no `delay`) still reorders: the drawn delays vary, and
/// lamport-mutex breaks as docs/stress.md says (with constant delays it passed every run).
#[test]
fn reorder_without_delay_draws_delays_that_reorder_and_breaks_lamport_mutex() {
    let mut options = StressOptions::new(vec!["lamport-mutex".into()], 60);
    options.faults = Some(vec![Fault::Reorder]);
    let result = stress::stress(&options, &|_, _| {}).unwrap();
    assert!(
        result.found(),
        "60 runs of lamport-mutex with reordering found nothing"
    );
    let a = &result.algorithms[0];
    assert!(a.violations.get("mutual-exclusion").copied().unwrap_or(0) > 0);
    for seed in 0..20 {
        let s = stress::generate(
            registry::lookup("lamport-mutex").unwrap(),
            &[Fault::Reorder],
            (2, 6),
            seed,
            &options,
        );
        assert!(!s.network.fifo);
        assert!(
            !matches!(
                s.network.delay,
                distsync_sim::scenario::DelaySpec::Constant(_)
            ),
            "seed {seed}: {:?}",
            s.network.delay
        );
    }
}

#[test]
fn fifo_broadcast_is_not_causal_and_stress_shows_it_when_asked() {
    let mut options = StressOptions::new(vec!["fifo-broadcast".into()], 40);
    options.faults = Some(vec![Fault::Delay, Fault::Reorder]);
    // What it promises (FIFO) holds...
    let result = stress::stress(&options, &|_, _| {}).unwrap();
    assert!(!result.found(), "{}", failures_text(&result));
    // ...and monitoring causal order too breaks it.
    options.check = vec![Order::Causal];
    let result = stress::stress(&options, &|_, _| {}).unwrap();
    assert!(result.algorithms[0].violations.contains_key("causal-order"));
    assert!(!result.algorithms[0].violations.contains_key("fifo-order"));
}

#[test]
fn duplicated_tokens_are_caught_as_storms_or_violations() {
    let mut options = StressOptions::new(vec!["token-ring".into()], 40);
    options.faults = Some(vec![Fault::Delay, Fault::Reorder, Fault::Duplicate]);
    options.max_events = 200_000;
    let result = stress::stress(&options, &|_, _| {}).unwrap();
    let ring = &result.algorithms[0];
    assert!(ring.storms > 0, "{:?}", ring.violations);
    // (central used to hang here; its messages now name their request:
    // stress_findings.rs::central_survives_duplication.)
}

#[test]
fn the_result_does_not_depend_on_the_number_of_threads() {
    let mut options = StressOptions::new(
        vec![
            "ricart-agrawala".into(),
            "lamport-mutex".into(),
            "bully".into(),
        ],
        12,
    );
    options.faults = Some(vec![Fault::Delay, Fault::Reorder, Fault::Crash]);
    options.seed = 99;
    options.jobs = Some(1);
    let one = serde_json::to_string(&stress::stress(&options, &|_, _| {}).unwrap()).unwrap();
    options.jobs = Some(3);
    let three = serde_json::to_string(&stress::stress(&options, &|_, _| {}).unwrap()).unwrap();
    assert_eq!(one, three);
    options.seed = 100;
    let other = serde_json::to_string(&stress::stress(&options, &|_, _| {}).unwrap()).unwrap();
    assert_ne!(one, other, "another stress seed draws other scenarios");
}

#[test]
fn generated_scenarios_stay_within_the_options() {
    let options = StressOptions::new(vec![], 1);
    let entry = registry::lookup("ring").unwrap();
    for seed in 0..50 {
        let s = stress::generate(entry, &[Fault::Delay, Fault::Crash], (3, 5), seed, &options);
        let n = s.ids.as_ref().unwrap().len();
        assert!((3..=5).contains(&n));
        assert!(s.network.fifo, "no reorder asked");
        assert_eq!(s.network.loss, 0.0);
        // The answer timeout covers the worst round trip.
        assert!(s.election.answer_timeout.unwrap() >= s.network.delay.bound() * 2);
        // The scenario survives a round trip through its TOML text.
        let text = toml::to_string(&s).unwrap();
        let back = Scenario::from_toml(&text, "t").unwrap();
        assert_eq!(toml::to_string(&back).unwrap(), text);
    }
}

#[test]
fn bad_options_are_refused_with_the_flag_named() {
    let e = stress::stress(&StressOptions::new(vec!["lamport".into()], 3), &|_, _| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("--algo") && e.contains("lamport-mutex"), "{e}");
    let e = stress::stress(&StressOptions::new(vec!["central".into()], 0), &|_, _| {})
        .unwrap_err()
        .to_string();
    assert!(e.contains("--seeds"), "{e}");
    let mut o = StressOptions::new(vec!["central".into()], 2);
    o.check = vec![Order::Causal];
    let e = stress::stress(&o, &|_, _| {}).unwrap_err().to_string();
    assert!(e.contains("--check"), "{e}");
    // A fault the family refuses is the user's option, named with the algorithm.
    let mut o = StressOptions::new(vec!["chandy-lamport".into()], 2);
    o.faults = Some(vec![Fault::Crash]);
    let e = stress::stress(&o, &|_, _| {}).unwrap_err().to_string();
    assert!(e.contains("chandy-lamport") && e.contains("crash"), "{e}");
}

fn drawing(names: &[&str], seeds: u64) -> StressOptions {
    let mut options = StressOptions::new(names.iter().map(|s| s.to_string()).collect(), seeds);
    options.draw_assumptions = true;
    options
}

/// `draw_assumptions` draws each option the documented assumptions depend on both ways: the
/// election's failure detector, FIFO links for an algorithm that needs them, reliable links
/// (recoveries kept); everything else is the scenario drawn without it.
#[test]
fn drawing_the_assumptions_draws_each_option_both_ways_and_nothing_else() {
    use distsync_sim::scenario::Detect;
    let plain = StressOptions::new(vec![], 1);
    let options = drawing(&[], 1);
    let mut seen = std::collections::BTreeSet::new();
    for name in ["bully", "ring-active-list", "lamport-mutex"] {
        let entry = registry::lookup(name).unwrap();
        let faults = claims(entry).faults();
        let nodes = stress::default_nodes(entry.family);
        for seed in 0..60 {
            let a = stress::generate(entry, &faults, nodes, seed, &plain);
            let mut b = stress::generate(entry, &faults, nodes, seed, &options);
            seen.insert((
                name,
                b.election.detect == Some(Detect::Timeout),
                b.network.fifo,
                b.network.reliable,
            ));
            if entry.family == registry::Family::Election {
                assert!(b.election.detect.is_some());
                if b.election.detect == Some(Detect::None) {
                    assert_eq!(b.election.heartbeat, None);
                    b.election.detect = a.election.detect;
                    b.election.heartbeat = a.election.heartbeat;
                }
            }
            assert!(
                b.network.fifo == a.network.fifo || entry.needs_fifo,
                "{name} {seed}"
            );
            b.network.fifo = a.network.fifo;
            b.network.reliable = a.network.reliable;
            assert_eq!(
                toml::to_string(&a).unwrap(),
                toml::to_string(&b).unwrap(),
                "{name} seed {seed}: only the assumptions differ"
            );
        }
    }
    for name in ["bully", "ring-active-list"] {
        for detect in [true, false] {
            assert!(
                seen.iter().any(|s| s.0 == name && s.1 == detect),
                "{name} {detect}"
            );
        }
    }
    for name in ["ring-active-list", "lamport-mutex"] {
        for fifo in [true, false] {
            assert!(
                seen.iter().any(|s| s.0 == name && s.2 == fifo),
                "{name} {fifo}"
            );
        }
    }
    for reliable in [true, false] {
        assert!(seen.iter().any(|s| s.3 == reliable), "reliable {reliable}");
    }
}

/// What `stress::outside` says a scenario breaks is what `distsync run` warns about, with the
/// properties docs/election.md's table names: chang-roberts with two crashes, a recovery and no
/// detector, agreement; with the detector, nothing; bully with a recovery (which it survives
/// without the detector since its rule 6 covers the processes in between), nothing.
#[test]
fn outside_names_the_assumption_the_docs_and_the_warning_name() {
    let text_of = |algorithm: &str, detect: &str| {
        format!(
            "algorithm = \"{algorithm}\"\nnodes = 4\ndetect = \"{detect}\"\n[[event]]\nat = \"0ms\"\ncrash = 3\n[[event]]\nat = \"0ms\"\ncrash = 2\n[[event]]\nat = \"1ms\"\nelect = 0\n[[event]]\nat = \"50ms\"\nrecover = 3\n"
        )
    };
    let bully = Scenario::from_toml(&text_of("bully", "none"), "t.toml").unwrap();
    assert!(stress::outside(&bully).is_empty());
    let text = |detect: &str| text_of("chang-roberts", detect);
    let none = Scenario::from_toml(&text("none"), "t.toml").unwrap();
    let outside = stress::outside(&none);
    assert_eq!(outside.len(), 1, "{outside:?}");
    assert_eq!(outside[0].assumption, "no failure detector with a recovery");
    assert_eq!(outside[0].doc, "docs/election.md");
    assert_eq!(outside[0].at_risk, vec!["agreement"]);
    let report = run(&none, RunOptions::default()).unwrap();
    assert!(report
        .warnings
        .iter()
        .any(|w| w.contains("no failure detector") && w.contains("agreement")));
    let timeout = Scenario::from_toml(&text("timeout"), "t.toml").unwrap();
    assert!(stress::outside(&timeout).is_empty());
    // Links that are not FIFO for lamport-mutex: anything it promises is at risk.
    let lamport = Scenario::from_toml(
        "algorithm = \"lamport-mutex\"\nnodes = 3\n[network]\nfifo = false\n",
        "t.toml",
    )
    .unwrap();
    let outside = stress::outside(&lamport);
    assert_eq!(outside.len(), 1);
    assert_eq!(outside[0].assumption, "links that are not FIFO");
    assert!(outside[0].at_risk.is_empty());
}

/// Lamport's mutex drawn with and without FIFO links: every failure is outside the assumptions
/// (links that are not FIFO), none inside; the failing runs are all non-FIFO ones.
#[test]
fn failures_outside_the_assumptions_are_told_apart_from_bugs() {
    let result = stress::stress(&drawing(&["lamport-mutex"], 80), &|_, _| {}).unwrap();
    let a = &result.algorithms[0];
    assert!(a.failed > 0, "80 runs, half without FIFO, found nothing");
    assert_eq!(a.inside, 0, "{}", failures_text(&result));
    assert!(!result.bugs());
    assert_eq!(a.outside.get("links that are not FIFO"), Some(&a.failed));
    for f in &a.failures {
        assert!(f.explained && !f.scenario.network.fifo, "run {}", f.run);
    }
    // Asked for explicitly, a fault the algorithm does not claim (loss for ricart-agrawala) is
    // outside it too: nothing is promised there.
    let mut options = drawing(&["ricart-agrawala"], 30);
    options.faults = Some(vec![Fault::Delay, Fault::Loss]);
    let result = stress::stress(&options, &|_, _| {}).unwrap();
    let a = &result.algorithms[0];
    assert!(a.failed > 0);
    assert_eq!(a.inside, 0);
    assert!(a.outside.contains_key("lost messages"));
}

/// A failure is outside the assumptions only when the run broke one and only properties the
/// docs name at risk without it: chang-roberts without the detector, after two crashes and a
/// recovery, may disagree, but not hang; with the detector nothing is outside.
#[test]
fn a_failure_is_a_bug_unless_a_broken_assumption_names_its_property() {
    let text = |detect: &str| {
        format!(
            "algorithm = \"chang-roberts\"\nnodes = 4\ndetect = \"{detect}\"\n[[event]]\nat = \"0ms\"\ncrash = 3\n[[event]]\nat = \"0ms\"\ncrash = 2\n[[event]]\nat = \"1ms\"\nelect = 0\n[[event]]\nat = \"50ms\"\nrecover = 3\n"
        )
    };
    let props = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let none = Scenario::from_toml(&text("none"), "t.toml").unwrap();
    assert!(stress::classify(&none, &props(&["agreement"])).1);
    assert!(!stress::classify(&none, &props(&["agreement", "termination"])).1);
    assert!(!stress::classify(&none, &props(&["validity"])).1);
    let timeout = Scenario::from_toml(&text("timeout"), "t.toml").unwrap();
    let (broken, explained) = stress::classify(&timeout, &props(&["agreement"]));
    assert!(broken.is_empty() && !explained);
}

/// The elections drawn with the failure detector on and off (and reliable links, with
/// recoveries): whatever fails is outside an assumption docs/election.md names, with a property
/// it names at risk. The figures of that page are from `distsync stress --family election
/// --draw-assumptions`.
#[test]
fn elections_with_the_detector_drawn_fail_only_where_the_docs_say() {
    let names = [
        "bully",
        "ring",
        "chang-roberts",
        "ring-active-list",
        "peterson",
    ];
    let mut result = stress::stress(&drawing(&names, 30), &|_, _| {}).unwrap();
    let tmp = tempfile::TempDir::with_prefix("distsync-stress-drawn-").unwrap();
    stress::write_failures(&mut result, tmp.path(), 3).unwrap();
    if result.bugs() {
        let _ = tmp.keep();
    }
    for a in &result.algorithms {
        let on = a.drawn.get("detector on").map_or(0, |d| d.runs);
        let off = a.drawn.get("detector off").map_or(0, |d| d.runs);
        assert_eq!(on + off, 30, "{}", a.algorithm);
        assert!(on > 0 && off > 0, "{}: {on} on, {off} off", a.algorithm);
    }
    assert!(
        !result.bugs(),
        "failures inside the documented assumptions:{}",
        failures_text(&result)
    );
}
