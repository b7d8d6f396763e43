//! The quiz: questions about the run at its current step, at three levels (as the virtual labs
//! grade them), whose right answers the server computes from the run itself and never sends
//! with the question:
//!
//! - **observe**: what the drawing shows now (who is in the critical section, who holds the
//!   token, whom each process takes for leader); the page hides the state cards, the pending
//!   table and the log while it asks, so the answer is read off the drawing;
//! - **predict**: what happens next, read off a copy of the run taken forward by Step (the
//!   recorded choices first, then the earliest pending event), at most [`LOOK_AHEAD`] steps:
//!   who enters the critical section next, what Suzuki-Kasami's LN is after the coming release,
//!   who becomes leader, which message in flight the receiver will hold back (causal and
//!   total-order broadcast), whether the snapshot under way will conserve the money, by how
//!   much the next process to correct its clock corrects it (Cristian, Berkeley, NTP), which
//!   clock is furthest from true time once the next round is complete;
//! - **explain**: which rule of the algorithm's file the latest step applied (the rule panel,
//!   [`crate::rules`], hidden while asked).
//!
//! A question is identified by its step, level and kind: the answer is marked against the run
//! at that step, so a page whose run moved on is told so instead of being marked.

use crate::rules;
use distsync_sim::session::{Choice, Session, View};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How many steps a prediction looks ahead at most.
pub const LOOK_AHEAD: usize = 400;

/// A quiz level.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// What the drawing shows now.
    Observe,
    /// What happens next.
    Predict,
    /// Why the latest step did what it did.
    Explain,
}

/// A question as the page shows it: never with its answer.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Question {
    /// The step it is about (the session's step when asked).
    pub step: usize,
    /// Its level.
    pub level: Level,
    /// What it asks, as a word: "enters-next", "ln-after-release", "leader-next", "held-back",
    /// "conserves", "adjust-next", "furthest-after-round", "in-cs", "token", "leader", "rule".
    pub kind: &'static str,
    /// The question.
    pub text: String,
    /// The answers to choose from.
    pub options: Vec<String>,
    /// What the page hides while the question is asked (it would give the answer away):
    /// "pending", "labels", "states", "log", "rule", "outcome".
    pub hide: Vec<&'static str>,
    /// Predict: the step at which Step shows the answer (so the page asks each prediction
    /// once); absent for the other levels, which are about the step asked at, and for the
    /// held-back message, which shows when that message is delivered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reveal_at: Option<usize>,
}

/// The right answer to a question.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Answer {
    /// The options that are right (one, or several when several are: two messages that will
    /// both be held back).
    pub right: Vec<String>,
    /// Why, in words, from the run.
    pub why: String,
}

/// The question of `level` for the run at its current step, with its answer; `Err` says why
/// there is none now (nothing decisive ahead, no rule applied at this step...).
pub fn question(session: &Session, level: Level) -> Result<(Question, Answer), String> {
    let view = session.view_window(0, 0);
    let made = match level {
        Level::Observe => observe(&view),
        Level::Predict => predict(session, &view),
        Level::Explain => explain(session, &view),
    }?;
    let (kind, text, options, hide, answer, reveal_at) = made;
    Ok((
        Question {
            step: view.step,
            level,
            kind,
            text,
            options,
            hide,
            reveal_at,
        },
        answer,
    ))
}

/// A question's kind, text, options, what to hide, answer and (predict) when it shows.
type Made = (
    &'static str,
    String,
    Vec<String>,
    Vec<&'static str>,
    Answer,
    Option<usize>,
);

fn process_options(view: &View) -> Vec<String> {
    view.ids.iter().map(|id| format!("P{id}")).collect()
}

/// What the page can ask of each family, one line per family: an observe question (read off
/// the drawing) if the family has one, and a predict question (what Step will do). A family
/// without a line has no quiz yet, and the page says so.
struct FamilyQuiz {
    family: &'static str,
    observe: Option<ObserveQuestion>,
    predict: PredictQuestion,
}

