//! The cluster file's `[clock]` table: read with its defaults, every bad field named, and the
//! artificial offsets and drifts spread over the nodes as documented.

use distsync_net::Cluster;
use std::time::Duration;

const BASE: &str = r#"
mutex = "central"
election = "bully"
secret = "0123456789abcdef0123"
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

fn with_clock(table: &str) -> String {
    format!("{BASE}\n[clock]\n{table}\n")
}

#[test]
fn a_clock_table_is_read_with_defaults() {
    let c = Cluster::from_toml(&with_clock("algorithm = \"berkeley\""), "c.toml").unwrap();
    let clock = c.file.clock.unwrap();
    assert_eq!(clock.algorithm, "berkeley");
    assert_eq!(clock.skew, Duration::ZERO);
    assert_eq!(clock.drift_ppm, 0.0);
    assert_eq!(clock.sync_interval, Duration::from_secs(1));
    assert_eq!(clock.adjust, "step");
    assert!(Cluster::from_toml(BASE, "c.toml")
        .unwrap()
        .file
        .clock
        .is_none());
}

#[test]
fn bad_clock_fields_are_named() {
    let field = |table: &str| {
        Cluster::from_toml(&with_clock(table), "c.toml")
            .unwrap_err()
            .field
    };
    assert_eq!(field("algorithm = \"bully\""), "clock.algorithm");
    assert_eq!(field("algorithm = \"berkley\""), "clock.algorithm");
    assert_eq!(
        field("algorithm = \"ntp\"\nsync_interval = \"0s\""),
        "clock.sync_interval"
    );
    assert_eq!(
        field("algorithm = \"ntp\"\nadjust = \"jump\""),
        "clock.adjust"
    );
    assert_eq!(
        field("algorithm = \"ntp\"\ndrift_ppm = 1e9"),
        "clock.drift_ppm"
    );
    // Unknown fields and durations without units are refused by the parser, naming them.
    let e =
        Cluster::from_toml(&with_clock("algorithm = \"ntp\"\nskw = \"1s\""), "c.toml").unwrap_err();
    assert!(e.message.contains("skw"), "{e}");
    let e = Cluster::from_toml(&with_clock("algorithm = \"ntp\"\nskew = 5"), "c.toml").unwrap_err();
    assert!(e.to_string().starts_with("c.toml"), "{e}");
}

#[test]
fn offsets_and_drifts_are_spread_over_the_nodes() {
    let c = Cluster::from_toml(
        &with_clock("algorithm = \"berkeley\"\nskew = \"200ms\"\ndrift_ppm = 50.0"),
        "c.toml",
    )
    .unwrap();
    let clock = c.file.clock.unwrap();
    let spread: Vec<(i64, f64)> = (0..3).map(|i| clock.artificial(i, 3)).collect();
    assert_eq!(spread[0].0, -200_000_000);
    assert_eq!(spread[1].0, 0);
    assert_eq!(spread[2].0, 200_000_000);
    assert!((spread[0].1 - 50e-6).abs() < 1e-12);
    assert!(spread[1].1.abs() < 1e-12);
    assert!((spread[2].1 + 50e-6).abs() < 1e-12);
    assert_eq!(clock.artificial(0, 1).0, 200_000_000);
}
