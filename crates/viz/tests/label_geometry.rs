//! No label of the space-time diagram sits on a glyph (crash cross, recovery triangle, leader or
//! adjustment diamond) or on another label: boxes read back from the SVG (tests/common/
//! geometry.rs). crates/cli/tests/label_geometry.rs holds every scenario's drawing to the same.

mod common;

use common::geometry::collisions;
use common::{bully_run, mutex_run, Builder};
use distsync_viz::svg::{render, SvgOptions};
use distsync_viz::trace::Trace;
use serde_json::json;

fn svg_of(text: &str) -> String {
    let trace = Trace::parse(text, "t.jsonl").unwrap();
    render(&trace, &SvgOptions::default()).unwrap()
}

#[test]
fn the_fixtures_draw_no_label_over_a_glyph() {
    let found: Vec<String> = [("mutex", mutex_run()), ("bully", bully_run())]
        .into_iter()
        .flat_map(|(name, text)| {
            collisions(&svg_of(&text))
                .into_iter()
                .map(move |c| format!("{name}: {c}"))
        })
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn a_leader_that_recovered_keeps_its_label_off_the_recovery_triangle() {
    // The bottom process recovers and at once tells everyone above it that it leads: the label
    // goes below the line (the arrows leave upwards), where the triangle is.
    let mut b = Builder::new("bully", "election", &[0, 1, 2], 2);
    b.start_all();
    b.crash(1_000_000, 2);
    b.recover(5_000_000, 2);
    let sent: Vec<u64> = (0..2)
        .map(|to| b.send(5_000_000, 2, to, "Coordinator", json!({"Coordinator":2})))
        .collect();
    b.output(5_000_000, 2, json!({"Leader":2}));
    for (to, id) in sent.into_iter().enumerate() {
        b.deliver(6_000_000, id, false);
        b.output(6_000_000, to as u32, json!({"Leader":2}));
    }
    // And a leader announced just before its process crashes and comes back: the triangle
    // lands under the label's run.
    b.output(9_000_000, 0, json!({"Leader":0}));
    b.crash(9_050_000, 0);
    b.recover(9_100_000, 0);
    let svg = svg_of(&b.text());
    let found = collisions(&svg);
    assert!(found.is_empty(), "{}", found.join("\n"));
    // The labels are still drawn, moved rather than dropped.
    assert!(svg.contains(">leader 2</text>"), "{svg}");
    assert!(svg.contains(">leader 0</text>"), "{svg}");
}