/// A question of the observe level: the view and what to hide while it is asked.
type ObserveQuestion = fn(&View, Vec<&'static str>) -> Result<Made, String>;

/// A question of the predict level: the session (to step ahead on a copy) and the view.
type PredictQuestion = fn(&Session, &View, Vec<&'static str>) -> Result<Made, String>;

const QUIZZES: &[FamilyQuiz] = &[
    FamilyQuiz {
        family: "mutex",
        observe: Some(observe_mutex),
        predict: predict_mutex,
    },
    FamilyQuiz {
        family: "election",
        observe: Some(observe_election),
        predict: predict_election,
    },
    FamilyQuiz {
        family: "clock-sync",
        observe: None,
        predict: predict_clock,
    },
    FamilyQuiz {
        family: "multicast",
        observe: None,
        predict: held_back,
    },
    FamilyQuiz {
        family: "snapshot",
        observe: None,
        predict: conserves,
    },
];

fn quiz_of(family: &str) -> Option<&'static FamilyQuiz> {
    QUIZZES.iter().find(|q| q.family == family)
}

/// Observe: the state now, read off the drawing.
fn observe(view: &View) -> Result<Made, String> {
    let hide = vec!["states", "pending", "log", "rule", "outcome"];
    match quiz_of(view.family).and_then(|q| q.observe) {
        Some(ask) => ask(view, hide),
        None => Err(format!(
            "no observe question for the {} family: try predict",
            view.family
        )),
    }
}

/// Mutual exclusion, observed: who holds the token, or who is in the critical section.
fn observe_mutex(view: &View, hide: Vec<&'static str>) -> Result<Made, String> {
    let token: Vec<u32> = view
        .processes
        .iter()
        .filter(|p| p.holds_token == Some(true))
        .map(|p| p.id)
        .collect();
    if view.processes.iter().any(|p| p.holds_token.is_some()) {
        let mut options = process_options(view);
        options.push("none: it is on its way".into());
        let right = match token.as_slice() {
            [] => vec!["none: it is on its way".to_string()],
            ids => ids.iter().map(|id| format!("P{id}")).collect(),
        };
        let why = match token.as_slice() {
            [] => "no process's state holds the token: it travels in a Token message".to_string(),
            ids => format!(
                "the state of {} holds the token (the yellow T)",
                ids.iter()
                    .map(|id| format!("P{id}"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
        };
        return Ok((
            "token",
            "Which process holds the token now?".into(),
            options,
            hide,
            Answer { right, why },
            None,
        ));
    }
    let inside: Vec<u32> = view
        .processes
        .iter()
        .filter(|p| p.badge.as_deref() == Some("in CS"))
        .map(|p| p.id)
        .collect();
    let mut options = process_options(view);
    options.push("nobody".into());
    let right = if inside.is_empty() {
        vec!["nobody".to_string()]
    } else {
        inside.iter().map(|id| format!("P{id}")).collect()
    };
    let why = if inside.is_empty() {
        "no process is in the critical section".to_string()
    } else {
        format!(
            "{} in the critical section",
            inside
                .iter()
                .map(|id| format!("P{id}"))
                .collect::<Vec<_>>()
                .join(" and ")
                + if inside.len() == 1 { " is" } else { " are" }
        )
    };
    Ok((
        "in-cs",
        "Which process is in the critical section now?".into(),
        options,
        hide,
        Answer { right, why },
        None,
    ))
}

/// Leader election, observed: whom the processes take for leader.
fn observe_election(view: &View, hide: Vec<&'static str>) -> Result<Made, String> {
    let leaders: Vec<u32> = view
        .processes
        .iter()
        .filter_map(|p| p.badge.as_deref()?.strip_prefix("leader ")?.parse().ok())
        .collect();
    let Some(&first) = leaders.first() else {
        return Err("no process names a leader yet: step on until one does".into());
    };
    let mut options = process_options(view);
    options.push("they disagree".into());
    let agree = leaders.iter().all(|&l| l == first);
    let right = if agree {
        vec![format!("P{first}")]
    } else {
        vec!["they disagree".to_string()]
    };
    let why = if agree {
        format!("every process that names a leader names {first} (the badges)")
    } else {
        "the badges name different leaders".to_string()
    };
    Ok((
        "leader",
        "Which process do the processes take for leader now?".into(),
        options,
        hide,
        Answer { right, why },
        None,
    ))
}

/// The run taken forward by Step from here, on a copy: the recorded choices ahead first (as
/// Step follows them), then the earliest pending event.
struct Ahead {
    copy: Session,
    rest: Vec<Choice>,
}

impl Ahead {
    fn new(session: &Session) -> Result<Ahead, String> {
        let copy = Session::replay(session.scenario(), "quiz", session.choices())
            .map_err(|e| e.to_string())?;
        let rest = session.recorded()[session.choices().len()..].to_vec();
        Ok(Ahead { copy, rest })
    }

    /// One Step: the log lines it wrote, or `None` once the run is over.
    fn step(&mut self) -> Option<Vec<Value>> {
        let choice = if self.rest.is_empty() {
            Choice::Next
        } else {
            self.rest.remove(0)
        };
        let applied = self.copy.apply(choice).ok()?;
        Some(applied.log.into_iter().map(|e| e.line).collect())
    }
}

fn output_of<'a>(line: &'a Value, key: &str) -> Option<&'a Value> {
    (line.get("event")?.as_str()? == "output")
        .then(|| line.get("output"))
        .flatten()
        .and_then(|o| if key.is_empty() { Some(o) } else { o.get(key) })
}

/// Predict: what Step will make happen.
fn predict(session: &Session, view: &View) -> Result<Made, String> {
    let hide = vec!["pending", "labels", "log", "rule", "outcome"];
    match quiz_of(view.family) {
        Some(quiz) => (quiz.predict)(session, view, hide),
        None => Err(format!(
            "no predict question for the {} family",
            view.family
        )),
    }
}

/// Mutual exclusion, predicted: LN after this release (Suzuki-Kasami), else who enters next.
fn predict_mutex(session: &Session, view: &View, hide: Vec<&'static str>) -> Result<Made, String> {
    if view.algorithm == "suzuki-kasami" {
        if let Some(made) = ln_after_release(session, view, &hide)? {
            return Ok(made);
        }
    }
    let mut ahead = Ahead::new(session)?;
    for _ in 0..LOOK_AHEAD {
        let Some(lines) = ahead.step() else { break };
        for l in &lines {
            if output_of(l, "").and_then(Value::as_str) == Some("Enter") {
                let id = l["node"].as_u64().unwrap_or_default();
                return Ok((
                    "enters-next",
                    "Which process enters the critical section next?".into(),
                    process_options(view),
                    hide,
                    Answer {
                        right: vec![format!("P{id}")],
                        why: format!("P{id} enters at step {}", ahead.copy.choices().len()),
                    },
                    Some(ahead.copy.choices().len()),
                ));
            }
        }
    }
    Err("no process enters the critical section in the steps ahead".into())
}

/// Leader election, predicted: who announces itself leader next.
fn predict_election(
    session: &Session,
    view: &View,
    hide: Vec<&'static str>,
) -> Result<Made, String> {
    let mut ahead = Ahead::new(session)?;
    for _ in 0..LOOK_AHEAD {
        let Some(lines) = ahead.step() else { break };
        for l in &lines {
            // The next process to announce itself leader (the others then hear of it).
            let leader = output_of(l, "Leader").and_then(Value::as_u64);
            if let Some(leader) = leader.filter(|&x| l["node"].as_u64() == Some(x)) {
                return Ok((
                    "leader-next",
                    "Which process becomes leader next?".into(),
                    process_options(view),
                    hide,
                    Answer {
                        right: vec![format!("P{leader}")],
                        why: format!(
                            "at step {}, P{leader} announces itself leader",
                            ahead.copy.choices().len(),
                        ),
                    },
                    Some(ahead.copy.choices().len()),
                ));
            }
        }
    }
    Err("no leader is named in the steps ahead".into())
}

/// Clock synchronization, predicted: alternately by step, the two clock questions (each falls
/// back on the other).
fn predict_clock(session: &Session, view: &View, hide: Vec<&'static str>) -> Result<Made, String> {
    // Alternately by step, the two clock questions (each falls back on the other).
    let (first, second): (PredictQuestion, PredictQuestion) = if view.step.is_multiple_of(2) {
        (adjust_next, furthest_after_round)
    } else {
        (furthest_after_round, adjust_next)
    };
    let mut hide = hide;
    hide.push("states");
    first(session, view, hide.clone())
        .or_else(|e| second(session, view, hide).map_err(|e2| format!("{e}; {e2}")))
}

/// The `Adjust` output of a trace line: (node, correction in ns).
fn adjust_of(line: &Value) -> Option<(u64, i64)> {
    let delta = output_of(line, "Adjust")?.get("delta_ns")?.as_i64()?;
    Some((line["node"].as_u64()?, delta))
}

/// Clock synchronization: which correction will the next process to correct its clock apply?
/// The options are the right one, its opposite (the sign of the offset), the corrections the
/// same step sends to the others (Berkeley's master), and, for Cristian's client, the estimate
/// without its RTT/2 (T minus its own reading).
fn adjust_next(session: &Session, _view: &View, hide: Vec<&'static str>) -> Result<Made, String> {
    let mut ahead = Ahead::new(session)?;
    for _ in 0..LOOK_AHEAD {
        let before = ahead.copy.view_window(0, 0);
        let Some(lines) = ahead.step() else { break };
        let Some((node, delta)) = lines.iter().find_map(adjust_of) else {
            continue;
        };
        let mut values = vec![delta, -delta];
        // The corrections the same step sends to other processes (Berkeley's master).
        values.extend(lines.iter().filter_map(|l| {
            (l["event"] == "send")
                .then(|| l.pointer("/msg/Adjust/delta_ns")?.as_i64())
                .flatten()
        }));
        // Cristian: the estimate T + RTT/2 of the sample kept, without the RTT/2.
        let rtt = before
            .processes
            .iter()
            .find(|p| u64::from(p.id) == node)
            .and_then(|p| p.state.pointer("/best/rtt")?.as_u64());
        if let Some(rtt) = rtt {
            values.push(delta - (rtt / 2) as i64);
        }
        values.sort_unstable();
        values.dedup();
        if values.len() < 2 {
            return Err("the next correction has nothing to tell it from: step on".into());
        }
        let step = ahead.copy.choices().len();
        let mut why = format!(
            "at step {step}, P{node} corrects its clock by {}",
            ns_words(delta)
        );
        if let Some(rtt) = rtt {
            why.push_str(&format!(
                " (the server's T plus half the round trip RTT/2 = {}, minus its own reading)",
                ns_words((rtt / 2) as i64)
            ));
        }
        return Ok((
            "adjust-next",
            format!(
                "P{node} is the next process to correct its clock. By how much will it correct it?"
            ),
            values.into_iter().map(ns_words).collect(),
            hide,
            Answer {
                right: vec![ns_words(delta)],
                why,
            },
            Some(step),
        ));
    }
    Err(
        "no clock is corrected in the steps ahead: start a synchronization (a process's menu)"
            .into(),
    )
}

/// Clock synchronization: once the next round completes and the corrections it sent are
/// applied, which clock is furthest from true time (the outcome panel's clocks then)?
fn furthest_after_round(
    session: &Session,
    view: &View,
    hide: Vec<&'static str>,
) -> Result<Made, String> {
    let mut ahead = Ahead::new(session)?;
    let mut round_at = None;
    // The corrections sent by the round's last step, by receiver, still to be applied.
    let mut waiting: Vec<u64> = Vec::new();
    for _ in 0..LOOK_AHEAD {
        let Some(lines) = ahead.step() else { break };
        if round_at.is_none() {
            if lines.iter().any(|l| output_of(l, "Round").is_some()) {
                round_at = Some(ahead.copy.choices().len());
                waiting = lines
                    .iter()
                    .filter(|l| l["event"] == "send" && l.pointer("/msg/Adjust").is_some())
                    .filter_map(|l| l["to"].as_u64())
                    .collect();
            }
        } else {
            for (node, _) in lines.iter().filter_map(adjust_of) {
                if let Some(k) = waiting.iter().position(|&w| w == node) {
                    waiting.remove(k);
                }
            }
        }
        if round_at.is_some() && waiting.is_empty() {
            let step = ahead.copy.choices().len();
            let report = crate::report_view::report_json(&ahead.copy);
            let clocks: Vec<(u64, i64)> = report
                .pointer("/clock/clocks")
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| Some((c["node"].as_u64()?, c["error_ns"].as_i64()?)))
                        .collect()
                })
                .unwrap_or_default();
            let Some(worst) = clocks.iter().map(|(_, e)| e.unsigned_abs()).max() else {
                return Err("the report names no clock".into());
            };
            let right: Vec<String> = clocks
                .iter()
                .filter(|(_, e)| e.unsigned_abs() == worst)
                .map(|(n, _)| format!("P{n}"))
                .collect();
            let readings: Vec<String> = clocks
                .iter()
                .map(|(n, e)| format!("P{n} {}", ns_words(*e)))
                .collect();
            return Ok((
                "furthest-after-round",
                "Once the next synchronization round is complete and its corrections applied, which clock is furthest from true time?".into(),
                process_options(view),
                hide,
                Answer {
                    right,
                    why: format!(
                        "at step {step} (the round completed at step {}), the clocks read, against true time: {}",
                        round_at.unwrap_or(step),
                        readings.join(", ")
                    ),
                },
                Some(step),
            ));
        }
    }
    Err(
        "no synchronization round completes in the steps ahead: start one (a process's menu)"
            .into(),
    )
}

