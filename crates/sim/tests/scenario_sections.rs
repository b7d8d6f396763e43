//! The families' sections of the scenario (`crates/sim/src/family/section.rs`) read and write
//! their fields as top-level keys of the file, exactly as when `Scenario` declared them itself:
//! the same errors (line, column, field, the list of known fields), the same refusals of a
//! field another family reads, the same TOML and JSON. The expected texts below were recorded
//! from the scenario before the sections existed.

use distsync_sim::{run, RunOptions, Scenario};

/// The error of reading `text` as a scenario file.
fn toml_error(text: &str) -> String {
    Scenario::from_toml(text, "t.toml").unwrap_err().to_string()
}

/// The error of running `text`.
fn run_error(text: &str) -> String {
    let s = Scenario::from_toml(text, "t.toml").expect("the file parses");
    run(
        &s,
        RunOptions {
            origin: "t.toml".into(),
            ..RunOptions::default()
        },
    )
    .unwrap_err()
    .to_string()
}

const HEAD: &str = "algorithm = \"bully\"\nnodes = 3\n";

#[test]
fn errors_in_section_fields_name_line_column_and_field() {
    for (text, expected) in CASES {
        let got = toml_error(&format!("{HEAD}{text}\n"));
        if std::env::var_os("DISTSYNC_PRINT").is_some() {
            println!("    ({text:?},\n     {got:?}),");
            continue;
        }
        assert_eq!(&got, expected, "{text}");
    }
}

#[test]
fn refusals_of_foreign_fields_name_who_reads_them() {
    for (text, expected) in REFUSALS {
        let got = run_error(text);
        if std::env::var_os("DISTSYNC_PRINT").is_some() {
            println!("    ({text:?},\n     {got:?}),");
            continue;
        }
        assert_eq!(&got, expected, "{text}");
    }
}

#[test]
fn sections_write_and_read_back_as_top_level_keys() {
    let text = "algorithm = \"berkeley\"\nnodes = 3\nanswer_timeout = \"40ms\"\ncoordinator_timeout = \"1s\"\nheartbeat = \"10ms\"\nheartbeat_timeout = \"30ms\"\ndetect = \"timeout\"\nsync_interval = \"2s\"\nserver = 1\nsamples = 3\nmin_delay = \"1ms\"\nmax_drift_ppm = 50\nthreshold = \"3s\"\nmaster_election = \"ring\"\nstrata = [[0], [1, 2]]\ncoordinator = 1\nholder = 2\ntree = [[0, 1], [1, 2]]\nquorums = \"grid\"\n";
    let s = Scenario::from_toml(text, "t.toml").unwrap();
    let toml_text = toml::to_string(&s).unwrap();
    let json = serde_json::to_string(&s).unwrap();
    if std::env::var_os("DISTSYNC_PRINT").is_some() {
        println!("{toml_text:?}\n{json:?}");
        return;
    }
    assert_eq!(toml_text, TOML);
    assert_eq!(json, JSON);
    let back = Scenario::from_toml(&toml_text, "t.toml").unwrap();
    assert_eq!(toml::to_string(&back).unwrap(), toml_text);
    let back: Scenario = serde_json::from_str(&json).unwrap();
    assert_eq!(serde_json::to_string(&back).unwrap(), json);
}

#[test]
fn json_errors_are_the_same() {
    for (text, expected) in JSON_CASES {
        let got = serde_json::from_str::<Scenario>(text)
            .unwrap_err()
            .to_string();
        if std::env::var_os("DISTSYNC_PRINT").is_some() {
            println!("    ({text:?},\n     {got:?}),");
            continue;
        }
        assert_eq!(&got, expected, "{text}");
    }
}

