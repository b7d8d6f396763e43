//! Lessons: a built-in scenario and steps of its run, each with a sentence in our own words and,
//! optionally, a "predict, then reveal" question. A lesson is data (a TOML file of
//! `crates/web/lessons/`, format in docs/web.md); the page offers them in its lessons menu
//! (`GET /api/lessons`).

use crate::examples::EXAMPLES;
use serde::{Deserialize, Serialize};

/// Every lesson file: its name and its text.
pub const LESSONS: &[(&str, &str)] = &[
    (
        "bully-seed-002",
        include_str!("../lessons/bully-seed-002.toml"),
    ),
    (
        "lamport-non-fifo",
        include_str!("../lessons/lamport-non-fifo.toml"),
    ),
    (
        "ricart-agrawala",
        include_str!("../lessons/ricart-agrawala.toml"),
    ),
    (
        "suzuki-kasami",
        include_str!("../lessons/suzuki-kasami.toml"),
    ),
    (
        "maekawa-deadlock",
        include_str!("../lessons/maekawa-deadlock.toml"),
    ),
    (
        "chang-roberts",
        include_str!("../lessons/chang-roberts.toml"),
    ),
    (
        "peterson-example-4-21",
        include_str!("../lessons/peterson-example-4-21.toml"),
    ),
    (
        "chandy-lamport-bank",
        include_str!("../lessons/chandy-lamport-bank.toml"),
    ),
    (
        "causal-broadcast",
        include_str!("../lessons/causal-broadcast.toml"),
    ),
    (
        "total-order-database",
        include_str!("../lessons/total-order-database.toml"),
    ),
    ("berkeley", include_str!("../lessons/berkeley.toml")),
    (
        "raymond-chain",
        include_str!("../lessons/raymond-chain.toml"),
    ),
];

/// A lesson, as its file writes it.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Lesson {
    /// Its title.
    pub title: String,
    /// The built-in scenario it steps through (a name `distsync examples` lists), or the name
    /// of its own `scenario`.
    pub example: String,
    /// The lesson's own scenario (TOML), when no built-in one shows the example: then `example`
    /// only names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    /// A sentence or two before the first step.
    pub intro: String,
    /// The steps it comments, by increasing `at`.
    #[serde(rename = "step")]
    pub steps: Vec<LessonStep>,
}

/// One commented step of a lesson.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LessonStep {
    /// The step of the run (choices applied by Step) the sentence is about.
    pub at: usize,
    /// What happens, in our own words.
    pub text: String,
    /// A question asked before the answer is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// Its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// A process's badge at this step, as the page shows it (checked by a test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_badge: Option<ExpectBadge>,
    /// A property the page announces as violated at this step (checked by a test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_violation: Option<String>,
    /// Words of a log line this step wrote ("3 receives Release(ts=68) from 1"; checked by a
    /// test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_event: Option<String>,
    /// How many log lines up to this step contain some words (checked by a test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect_count: Option<ExpectCount>,
    /// Values in processes' state cards at this step (checked by a test).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_state: Vec<ExpectState>,
    /// Values of the outcome panel at this step: fields of the run's report so far, as `GET
    /// /api/session/ID/report` gives it (`multicast.balances.0`, `snapshot.snapshots.0.recorded_total`;
    /// checked by a test).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_report: Vec<ExpectReport>,
}

/// A value of the run's report so far.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExpectReport {
    /// Where in the report: field names and list positions, joined by dots.
    pub field: String,
    /// What is there.
    pub equals: serde_json::Value,
}

/// A value in a process's state card.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExpectState {
    /// The process.
    pub node: u32,
    /// Where in its state: field names and list positions, joined by dots (`token.q`,
    /// `vt.2`).
    pub field: String,
    /// What is there.
    pub equals: serde_json::Value,
}

/// A number of log lines.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExpectCount {
    /// The words the lines contain ("sends Election(").
    pub words: String,
    /// How many lines, from the start to this step.
    pub equals: usize,
}

/// The value at `field` (dotted names and list positions) in a process's state.
pub fn state_at<'a>(state: &'a serde_json::Value, field: &str) -> Option<&'a serde_json::Value> {
    field
        .split('.')
        .try_fold(state, |v, k| match k.parse::<usize>() {
            Ok(i) if v.is_array() => v.get(i),
            _ => v.get(k),
        })
}

/// A process and the badge it shows.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ExpectBadge {
    /// The process.
    pub node: u32,
    /// Its badge ("leader 6", "electing", "requesting", "in CS").
    pub badge: String,
}