/// Suzuki-Kasami: when the next step is the token holder's release, LN after it.
fn ln_after_release(
    session: &Session,
    view: &View,
    hide: &[&'static str],
) -> Result<Option<Made>, String> {
    let mut ahead = Ahead::new(session)?;
    let lines = ahead.step().unwrap_or_default();
    let Some(node) = lines
        .iter()
        .find(|l| l["event"] == "input" && l["input"] == "Release")
        .and_then(|l| l["node"].as_u64())
    else {
        return Ok(None);
    };
    let holder = view.processes.iter().find(|p| u64::from(p.id) == node);
    let Some(ln_before) = holder.and_then(|p| p.state.pointer("/token/ln")).cloned() else {
        return Ok(None);
    };
    // After the release the token is still at the holder (nobody waits), or in the Token
    // message it sent.
    let after = ahead.copy.view_window(0, 0);
    let ln_after = after
        .processes
        .iter()
        .find(|p| u64::from(p.id) == node)
        .and_then(|p| p.state.pointer("/token/ln").cloned())
        .or_else(|| {
            lines.iter().find_map(|l| {
                (l["event"] == "send").then(|| l.pointer("/msg/Token/ln").cloned())?
            })
        });
    let Some(ln_after) = ln_after else {
        return Ok(None);
    };
    let text = |v: &Value| v.to_string().replace(',', ", ");
    let mut options = vec![text(&ln_before), text(&ln_after)];
    // A third option: RN itself, a common confusion of the two arrays.
    if let Some(rn) = holder.and_then(|p| p.state.get("rn")) {
        options.push(text(rn));
    }
    options.sort();
    options.dedup();
    if options.len() < 2 {
        return Ok(None);
    }
    Ok(Some((
        "ln-after-release",
        format!(
            "P{node} is about to leave the critical section. What is the token's LN after this release?"
        ),
        options,
        hide.to_vec(),
        Answer {
            right: vec![text(&ln_after)],
            why: format!(
                "rule 4: LN[{node}] := RN_{node}[{node}], the other entries unchanged: LN = {}",
                text(&ln_after)
            ),
        },
        Some(view.step + 1),
    )))
}

/// Causal and total-order broadcast: which message in flight will its receiver hold back?
fn held_back(session: &Session, view: &View, hide: Vec<&'static str>) -> Result<Made, String> {
    let deliveries: Vec<_> = view
        .pending
        .iter()
        .filter(|p| p.kind == "deliver" && !p.link)
        .collect();
    if deliveries.len() < 2 {
        return Err("fewer than two messages in flight: step on".into());
    }
    let mut options = Vec::new();
    let mut right = Vec::new();
    for p in &deliveries {
        let name = format!(
            "{} from P{} to P{}",
            p.what.as_deref().unwrap_or(p.label.as_str()),
            p.from.unwrap_or_default(),
            p.to.unwrap_or_default()
        );
        let mut copy = Session::replay(session.scenario(), "quiz", session.choices())
            .map_err(|e| e.to_string())?;
        let applied = copy
            .apply(Choice::Event { id: p.id })
            .map_err(|e| e.to_string())?;
        let delivered = applied
            .log
            .iter()
            .any(|e| output_of(&e.line, "Deliver").is_some());
        if !delivered {
            right.push(name.clone());
        }
        if !options.contains(&name) {
            options.push(name);
        }
    }
    if right.is_empty() {
        return Err("every message in flight would be delivered at once: step on".into());
    }
    options.push("none of them".into());
    let why = format!(
        "delivered now, {} would wait in the receiver's buffer: something it depends on has not been delivered there yet",
        right.join(" and ")
    );
    Ok((
        "held-back",
        "Which message in flight will its receiver hold back (not deliver at once)?".into(),
        options,
        hide,
        Answer { right, why },
        None,
    ))
}

/// Snapshots: will the snapshot under way (or the next one) conserve the money?
fn conserves(session: &Session, _view: &View, hide: Vec<&'static str>) -> Result<Made, String> {
    let done_now = completed(&crate::report_view::report_json(session));
    let mut ahead = Ahead::new(session)?;
    for _ in 0..LOOK_AHEAD {
        if ahead.step().is_none() {
            break;
        }
        let report = crate::report_view::report_json(&ahead.copy);
        let done = completed(&report);
        if done.len() > done_now.len() {
            let x = &done[done_now.len()];
            let money = report
                .pointer("/snapshot/money")
                .cloned()
                .unwrap_or_default();
            let total = x["recorded_total"].clone();
            let yes = total == money;
            return Ok((
                "conserves",
                format!(
                    "Snapshot {} of P{}: will the balances it records plus the money it finds in the channels add up to the bank's total?",
                    x["number"], x["initiator"]
                ),
                vec!["yes".into(), "no".into()],
                hide,
                Answer {
                    right: vec![if yes { "yes" } else { "no" }.into()],
                    why: format!(
                        "it records {total} against the bank's {money}{}",
                        if yes {
                            ": conserved"
                        } else {
                            ": a marker overtook money on a link that is not FIFO"
                        }
                    ),
                },
                Some(ahead.copy.choices().len()),
            ));
        }
    }
    Err("no snapshot completes in the steps ahead: start one (a process's menu)".into())
}

fn completed(report: &Value) -> Vec<Value> {
    report
        .pointer("/snapshot/snapshots")
        .and_then(Value::as_array)
        .map(|xs| {
            xs.iter()
                .filter(|x| !x["completed_ns"].is_null())
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Explain: which rule of the file did the latest step apply?
fn explain(session: &Session, view: &View) -> Result<Made, String> {
    let Some(file) = rules::file_of(&view.algorithm) else {
        return Err(format!(
            "{}'s handlers name no rules: no explain question",
            view.algorithm
        ));
    };
    let Some(rule) = session.view_window(0, 0).rule else {
        return Err("the latest step applied no rule of the file: step on".into());
    };
    let all = rules::rules_of(&view.algorithm);
    let label = |l: &str| -> String {
        let text = all
            .iter()
            .find(|(x, _)| x == l)
            .map(|(_, t)| t.as_str())
            .unwrap_or("");
        let short: String = text.chars().take(70).collect();
        format!(
            "{l}. {short}{}",
            if text.chars().count() > 70 { "…" } else { "" }
        )
    };
    let options: Vec<String> = all.iter().map(|(l, _)| label(l)).collect();
    let right: Vec<String> = rule.rules.iter().map(|l| label(l)).collect();
    Ok((
        "rule",
        format!(
            "Which rule of crates/algorithms/src/{file} did P{} apply at step {}?",
            rule.node, view.step
        ),
        options,
        vec!["rule"],
        Answer {
            why: format!("P{} applied rule {}", rule.node, rule.rules.join(" and ")),
            right,
        },
        None,
    ))
}

/// A signed duration in words, exact to the nanosecond: "+1.25 ms", "-300 us", "0".
pub fn ns_words(ns: i64) -> String {
    if ns == 0 {
        return "0".into();
    }
    let sign = if ns < 0 { "-" } else { "+" };
    let abs = ns.unsigned_abs();
    let (unit, per) = if abs >= 1_000_000_000 {
        ("s", 1_000_000_000u64)
    } else if abs >= 1_000_000 {
        ("ms", 1_000_000)
    } else if abs >= 1_000 {
        ("us", 1_000)
    } else {
        ("ns", 1)
    };
    let whole = abs / per;
    let frac = abs % per;
    if frac == 0 {
        return format!("{sign}{whole} {unit}");
    }
    let digits = per.ilog10() as usize;
    let frac = format!("{frac:0digits$}");
    format!("{sign}{whole}.{} {unit}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::ns_words;

    #[test]
    fn durations_are_written_exactly_in_the_largest_unit() {
        assert_eq!(ns_words(0), "0");
        assert_eq!(ns_words(31_497_918), "+31.497918 ms");
        assert_eq!(ns_words(-30_194_653), "-30.194653 ms");
        assert_eq!(ns_words(1_250_000), "+1.25 ms");
        assert_eq!(ns_words(-300_000), "-300 us");
        assert_eq!(ns_words(1_500), "+1.5 us");
        assert_eq!(ns_words(999), "+999 ns");
        assert_eq!(ns_words(2_000_000_001), "+2.000000001 s");
        assert_eq!(ns_words(i64::MIN), "-9223372036.854775808 s");
    }
}
