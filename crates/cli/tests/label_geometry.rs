//! Every scenario's drawing keeps its labels off its glyphs and off each other: no leader label
//! on a recovery triangle or a crash cross, no output label on a diamond, no partition name on a
//! heal's. Each scenario is drawn as `run --svg` draws it (windowed around a violation, or to
//! its first 4000 events), and the gallery's own drawings (docs/gallery/*.svg, written by
//! scripts/gallery.sh) are held to the same.

#[path = "../../viz/tests/common/geometry.rs"]
mod geometry;

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
}

fn files(dir: &str, ext: &str) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    found.sort();
    found
}

#[test]
fn no_scenario_draws_a_label_over_a_glyph_or_a_label() {
    let tmp = tempfile::TempDir::with_prefix("distsync-geometry-").unwrap();
    let dir = tmp.path().to_path_buf();
    let mut found = Vec::new();
    let scenarios = files("scenarios", "toml");
    assert!(scenarios.len() >= 30, "{scenarios:?}");
    let mut leaders = 0;
    for scenario in &scenarios {
        let name = scenario.file_stem().unwrap().to_string_lossy().into_owned();
        let out = dir.join(format!("{name}.svg"));
        let o = Command::new(env!("CARGO_BIN_EXE_distsync"))
            .arg("run")
            .arg(scenario)
            .arg("--svg")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let svg = std::fs::read_to_string(&out).unwrap();
        leaders += svg.matches(">leader ").count();
        found.extend(
            geometry::collisions(&svg)
                .into_iter()
                .map(|c| format!("{name}: {c}")),
        );
    }
    // The elections draw their leaders' labels: the check is not vacuous.
    assert!(leaders >= 20, "{leaders} leader labels");
    tmp.close().unwrap();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_gallerys_drawings_draw_no_label_over_a_glyph_or_a_label() {
    let drawings = files("docs/gallery", "svg");
    assert!(drawings.len() >= 30, "{drawings:?}");
    let found: Vec<String> = drawings
        .iter()
        .flat_map(|path| {
            let svg = std::fs::read_to_string(path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            geometry::collisions(&svg)
                .into_iter()
                .map(move |c| format!("{name}: {c}"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "{}\n(redraw with scripts/gallery.sh)",
        found.join("\n")
    );
}