const CASES: &[(&str, &str)] = &[
    (
        "answer_timout = \"1s\"",
        "t.toml: TOML parse error at line 3, column 1\n  |\n3 | answer_timout = \"1s\"\n  | ^^^^^^^^^^^^^\nunknown field `answer_timout`, expected one of `name`, `algorithm`, `nodes`, `ids`, `order`, `seed`, `until`, `coordinator`, `holder`, `tree`, `quorums`, `answer_timeout`, `coordinator_timeout`, `heartbeat`, `heartbeat_timeout`, `detect`, `sync_interval`, `server`, `samples`, `min_delay`, `max_drift_ppm`, `threshold`, `master_election`, `strata`, `multicast`, `app`, `network`, `clocks`, `workload`, `limits`, `ties`, `check`, `event`",
    ),
    (
        "answer_timeout = 5",
        "t.toml: TOML parse error at line 3, column 18\n  |\n3 | answer_timeout = 5\n  |                  ^\nthe bare number 5 is not a duration: add a unit, like \"5ms\" or \"5s\"",
    ),
    (
        "answer_timeout = \"5\"",
        "t.toml: TOML parse error at line 3, column 18\n  |\n3 | answer_timeout = \"5\"\n  |                  ^^^\n\"5\" is not a duration: it has no unit (write a number and a unit, like \"250us\", \"10ms\" or \"2s\")",
    ),
    (
        "coordinator_timeout = \"-1ms\"",
        "t.toml: TOML parse error at line 3, column 23\n  |\n3 | coordinator_timeout = \"-1ms\"\n  |                       ^^^^^^\n\"-1ms\" is not a duration: a duration cannot be negative (write a number and a unit, like \"250us\", \"10ms\" or \"2s\")",
    ),
    (
        "detect = \"sometimes\"",
        "t.toml: TOML parse error at line 3, column 10\n  |\n3 | detect = \"sometimes\"\n  |          ^^^^^^^^^^^\nunknown variant `sometimes`, expected `timeout` or `none`",
    ),
    (
        "sync_interval = 10",
        "t.toml: TOML parse error at line 3, column 17\n  |\n3 | sync_interval = 10\n  |                 ^^\nthe bare number 10 is not a duration: add a unit, like \"10ms\" or \"10s\"",
    ),
    (
        "server = \"zero\"",
        "t.toml: TOML parse error at line 3, column 10\n  |\n3 | server = \"zero\"\n  |          ^^^^^^\ninvalid type: string \"zero\", expected u32",
    ),
    (
        "samples = -1",
        "t.toml: TOML parse error at line 3, column 11\n  |\n3 | samples = -1\n  |           ^^\ninvalid value: integer `-1`, expected u32",
    ),
    (
        "max_drift_ppm = \"a\"",
        "t.toml: TOML parse error at line 3, column 17\n  |\n3 | max_drift_ppm = \"a\"\n  |                 ^^^\ninvalid type: string \"a\", expected f64",
    ),
    (
        "threshold = { uniform = 1 }",
        "t.toml: TOML parse error at line 3, column 13\n  |\n3 | threshold = { uniform = 1 }\n  |             ^^^^^^^^^^^^^^^\ninvalid type: map, expected a duration with a unit, like \"250us\", \"10ms\" or \"2s\"",
    ),
    (
        "master_election = 3",
        "t.toml: TOML parse error at line 3, column 19\n  |\n3 | master_election = 3\n  |                   ^\ninvalid type: integer `3`, expected a string",
    ),
    (
        "strata = [[0], \"x\"]",
        "t.toml: TOML parse error at line 3, column 16\n  |\n3 | strata = [[0], \"x\"]\n  |                ^^^\ninvalid type: string \"x\", expected a sequence",
    ),
    (
        "coordinator = -1",
        "t.toml: TOML parse error at line 3, column 15\n  |\n3 | coordinator = -1\n  |               ^^\ninvalid value: integer `-1`, expected u32",
    ),
    (
        "holder = 1.5",
        "t.toml: TOML parse error at line 3, column 10\n  |\n3 | holder = 1.5\n  |          ^^^\ninvalid type: floating point `1.5`, expected u32",
    ),
    (
        "tree = [[0, \"a\"]]",
        "t.toml: TOML parse error at line 3, column 13\n  |\n3 | tree = [[0, \"a\"]]\n  |             ^^^\ninvalid type: string \"a\", expected u32",
    ),
    (
        "quorums = \"bogus\"",
        "t.toml: TOML parse error at line 3, column 11\n  |\n3 | quorums = \"bogus\"\n  |           ^^^^^^^\nunknown variant `bogus`, expected `grid` or `plane`",
    ),
    (
        "seed = \"x\"",
        "t.toml: TOML parse error at line 3, column 8\n  |\n3 | seed = \"x\"\n  |        ^^^\ninvalid type: string \"x\", expected u64",
    ),
    (
        "until = 7",
        "t.toml: TOML parse error at line 3, column 9\n  |\n3 | until = 7\n  |         ^\nthe bare number 7 is not a duration: add a unit, like \"7ms\" or \"7s\"",
    ),
    (
        "[network]\nfifoo = true",
        "t.toml: TOML parse error at line 4, column 1\n  |\n4 | fifoo = true\n  | ^^^^^\nunknown field `fifoo`, expected one of `delay`, `fifo`, `loss`, `duplicate`, `reliable`",
    ),
    (
        "heartbeat = \"1ms\"\nheartbeat = \"2ms\"",
        "t.toml: TOML parse error at line 4, column 1\n  |\n4 | heartbeat = \"2ms\"\n  | ^\nduplicate key `heartbeat` in document root",
    ),
];
const REFUSALS: &[(&str, &str)] = &[
    (
        "algorithm = \"central\"\nnodes = 3\nanswer_timeout = \"1s\"\n",
        "t.toml: `answer_timeout`: this field applies to leader election and clock synchronization, and `central` does not read it; remove it",
    ),
    (
        "algorithm = \"central\"\nnodes = 3\ndetect = \"timeout\"\nanswer_timeout = \"1s\"\n",
        "t.toml: `detect`: `detect` applies to leader election, and `central` is a mutex algorithm",
    ),
    (
        "algorithm = \"ricart-agrawala\"\nnodes = 3\nholder = 1\n",
        "t.toml: `holder`: this field applies to the token algorithms (token-ring, ricart-agrawala-token, suzuki-kasami, raymond), and `ricart-agrawala` does not read it; remove it",
    ),
    (
        "algorithm = \"bully\"\nnodes = 3\ntree = [[0, 1]]\n",
        "t.toml: `tree`: this field applies to raymond, and `bully` does not read it; remove it",
    ),
    (
        "algorithm = \"bully\"\nnodes = 3\nsync_interval = \"1s\"\n",
        "t.toml: `sync_interval`: this field applies to clock synchronization, and `bully` is an election algorithm",
    ),
    (
        "algorithm = \"cristian\"\nnodes = 3\nquorums = \"grid\"\nserver = 0\n",
        "t.toml: `quorums`: this field applies to maekawa and maekawa-basic, and `cristian` does not read it; remove it",
    ),
    (
        "algorithm = \"causal-broadcast\"\nnodes = 3\nmaster_election = \"ring\"\n",
        "t.toml: `master_election`: this field applies to clock synchronization, and `causal-broadcast` is a multicast algorithm",
    ),
    (
        "algorithm = \"central\"\nnodes = 3\nstrata = [[0]]\n[multicast]\nrate = 1.0\n",
        "t.toml: `strata`: this field applies to clock synchronization, and `central` is a mutex algorithm",
    ),
    (
        "algorithm = \"chandy-lamport\"\nnodes = 3\ndetect = \"none\"\n",
        "t.toml: `detect`: `detect` applies to leader election, and `chandy-lamport` is a snapshot algorithm",
    ),
    (
        "algorithm = \"central\"\nnodes = 3\ncoordinator = 7\n",
        "t.toml: `coordinator`: node 7 is not one of the scenario's node ids (0..2)",
    ),
    (
        "algorithm = \"raymond\"\nnodes = 3\ntree = [[0, 9]]\n",
        "t.toml: `tree[0]`: node 9 is not one of the scenario's node ids (0..2)",
    ),
];
const JSON_CASES: &[(&str, &str)] = &[
    (
        "{\"algorithm\": \"x\", \"answer_timeout\": 5}",
        "the bare number 5 is not a duration: add a unit, like \"5ms\" or \"5s\" at line 1 column 38",
    ),
    (
        "{\"algorithm\": \"x\", \"answer_timout\": \"5ms\"}",
        "unknown field `answer_timout`, expected one of `name`, `algorithm`, `nodes`, `ids`, `order`, `seed`, `until`, `coordinator`, `holder`, `tree`, `quorums`, `answer_timeout`, `coordinator_timeout`, `heartbeat`, `heartbeat_timeout`, `detect`, `sync_interval`, `server`, `samples`, `min_delay`, `max_drift_ppm`, `threshold`, `master_election`, `strata`, `multicast`, `app`, `network`, `clocks`, `workload`, `limits`, `ties`, `check`, `event` at line 1 column 34",
    ),
    (
        "{\"nodes\": 3}",
        "missing field `algorithm` at line 1 column 12",
    ),
    (
        "{\"algorithm\": \"x\", \"detect\": \"timeout\", \"detect\": \"none\"}",
        "duplicate field `detect` at line 1 column 48",
    ),
    (
        "\"bully\"",
        "invalid type: string \"bully\", expected struct Scenario at line 1 column 7",
    ),
];
const TOML: &str = "algorithm = \"berkeley\"\nnodes = 3\nseed = 1\ncoordinator = 1\nholder = 2\ntree = [[0, 1], [1, 2]]\nquorums = \"grid\"\nanswer_timeout = \"40ms\"\ncoordinator_timeout = \"1s\"\nheartbeat = \"10ms\"\nheartbeat_timeout = \"30ms\"\ndetect = \"timeout\"\nsync_interval = \"2s\"\nserver = 1\nsamples = 3\nmin_delay = \"1ms\"\nmax_drift_ppm = 50.0\nthreshold = \"3s\"\nmaster_election = \"ring\"\nstrata = [[0], [1, 2]]\nevent = []\n\n[network]\ndelay = \"1ms\"\nfifo = true\nloss = 0.0\nduplicate = 0.0\n";
const JSON: &str = "{\"name\":null,\"algorithm\":\"berkeley\",\"nodes\":3,\"ids\":null,\"seed\":1,\"until\":null,\"coordinator\":1,\"holder\":2,\"tree\":[[0,1],[1,2]],\"quorums\":\"grid\",\"answer_timeout\":\"40ms\",\"coordinator_timeout\":\"1s\",\"heartbeat\":\"10ms\",\"heartbeat_timeout\":\"30ms\",\"detect\":\"timeout\",\"sync_interval\":\"2s\",\"server\":1,\"samples\":3,\"min_delay\":\"1ms\",\"max_drift_ppm\":50.0,\"threshold\":\"3s\",\"master_election\":\"ring\",\"strata\":[[0],[1,2]],\"multicast\":null,\"app\":null,\"network\":{\"delay\":\"1ms\",\"fifo\":true,\"loss\":0.0,\"duplicate\":0.0},\"clocks\":null,\"workload\":null,\"event\":[]}";

