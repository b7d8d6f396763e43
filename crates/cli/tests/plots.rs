//! `compare --plot`, `compare --family election --plot` and `sweep --plot`: titled figures,
//! whole-number ticks for N, one legend entry per algorithm, the legend beside the charts.

use std::process::Command;

mod scratch;

use scratch::Scratch;

/// `name` in a fresh scratch directory, removed when the returned value drops.
fn tmp(name: &str) -> Scratch {
    scratch::path("distsync-plots-", name)
}

fn plot(args: &[&str], name: &str) -> roxmltree_owned::Svg {
    let out = tmp(name);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--plot", out.to_str().unwrap()]);
    let o = Command::new(env!("CARGO_BIN_EXE_distsync"))
        .args(&all)
        .output()
        .unwrap();
    assert!(
        o.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    roxmltree_owned::Svg::read(&out)
}

/// The texts and the width of an SVG, read with roxmltree.
mod roxmltree_owned {
    pub struct Svg {
        pub width: f64,
        pub texts: Vec<(String, f64, f64)>,
    }
    impl Svg {
        pub fn read(path: &std::path::Path) -> Svg {
            let text = std::fs::read_to_string(path).unwrap();
            let doc = roxmltree::Document::parse(&text).expect("the SVG parses");
            let root = doc.root_element();
            let width = root.attribute("width").unwrap().parse().unwrap();
            let texts = doc
                .descendants()
                .filter(|n| n.has_tag_name("text"))
                .map(|n| {
                    let at = |a: &str| n.attribute(a).and_then(|v| v.parse().ok()).unwrap_or(0.0);
                    (n.text().unwrap_or("").trim().to_string(), at("x"), at("y"))
                })
                .collect();
            Svg { width, texts }
        }
        pub fn has(&self, s: &str) -> bool {
            self.texts.iter().any(|(t, _, _)| t.contains(s))
        }
    }
}

#[test]
fn compare_plot_has_a_title_panels_integer_ticks_and_one_entry_per_algorithm() {
    let svg = plot(&["compare", "--nodes", "3,5,8"], "cmp.svg");
    assert!(svg.has("T = 1ms constant delay, E = 10T"));
    assert!(svg.has("light load") && svg.has("heavy load"));
    assert!(svg.has("solid, dots: measured") && svg.has("dashed: theory"));
    // Ticks on N are whole numbers.
    for tick in ["3", "5", "8"] {
        assert!(svg.texts.iter().any(|(t, _, _)| t == tick), "{tick}");
    }
    assert!(!svg.has("3.5") && !svg.has("4.5"));
    // One legend entry per algorithm, each right of every chart's plot area.
    let legend: Vec<&(String, f64, f64)> = svg
        .texts
        .iter()
        .filter(|(t, _, _)| t.starts_with("ricart-agrawala:") || t.starts_with("central:"))
        .collect();
    assert_eq!(legend.len(), 2, "{legend:?}");
    let axis_right = svg
        .texts
        .iter()
        .filter(|(t, _, _)| t == "8")
        .map(|(_, x, _)| *x)
        .fold(0.0, f64::max);
    for (t, x, _) in legend {
        assert!(
            *x > axis_right,
            "{t} at {x} overlaps the charts (last tick at {axis_right})"
        );
        // The canvas is wide enough for the entry (at most ~7px a character at 13px).
        assert!(x + t.len() as f64 * 7.0 <= svg.width, "{t} is clipped");
    }
}

#[test]
fn election_and_sweep_plots_are_drawn() {
    let svg = plot(
        &["compare", "--family", "election", "--nodes", "4,8"],
        "election.svg",
    );
    assert!(svg.has("Election messages"));
    assert!(svg.has("ids ascending along the ring") && svg.has("ids random along the ring"));
    assert!(svg.has("chang-roberts") && svg.has("peterson") && svg.has("bully"));
    let svg = plot(
        &[
            "sweep",
            "--algo",
            "ricart-agrawala",
            "--param",
            "nodes=2..20",
        ],
        "sweep.svg",
    );
    assert!(svg.has("messages_per_entry against nodes"));
    assert!(svg.texts.iter().all(|(t, _, _)| !t.ends_with(".5")));
}