/// Reads a lesson file, `name` naming it in errors: its steps in increasing order, a question
/// with an answer, an example that exists.
pub fn parse(name: &str, text: &str) -> Result<Lesson, String> {
    let lesson: Lesson = toml::from_str(text).map_err(|e| format!("lesson {name}: {e}"))?;
    if let Some(toml) = &lesson.scenario {
        distsync_sim::Scenario::from_toml(toml, name)
            .map_err(|e| format!("lesson {name}: `scenario`: {e}"))?;
    } else if !EXAMPLES.iter().any(|(n, _)| *n == lesson.example) {
        return Err(format!(
            "lesson {name}: `example`: no built-in scenario is called `{}`",
            lesson.example
        ));
    }
    for (i, s) in lesson.steps.iter().enumerate() {
        if i > 0 && s.at <= lesson.steps[i - 1].at {
            return Err(format!(
                "lesson {name}: `step[{i}].at`: steps go forward, {} does not follow {}",
                s.at,
                lesson.steps[i - 1].at
            ));
        }
        if s.question.is_some() != s.answer.is_some() {
            return Err(format!(
                "lesson {name}: `step[{i}]`: a question needs an answer and an answer a question"
            ));
        }
    }
    Ok(lesson)
}

/// The scenario text of a lesson: its own, or its built-in example's.
pub fn scenario_of(lesson: &Lesson) -> &str {
    match &lesson.scenario {
        Some(toml) => toml,
        None => EXAMPLES
            .iter()
            .find(|(n, _)| *n == lesson.example)
            .map(|(_, t)| *t)
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use distsync_sim::session::{Choice, Session};
    use distsync_sim::Scenario;

    /// Every lesson reads, and what it says the page shows at a step is what the page shows.
    #[test]
    fn every_lesson_is_true_to_its_run() {
        for (name, text) in LESSONS {
            let lesson = parse(name, text).unwrap();
            let scenario = Scenario::from_toml(scenario_of(&lesson), name).unwrap();
            let mut session = Session::new(&scenario, name).unwrap();
            for s in &lesson.steps {
                while session.view().step < s.at {
                    session
                        .apply(Choice::Next)
                        .unwrap_or_else(|e| panic!("{name}: step {} cannot be reached: {e}", s.at));
                }
                let view = session.view();
                if let Some(b) = &s.expect_badge {
                    let p = view.processes.iter().find(|p| p.id == b.node).unwrap();
                    assert_eq!(
                        p.badge.as_deref(),
                        Some(b.badge.as_str()),
                        "{name}, step {}: {}",
                        s.at,
                        s.text
                    );
                }
                if let Some(words) = &s.expect_event {
                    let all = session.view_window(0, usize::MAX).log;
                    let written: Vec<&str> = all
                        .iter()
                        .filter(|e| e.step == s.at)
                        .map(|e| e.label.as_str())
                        .collect();
                    assert!(
                        written.iter().any(|l| l.contains(words.as_str())),
                        "{name}, step {}: no log line {words:?} in {written:?}",
                        s.at
                    );
                }
                if let Some(c) = &s.expect_count {
                    let all = session.view_window(0, usize::MAX).log;
                    let n = all.iter().filter(|e| e.label.contains(&c.words)).count();
                    assert_eq!(
                        n, c.equals,
                        "{name}, step {}: lines with {:?}",
                        s.at, c.words
                    );
                }
                for x in &s.expect_state {
                    let p = view.processes.iter().find(|p| p.id == x.node).unwrap();
                    let state = serde_json::to_value(&p.state).unwrap();
                    assert_eq!(
                        state_at(&state, &x.field),
                        Some(&x.equals),
                        "{name}, step {}: P{} {} in {state}",
                        s.at,
                        x.node,
                        x.field
                    );
                }
                if !s.expect_report.is_empty() {
                    let report = crate::report_view::report_json(&session);
                    for x in &s.expect_report {
                        assert_eq!(
                            state_at(&report, &x.field),
                            Some(&x.equals),
                            "{name}, step {}: report {}",
                            s.at,
                            x.field
                        );
                    }
                }
                if let Some(v) = &s.expect_violation {
                    assert!(
                        view.violations.iter().any(|x| &x.property == v),
                        "{name}, step {}: no {v} in {:?}",
                        s.at,
                        view.violations
                    );
                }
            }
        }
    }

    #[test]
    fn bad_lessons_are_refused_naming_the_field() {
        let e = parse(
            "x",
            "title = \"t\"\nexample = \"nope\"\nintro = \"i\"\nstep = []\n",
        )
        .unwrap_err();
        assert!(e.contains("`example`"), "{e}");
        let e = parse(
            "x",
            "title = \"t\"\nexample = \"maekawa-deadlock\"\nintro = \"i\"\n\
             [[step]]\nat = 3\ntext = \"a\"\n[[step]]\nat = 2\ntext = \"b\"\n",
        )
        .unwrap_err();
        assert!(e.contains("step[1].at"), "{e}");
    }
}
