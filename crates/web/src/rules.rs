//! The rule panel: which rule of the algorithm's file handled the latest step, in that file's
//! own words.
//!
//! The algorithm files of crates/algorithms number their rules in their header comment
//! (`//! 2. On REQUEST (ts, j): ...`, or `//! - L1: ...`) and their handlers name the rule they
//! apply with `ctx.rule("2")` (the optional hook of `distsync_core::Ctx`); the session records
//! which process named which rules at the latest step (`View::rule`). This module reads the
//! header comments themselves (compiled in, so the page and the file cannot say different
//! things) and gives the page each rule's sentence and the state fields it names.

use serde::Serialize;
use serde_json::Value;

/// The source of each algorithm whose handlers name their rules: the mutual-exclusion,
/// multicast, snapshot, clock-synchronization and election algorithms. (The ring elections run
/// behind the reliable link, whose own rules are not named: the rules shown are the election's.
/// Berkeley's election of its master shows as Berkeley's rule 1, not as the election file's.)
const SOURCES: &[(&str, &str)] = &[
    (
        "lamport-mutex",
        include_str!("../../algorithms/src/mutex/lamport.rs"),
    ),
    (
        "ricart-agrawala",
        include_str!("../../algorithms/src/mutex/ricart_agrawala.rs"),
    ),
    (
        "token-ring",
        include_str!("../../algorithms/src/mutex/token_ring.rs"),
    ),
    (
        "suzuki-kasami",
        include_str!("../../algorithms/src/mutex/suzuki_kasami.rs"),
    ),
    (
        "raymond",
        include_str!("../../algorithms/src/mutex/raymond.rs"),
    ),
    (
        "maekawa",
        include_str!("../../algorithms/src/mutex/maekawa.rs"),
    ),
    (
        "maekawa-basic",
        include_str!("../../algorithms/src/mutex/maekawa_basic.rs"),
    ),
    (
        "majority-vote",
        include_str!("../../algorithms/src/mutex/majority_vote.rs"),
    ),
    (
        "central",
        include_str!("../../algorithms/src/mutex/central.rs"),
    ),
    (
        "ricart-agrawala-token",
        include_str!("../../algorithms/src/mutex/ricart_agrawala_token.rs"),
    ),
    (
        "singhal",
        include_str!("../../algorithms/src/mutex/singhal.rs"),
    ),
    (
        "singhal-token",
        include_str!("../../algorithms/src/mutex/singhal_token.rs"),
    ),
    (
        "fifo-broadcast",
        include_str!("../../algorithms/src/multicast/fifo_broadcast.rs"),
    ),
    (
        "causal-broadcast",
        include_str!("../../algorithms/src/multicast/causal_broadcast.rs"),
    ),
    (
        "total-order-multicast",
        include_str!("../../algorithms/src/multicast/total_order.rs"),
    ),
    (
        "chandy-lamport",
        include_str!("../../algorithms/src/snapshot/chandy_lamport.rs"),
    ),
    (
        "berkeley",
        include_str!("../../algorithms/src/clocks/berkeley.rs"),
    ),
    (
        "cristian",
        include_str!("../../algorithms/src/clocks/cristian.rs"),
    ),
    ("ntp", include_str!("../../algorithms/src/clocks/ntp.rs")),
    (
        "bully",
        include_str!("../../algorithms/src/election/bully.rs"),
    ),
    (
        "ring",
        include_str!("../../algorithms/src/election/ring.rs"),
    ),
    (
        "chang-roberts",
        include_str!("../../algorithms/src/election/chang_roberts.rs"),
    ),
    (
        "ring-active-list",
        include_str!("../../algorithms/src/election/ring_active_list.rs"),
    ),
    (
        "peterson",
        include_str!("../../algorithms/src/election/peterson.rs"),
    ),
];

/// One rule as the page shows it.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct RuleText {
    /// Its label in the file: "2", "L1".
    pub rule: String,
    /// Its sentence, as the file's header comment writes it (lines joined).
    pub text: String,
    /// The state fields its sentence names in backquotes (`request_queue`), that the process's
    /// state has: what the page highlights in the card as read by the rule.
    pub reads: Vec<String>,
}