/// A report reads back from its JSON (as `compare --merge` and the page read it) with its
/// family's section in place: the sections are flattened under the family's key
/// (`crates/sim/src/family/reports.rs`), where the report's own field was before.
#[test]
fn every_familys_report_section_reads_back_from_its_json() {
    use distsync_sim::Report;
    for (algorithm, key) in [
        ("ricart-agrawala", "mutex"),
        ("bully", "election"),
        ("cristian", "clock"),
        ("causal-broadcast", "multicast"),
        ("chandy-lamport", "snapshot"),
    ] {
        let text = distsync_sim::default_scenario(algorithm).unwrap();
        let s = Scenario::from_toml(&text, algorithm).unwrap();
        let report = run(&s, RunOptions::default()).unwrap();
        let json = serde_json::to_string_pretty(&report).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let keys: Vec<&str> = ["mutex", "election", "clock", "multicast", "snapshot"]
            .into_iter()
            .filter(|k| value.get(k).is_some())
            .collect();
        assert_eq!(keys, [key], "{algorithm}: only its family's section");
        // The section comes after `violations` and before `link`/`warnings`, as it always has.
        let order: Vec<&str> = json
            .lines()
            .filter_map(|l| l.strip_prefix("  \"")?.split('"').next())
            .collect();
        let at = |k: &str| order.iter().position(|o| *o == k).unwrap();
        assert_eq!(at(key), at("violations") + 1, "{algorithm}: {order:?}");
        // (Compared as JSON values: serde_json's parsing of a float may differ from the written
        // one in its last digit, the same way for both.)
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), value, "{algorithm}");
        assert_eq!(back.sections.mutex.is_some(), key == "mutex");
        assert_eq!(back.sections.clock.is_some(), key == "clock");
    }
}

