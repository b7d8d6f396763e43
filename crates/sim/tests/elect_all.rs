//! `elect = "all"` in an `[[event]]`: every live process starts an election at that time, in
//! ring order. It is the same run as one `elect = ID` event per process in ring order (same
//! trace bytes, same report but for `events_processed`, which counts one scripted event instead
//! of N), refused for other families and with a clear message for a wrong value.

use distsync_sim::{run, RunOptions, Scenario, SimError};

const ELECTIONS: [&str; 5] = [
    "bully",
    "chang-roberts",
    "peterson",
    "ring",
    "ring-active-list",
];

/// The report (as JSON, with `events_processed` apart) and the trace of a run.
fn traced(text: &str, seed: u64) -> (serde_json::Value, u64, Vec<u8>) {
    let scenario = Scenario::from_toml(text, "t.toml").unwrap();
    let trace = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let report = run(
        &scenario,
        RunOptions {
            seed: Some(seed),
            trace: Some(Box::new(Sink(trace.clone()))),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
    let mut json = serde_json::to_value(&report).unwrap();
    let events = json["events_processed"].take().as_u64().unwrap();
    let bytes = trace.lock().unwrap().clone();
    (json, events, bytes)
}

/// A scenario of `algorithm` on `ids` (ring order) with uniform delays, `extra` events first.
fn scenario(algorithm: &str, ids: &[u32], extra: &str, elect: &str) -> String {
    format!(
        "algorithm = \"{algorithm}\"\nids = {ids:?}\nuntil = \"20s\"\n\
         [network]\ndelay = {{ uniform = [\"1ms\", \"5ms\"] }}\n{extra}{elect}"
    )
}

fn all_at(at: &str) -> String {
    format!("[[event]]\nat = \"{at}\"\nelect = \"all\"\n")
}

fn each_at(at: &str, ids: &[u32]) -> String {
    ids.iter()
        .map(|id| format!("[[event]]\nat = \"{at}\"\nelect = {id}\n"))
        .collect()
}

#[test]
fn elect_all_is_one_elect_per_process_in_ring_order() {
    let orders: [&[u32]; 3] = [&[3, 7, 1, 9, 4, 0, 6], &[0, 1, 2, 3], &[12, 5, 8, 2, 10]];
    for algorithm in ELECTIONS {
        for (k, ids) in orders.iter().enumerate() {
            for seed in 1..=4 {
                let seed = seed + 10 * k as u64;
                let short = scenario(algorithm, ids, "", &all_at("0ms"));
                let long = scenario(algorithm, ids, "", &each_at("0ms", ids));
                let (report_all, events_all, trace_all) = traced(&short, seed);
                let (report_each, events_each, trace_each) = traced(&long, seed);
                assert!(
                    trace_all == trace_each,
                    "{algorithm} {ids:?} seed {seed}: the traces differ"
                );
                assert_eq!(report_all, report_each, "{algorithm} {ids:?} seed {seed}");
                // One scripted event instead of one per process.
                assert_eq!(
                    events_all + ids.len() as u64 - 1,
                    events_each,
                    "{algorithm} {ids:?} seed {seed}"
                );
                let election = &report_all["election"];
                assert_eq!(election["agreed"], true, "{algorithm} seed {seed}");
                assert_eq!(
                    election["leader"],
                    *ids.iter().max().unwrap(),
                    "{algorithm} seed {seed}"
                );
            }
        }
    }
}

#[test]
fn elect_all_later_starts_only_the_live_processes() {
    let ids = [3, 7, 1, 9, 4, 0, 6];
    let crash = "[[event]]\nat = \"0ms\"\ncrash = 9\n";
    for algorithm in ELECTIONS {
        for seed in 1..=3 {
            let short = scenario(algorithm, &ids, crash, &all_at("2s"));
            let long = scenario(algorithm, &ids, crash, &each_at("2s", &ids));
            let (report_all, _, trace_all) = traced(&short, seed);
            let (report_each, _, trace_each) = traced(&long, seed);
            assert!(trace_all == trace_each, "{algorithm} seed {seed}");
            assert_eq!(report_all, report_each, "{algorithm} seed {seed}");
            let text = String::from_utf8(trace_all).unwrap();
            let started = text
                .lines()
                .filter(|l| l.contains("\"event\":\"input\""))
                .count();
            assert_eq!(started, ids.len() - 1, "{algorithm} seed {seed}: 9 is down");
            assert_eq!(
                report_all["election"]["leader"], 7,
                "{algorithm} seed {seed}"
            );
        }
    }
}

#[test]
fn chang_roberts_with_everyone_starting_meets_the_oracles_bounds() {
    // ORACLES.md, Chang-Roberts with every process starting: 2n-1 election messages when the
    // ids increase along the direction of travel, n(n+1)/2 when they decrease; n elected.
    let n = 6u64;
    for (ids, election) in [
        ("[0, 1, 2, 3, 4, 5]", 2 * n - 1),
        ("[5, 4, 3, 2, 1, 0]", n * (n + 1) / 2),
    ] {
        let text = format!(
            "algorithm = \"chang-roberts\"\nids = {ids}\n{}",
            all_at("0ms")
        );
        let (report, _, _) = traced(&text, 1);
        let by = &report["election"]["messages"]["by_kind"];
        assert_eq!(by["Election"], election, "{ids}: {report}");
        assert_eq!(by["Elected"], n, "{ids}: {report}");
    }
}

fn refused(text: &str) -> String {
    let scenario = match Scenario::from_toml(text, "scale.toml") {
        Ok(s) => s,
        Err(e) => return e.to_string(),
    };
    match run(
        &scenario,
        RunOptions {
            origin: "scale.toml".into(),
            ..RunOptions::default()
        },
    ) {
        Err(SimError::Scenario(e)) => e.to_string(),
        Err(e) => panic!("not a scenario error: {e}"),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

#[test]
fn a_wrong_value_is_named_with_the_file_and_the_field() {
    let e = refused(
        "algorithm = \"chang-roberts\"\nnodes = 4\n[[event]]\nat = \"0ms\"\nelect = \"every\"\n",
    );
    assert!(e.starts_with("scale.toml"), "{e}");
    assert!(e.contains("elect"), "{e}");
    assert!(e.contains("\"all\"") && e.contains("\"every\""), "{e}");
    let e =
        refused("algorithm = \"chang-roberts\"\nnodes = 4\n[[event]]\nat = \"0ms\"\nelect = -1\n");
    assert!(e.contains("elect") && e.contains("got -1"), "{e}");
    let e = refused("algorithm = \"chang-roberts\"\nnodes = 4\n[[event]]\nat = \"0ms\"\nelect = \"all\"\ncrash = 1\n");
    assert!(
        e.contains("`event[0]`") && e.contains("crash and elect"),
        "{e}"
    );
}

#[test]
fn other_families_refuse_it() {
    for algorithm in ["ricart-agrawala", "cristian", "causal-broadcast"] {
        let e = refused(&format!(
            "algorithm = \"{algorithm}\"\nnodes = 4\n[[event]]\nat = \"0ms\"\ncrash = 1\n[[event]]\nat = \"0ms\"\nelect = \"all\"\n"
        ));
        assert!(
            e.contains("scale.toml") && e.contains("`event[1].elect`"),
            "{algorithm}: {e}"
        );
        assert!(e.contains("leader election"), "{algorithm}: {e}");
    }
}

#[test]
fn it_round_trips_through_serialization() {
    let text = "algorithm = \"bully\"\nnodes = 3\n[[event]]\nat = \"1ms\"\nelect = \"all\"\n[[event]]\nat = \"2ms\"\nelect = 2\n";
    let scenario = Scenario::from_toml(text, "t.toml").unwrap();
    let again = toml::to_string(&scenario).unwrap();
    assert!(again.contains("elect = \"all\""), "{again}");
    assert!(again.contains("elect = 2"), "{again}");
    let back = Scenario::from_toml(&again, "t.toml").unwrap();
    assert_eq!(back.events[0].elect, scenario.events[0].elect);
    assert_eq!(back.events[1].elect, scenario.events[1].elect);
}
