//! `distsync init`'s templates: for every algorithm of the registry, the template parses, runs
//! with no violation, and still does with every optional `# field = value` line uncommented (so
//! the values the comments show are valid).

use distsync_algorithms::registry;
use distsync_sim::{run, template::template, RunOptions, Scenario};

fn run_clean(text: &str, what: &str) {
    let scenario = Scenario::from_toml(text, what).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let report = run(
        &scenario,
        RunOptions {
            origin: what.to_string(),
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert!(
        report.violations.is_empty(),
        "{what} (seed {}): {:?}\n{text}",
        report.seed,
        report.violations
    );
    assert!(report.events_processed > 0, "{what} does nothing");
}

/// `# key = value    # comment` lines turned into `key = value    # comment`.
fn uncommented(text: &str) -> (String, usize) {
    let optional = regex_free_optional;
    let mut count = 0;
    let out = text
        .lines()
        .map(|l| match optional(l) {
            Some(active) => {
                count += 1;
                active
            }
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    (out, count)
}

fn regex_free_optional(line: &str) -> Option<String> {
    let rest = line.strip_prefix("# ")?;
    let (key, _) = rest.split_once(" = ")?;
    key.chars()
        .all(|c| c.is_ascii_lowercase() || c == '_')
        .then(|| rest.to_string())
}

#[test]
fn every_algorithm_has_a_template_that_runs_clean() {
    let mut optional_lines = 0;
    for entry in registry::entries() {
        let text = template(entry.name).unwrap();
        let scenario = Scenario::from_toml(&text, entry.name).unwrap();
        assert_eq!(scenario.algorithm, entry.name);
        run_clean(&text, entry.name);
        let (all, n) = uncommented(&text);
        optional_lines += n;
        run_clean(&all, &format!("{} with every optional field", entry.name));
    }
    assert!(optional_lines >= 10, "only {optional_lines} optional lines");
}

#[test]
fn an_unknown_algorithm_is_named_with_a_suggestion() {
    let e = template("ricart-agrawla").unwrap_err();
    assert!(e.contains("`ricart-agrawla`"), "{e}");
    assert!(e.contains("did you mean `ricart-agrawala`"), "{e}");
}