#[test]
fn an_edge_of_tree_is_two_ids() {
    // `[NodeId; 2]` read alone took the first two ids of `[0, 1, 2]` and dropped the third
    // without a word; an edge of three ids, or of one, is refused naming the field.
    for (text, expected) in [
        (
            "tree = [[0, 1], [0, 1, 2]]",
            "t.toml: TOML parse error at line 3, column 17\n  |\n3 | tree = [[0, 1], [0, 1, 2]]\n  |                 ^^^^^^^^^\n`tree`: an edge is two ids, like [0, 1], and this one has 3",
        ),
        (
            "tree = [[0]]",
            "t.toml: TOML parse error at line 3, column 9\n  |\n3 | tree = [[0]]\n  |         ^^^\n`tree`: an edge is two ids, like [0, 1], and this one has 1",
        ),
    ] {
        assert_eq!(toml_error(&format!("{HEAD}{text}\n")), expected, "{text}");
    }
    let json = "{\"algorithm\":\"raymond\",\"nodes\":3,\"tree\":[[0,1,2]]}";
    assert_eq!(
        serde_json::from_str::<Scenario>(json)
            .unwrap_err()
            .to_string(),
        "`tree`: an edge is two ids, like [0, 1], and this one has 3 at line 1 column 48"
    );
    // Two ids still read, and write back the same.
    let s = Scenario::from_toml(&format!("{HEAD}tree = [[0, 1], [1, 2]]\n"), "t.toml").unwrap();
    assert!(toml::to_string(&s)
        .unwrap()
        .contains("tree = [[0, 1], [1, 2]]"));
}