/// The file of `algorithm`'s rules, as crates/algorithms has it (for the panel's caption).
pub fn file_of(algorithm: &str) -> Option<&'static str> {
    Some(match algorithm {
        "lamport-mutex" => "mutex/lamport.rs",
        "ricart-agrawala" => "mutex/ricart_agrawala.rs",
        "token-ring" => "mutex/token_ring.rs",
        "suzuki-kasami" => "mutex/suzuki_kasami.rs",
        "raymond" => "mutex/raymond.rs",
        "maekawa" => "mutex/maekawa.rs",
        "maekawa-basic" => "mutex/maekawa_basic.rs",
        "majority-vote" => "mutex/majority_vote.rs",
        "central" => "mutex/central.rs",
        "ricart-agrawala-token" => "mutex/ricart_agrawala_token.rs",
        "singhal" => "mutex/singhal.rs",
        "singhal-token" => "mutex/singhal_token.rs",
        "fifo-broadcast" => "multicast/fifo_broadcast.rs",
        "causal-broadcast" => "multicast/causal_broadcast.rs",
        "total-order-multicast" => "multicast/total_order.rs",
        "chandy-lamport" => "snapshot/chandy_lamport.rs",
        "berkeley" => "clocks/berkeley.rs",
        "cristian" => "clocks/cristian.rs",
        "ntp" => "clocks/ntp.rs",
        "bully" => "election/bully.rs",
        "ring" => "election/ring.rs",
        "chang-roberts" => "election/chang_roberts.rs",
        "ring-active-list" => "election/ring_active_list.rs",
        "peterson" => "election/peterson.rs",
        _ => return None,
    })
}

/// The rules of `algorithm`'s file, label and sentence, in the file's order; empty for an
/// algorithm whose handlers name no rules.
pub fn rules_of(algorithm: &str) -> Vec<(String, String)> {
    SOURCES
        .iter()
        .find(|(name, _)| *name == algorithm)
        .map(|(_, source)| parse_header(source))
        .unwrap_or_default()
}

/// Reads the numbered rules of a header comment: a line `//! N. text` or `//! - LABEL: text`
/// starts a rule, the indented lines after it continue it, and a blank comment line, an
/// unindented line or the next rule ends it.
fn parse_header(source: &str) -> Vec<(String, String)> {
    let mut rules: Vec<(String, String)> = Vec::new();
    let mut open = false;
    for line in source.lines() {
        let Some(text) = line.strip_prefix("//!") else {
            break;
        };
        let text = text.strip_prefix(' ').unwrap_or(text);
        if let Some((label, rest)) = rule_start(text) {
            if rules.iter().all(|(l, _)| *l != label) {
                rules.push((label, rest.trim().to_string()));
                open = true;
                continue;
            }
        }
        if open && text.starts_with(' ') && !text.trim().is_empty() {
            let last = rules.last_mut().expect("open");
            last.1.push(' ');
            last.1.push_str(text.trim());
        } else {
            open = false;
        }
    }
    rules
}

/// `N. text` or `- LABEL: text` (a label of capitals and digits), as a rule's first line.
fn rule_start(text: &str) -> Option<(String, &str)> {
    if let Some((n, rest)) = text.split_once(". ") {
        if !n.is_empty() && n.len() <= 2 && n.bytes().all(|b| b.is_ascii_digit()) {
            return Some((n.to_string(), rest));
        }
    }
    let rest = text.strip_prefix("- ")?;
    let (label, rest) = rest.split_once(": ")?;
    let ok = !label.is_empty()
        && label.len() <= 4
        && label
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && label.bytes().any(|b| b.is_ascii_digit());
    ok.then(|| (label.to_string(), rest))
}

/// The words in backquotes of `text`, in order, once each.
fn backquoted(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 && !part.is_empty() && !out.iter().any(|w| w == part) {
            out.push(part.to_string());
        }
    }
    out
}

/// Adds to a view's JSON `rule_file` (the file whose rules the algorithm's handlers name, for
/// those that name them), `rule.file` and, for each rule its process named, its sentence and the
/// fields of the process's state the sentence names (`rule.texts`). A view without `rule` (or
/// of an algorithm without rule sentences) is left as it is.
pub fn annotate(view: &mut Value) {
    let Some(algorithm) = view.get("algorithm").and_then(Value::as_str) else {
        return;
    };
    let algorithm = algorithm.to_string();
    let Some(file) = file_of(&algorithm) else {
        return;
    };
    view["rule_file"] = Value::from(format!("crates/algorithms/src/{file}"));
    let Some(node) = view.pointer("/rule/node").and_then(Value::as_u64) else {
        return;
    };
    let state = view
        .get("processes")
        .and_then(Value::as_array)
        .and_then(|ps| ps.iter().find(|p| p["id"].as_u64() == Some(node)))
        .map(|p| p["state"].clone())
        .unwrap_or(Value::Null);
    let all = rules_of(&algorithm);
    let named: Vec<String> = view["rule"]["rules"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .filter_map(|r| r.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let texts: Vec<RuleText> = named
        .iter()
        .filter_map(|label| {
            let (_, text) = all.iter().find(|(l, _)| l == label)?;
            let reads = backquoted(text)
                .into_iter()
                .filter(|w| state.get(w).is_some())
                .collect();
            Some(RuleText {
                rule: label.clone(),
                text: text.clone(),
                reads,
            })
        })
        .collect();
    view["rule"]["file"] = Value::from(format!("crates/algorithms/src/{file}"));
    view["rule"]["texts"] = serde_json::to_value(texts).expect("plain data");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_a_handler_names_is_in_its_files_header() {
        // The handlers' `ctx.rule("...")` calls, read from the same sources, each name a rule
        // that the header states: the panel never shows a number without its sentence.
        for (name, source) in SOURCES {
            let rules = rules_of(name);
            assert!(!rules.is_empty(), "{name}: no rules read from its header");
            let code = source.split("#[cfg(test)]").next().unwrap_or(source);
            let mut named = 0;
            for part in code.split("ctx.rule(\"").skip(1) {
                let label = part.split('"').next().unwrap_or("");
                named += 1;
                assert!(
                    rules.iter().any(|(l, _)| l == label),
                    "{name}: ctx.rule(\"{label}\") names no rule of the header {rules:?}"
                );
            }
            assert!(named > 0, "{name}: no handler names a rule");
        }
    }

    #[test]
    fn every_source_is_its_registered_algorithms_file() {
        // The two tables agree: each source is the file `file_of` names (read from disk here),
        // and each name is an algorithm of the registry.
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../algorithms/src");
        for (name, source) in SOURCES {
            let file = file_of(name).unwrap_or_else(|| panic!("{name}: no file_of"));
            let on_disk = std::fs::read_to_string(dir.join(file))
                .unwrap_or_else(|e| panic!("{name}: {file}: {e}"));
            assert_eq!(
                on_disk, *source,
                "{name}: SOURCES and file_of name different files"
            );
            assert!(
                distsync_algorithms::registry::lookup(name).is_some(),
                "{name}: not a registered algorithm"
            );
        }
    }

    #[test]
    fn the_numbered_bullets_of_the_other_families_are_read() {
        let labels =
            |name: &str| -> Vec<String> { rules_of(name).into_iter().map(|(l, _)| l).collect() };
        assert_eq!(
            labels("ricart-agrawala-token"),
            ["RI1", "RI2", "RA1", "RH1", "RH2", "RR1", "RR2"]
        );
        assert_eq!(labels("singhal-token"), ["1", "2", "3", "4", "5"]);
        assert_eq!(labels("total-order-multicast"), ["1", "2", "3", "4"]);
        assert_eq!(labels("chandy-lamport"), ["1", "2", "3", "4"]);
        let ntp = labels("ntp");
        assert_eq!(ntp.len(), 10);
        assert_eq!(ntp[9], "10");
        // A rule's sub-bullets are part of its sentence; the next number starts the next rule.
        let singhal = rules_of("singhal");
        assert!(singhal[2].1.starts_with("On REQUEST(c_j, j)"));
        assert!(singhal[2]
            .1
            .ends_with("neither: R_i := R_i ∪ {S_j} and send REPLY to S_j."));
        assert_eq!(
            backquoted(&singhal[4].1),
            ["executing", "inform_set", "request_set"]
        );
    }

    #[test]
    fn the_header_is_read_with_its_continuation_lines() {
        let rules = rules_of("ricart-agrawala");
        let labels: Vec<&str> = rules.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["1", "2", "3", "4"]);
        assert!(rules[1]
            .1
            .starts_with("On REQUEST (ts, j): reply at once unless"));
        assert!(
            rules[1]
                .1
                .ends_with("otherwise defer the reply (`deferred_replies`)."),
            "{}",
            rules[1].1
        );
        let lamport = rules_of("lamport-mutex");
        let labels: Vec<&str> = lamport.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["1", "2", "L1", "L2", "3", "4"]);
        assert_eq!(backquoted(&lamport[0].1), ["request_queue"]);
    }
}
