//! `distsync sweep`: one report metric against one scenario parameter, for several algorithms.
//!
//! The parameter is a path into the scenario (`nodes`, `network.loss`, `workload.cs`,
//! `workload.rate`...), set on the scenario's own serialized form, so every field a scenario file
//! has can be swept without a list kept here. The metric is a path into the report
//! (`mutex.messages_per_entry`, `mutex.sync_delay_ns.mean`, `messages.total`...); a bare name is
//! looked up at the top of the report, then in each family section.

use crate::{run, Report, RunOptions, Scenario};
use rayon::prelude::*;
use serde_json::Value;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A parameter and the values it takes.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamSpec {
    /// The path into the scenario, like `workload.rate`.
    pub path: String,
    /// The values, in order (numbers, or strings such as durations).
    pub values: Vec<Value>,
}

/// A sweep that cannot be made.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepError(pub String);

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SweepError {}

impl ParamSpec {
    /// Parses `path=LO..HI`, `path=LO..HI:STEP` (numbers) or `path=A,B,C` (numbers or strings).
    ///
    /// ```
    /// use distsync_sim::sweep::ParamSpec;
    /// let p = ParamSpec::parse("nodes=2..5").unwrap();
    /// assert_eq!(p.values.len(), 4);
    /// let p = ParamSpec::parse("network.loss=0..0.3:0.1").unwrap();
    /// assert_eq!(p.values.len(), 4);
    /// let p = ParamSpec::parse("workload.cs=1ms,5ms").unwrap();
    /// assert_eq!(p.values[1], serde_json::json!("5ms"));
    /// assert!(ParamSpec::parse("nodes").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<ParamSpec, SweepError> {
        let Some((path, values)) = text.split_once('=') else {
            return Err(SweepError(format!(
                "expected NAME=VALUES, like nodes=2..64 or workload.cs=1ms,5ms; got `{text}`"
            )));
        };
        let path = path.trim().to_string();
        if path.is_empty() {
            return Err(SweepError(
                "the parameter needs a name, like nodes or network.loss".into(),
            ));
        }
        let values = values.trim();
        let parsed = if let Some((lo, rest)) = values.split_once("..") {
            let (hi, step) = match rest.split_once(':') {
                Some((hi, step)) => (hi, Some(step)),
                None => (rest, None),
            };
            let number = |s: &str| {
                s.trim().parse::<f64>().map_err(|_| {
                    SweepError(format!("`{s}` in the range `{values}` is not a number"))
                })
            };
            let (lo, hi) = (number(lo)?, number(hi)?);
            let step = match step {
                Some(s) => number(s)?,
                None => 1.0,
            };
            if step.is_nan() || step <= 0.0 || lo > hi {
                return Err(SweepError(format!(
                    "the range `{values}` must go up from low to high by a positive step"
                )));
            }
            let count = ((hi - lo) / step + 1e-9).floor() as usize + 1;
            if count > 10_000 {
                return Err(SweepError(format!(
                    "the range `{values}` has {count} values; at most 10000"
                )));
            }
            let integral = lo.fract() == 0.0 && step.fract() == 0.0;
            (0..count)
                .map(|i| {
                    let v = lo + step * i as f64;
                    if integral {
                        Value::from(v as i64)
                    } else {
                        Value::from((v * 1e9).round() / 1e9)
                    }
                })
                .collect()
        } else {
            values
                .split(',')
                .map(|v| {
                    let v = v.trim();
                    match v.parse::<i64>() {
                        Ok(i) => Value::from(i),
                        Err(_) => match v.parse::<f64>() {
                            Ok(f) => Value::from(f),
                            Err(_) => Value::from(v),
                        },
                    }
                })
                .collect()
        };
        Ok(ParamSpec {
            path,
            values: parsed,
        })
    }
}

/// The scenario with the parameter at `path` set to `value`.
pub fn with_param(scenario: &Scenario, path: &str, value: &Value) -> Result<Scenario, SweepError> {
    let mut tree = serde_json::to_value(scenario).map_err(|e| SweepError(e.to_string()))?;
    let mut node = &mut tree;
    let parts: Vec<&str> = path.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(map) = node else {
            return Err(SweepError(format!(
                "`{}` is not a table in the scenario",
                parts[..i].join(".")
            )));
        };
        if i + 1 == parts.len() {
            map.insert(part.to_string(), value.clone());
            break;
        }
        let entry = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Default::default()));
        if entry.is_null() {
            *entry = Value::Object(Default::default());
        }
        node = entry;
    }
    serde_json::from_value(tree)
        .map_err(|e| SweepError(format!("cannot set `{path}` to {value}: {e}")))
}

/// The metric at `path` in a report: a dotted path, or a bare name found at the top or in a
/// family section.
pub fn metric(report: &Report, path: &str) -> Result<f64, SweepError> {
    let tree = serde_json::to_value(report).map_err(|e| SweepError(e.to_string()))?;
    let lookup = |root: &Value, path: &str| {
        path.split('.')
            .try_fold(root, |node, part| node.get(part))
            .cloned()
    };
    let found = lookup(&tree, path).or_else(|| {
        tree.as_object()?
            .values()
            .filter(|v| v.is_object())
            .find_map(|section| lookup(section, path))
    });
    match found {
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| SweepError(format!("`{path}` is not a number"))),
        Some(Value::Bool(b)) => Ok(if b { 1.0 } else { 0.0 }),
        Some(Value::Array(a)) => Ok(a.len() as f64),
        Some(Value::Object(o)) if o.contains_key("mean") => Ok(o["mean"].as_f64().unwrap_or(f64::NAN)),
        Some(other) => Err(SweepError(format!("`{path}` is {other}, not a number"))),
        None => Err(SweepError(format!(
            "the report has no `{path}` (try messages_per_entry, mutex.sync_delay_ns.p99, messages.total, events_processed)"
        ))),
    }
}

/// One point of a sweep.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Point {
    /// The algorithm.
    pub algorithm: String,
    /// The parameter's value.
    pub value: Value,
    /// The metric, averaged over the seeds.
    pub metric: f64,
    /// How many seeds were run.
    pub seeds: u64,
    /// Violations seen over those runs.
    pub violations: u64,
}

/// Runs every (algorithm, value, seed); `progress(done, total)` after each run. The runs are
/// spread over every core (rayon); the points come back in order, the same as on one thread.
pub fn sweep(
    base: &Scenario,
    algorithms: &[String],
    param: &ParamSpec,
    metric_path: &str,
    seeds: u64,
    mut progress: impl FnMut(usize, usize) + Send,
) -> Result<Vec<Point>, SweepError> {
    let total = algorithms.len() * param.values.len() * seeds as usize;
    let mut done = 0;
    sweep_observed(base, algorithms, param, metric_path, seeds, |_| {
        done += 1;
        progress(done, total)
    })
}

/// One finished run of a sweep, as [`sweep_observed`] tells it (for a progress display that
/// weighs runs by their work).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunDone {
    /// The point the run belongs to, an index into the points [`sweep`] returns: algorithm
    /// by algorithm, each over the parameter's values in order.
    pub point: usize,
    /// The events the run processed (the report's `events_processed`).
    pub events: u64,
}

/// [`sweep`], telling `progress` which point each finished run belongs to and how many events
/// it processed. The callback is called from whichever thread finished the run, one call at a
/// time; the points are the same as on one thread.
pub fn sweep_observed(
    base: &Scenario,
    algorithms: &[String],
    param: &ParamSpec,
    metric_path: &str,
    seeds: u64,
    progress: impl FnMut(RunDone) + Send,
) -> Result<Vec<Point>, SweepError> {
    let runs = sweep_runs(
        base,
        algorithms,
        param,
        metric_path,
        seeds,
        &|_| true,
        &AtomicBool::new(false),
        progress,
    );
    points(algorithms, param, seeds, &runs)
}

/// One run of a sweep, as [`sweep_runs`] returns it and a sharded sweep's results file keeps it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SweepRun {
    /// The run's index: point by point ([`RunDone::point`]), each over its seeds in order.
    pub run: u64,
    /// The metric the run measured (written as a string when not finite, which JSON numbers
    /// cannot be).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "any_float")]
    pub metric: Option<f64>,
    /// The violations the run saw.
    pub violations: u64,
    /// Why the run could not be made or measured, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An `f64` in JSON, NaN and the infinities included (as the strings "NaN", "inf", "-inf").
mod any_float {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Text {
        Number(f64),
        Word(String),
    }

    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(x) if x.is_finite() => Text::Number(*x).serialize(s),
            Some(x) => Text::Word(x.to_string()).serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        match Option::<Text>::deserialize(d)? {
            None => Ok(None),
            Some(Text::Number(x)) => Ok(Some(x)),
            Some(Text::Word(w)) => w
                .parse::<f64>()
                .map(Some)
                .map_err(|_| serde::de::Error::custom(format!("`{w}` is not a number"))),
        }
    }
}

/// Runs the runs of a sweep whose index `select` takes, in parallel: run `point * seeds + s` is
/// seed `s` of the point (algorithm by algorithm, each over the values in order), and depends on
/// nothing else, so a sweep splits into shards by run index. Once `stop` is set no further run
/// starts. The runs come back in index order; `progress` as in [`sweep_observed`].
#[allow(clippy::too_many_arguments)]
pub fn sweep_runs(
    base: &Scenario,
    algorithms: &[String],
    param: &ParamSpec,
    metric_path: &str,
    seeds: u64,
    select: &(dyn Fn(u64) -> bool + Sync),
    stop: &AtomicBool,
    mut progress: impl FnMut(RunDone) + Send,
) -> Vec<SweepRun> {
    let progress = Mutex::new(&mut progress);
    let plan: Vec<(&String, &Value)> = algorithms
        .iter()
        .flat_map(|a| param.values.iter().map(move |v| (a, v)))
        .collect();
    let runs: Vec<u64> = (0..plan.len() as u64 * seeds)
        .filter(|&r| select(r))
        .collect();
    let one = |&index: &u64| -> Option<SweepRun> {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let point = (index / seeds) as usize;
        let s = index % seeds;
        let (algorithm, value) = plan[point];
        let measured = (|| -> Result<(f64, u64, u64), SweepError> {
            let mut scenario = with_param(base, &param.path, value)?;
            scenario.algorithm = algorithm.clone();
            let report = run(
                &scenario,
                RunOptions {
                    seed: Some(scenario.seed + s),
                    origin: format!("sweep {algorithm} {}={value}", param.path),
                    ..RunOptions::default()
                },
            )
            .map_err(|e| SweepError(e.to_string()))?;
            let m = metric(&report, metric_path)?;
            Ok((m, report.violations.len() as u64, report.events_processed))
        })();
        Some(match measured {
            Ok((m, violations, events)) => {
                if let Ok(mut progress) = progress.lock() {
                    (*progress)(RunDone { point, events });
                }
                SweepRun {
                    run: index,
                    metric: Some(m),
                    violations,
                    error: None,
                }
            }
            Err(e) => SweepRun {
                run: index,
                metric: None,
                violations: 0,
                error: Some(e.0),
            },
        })
    };
    runs.par_iter()
        .map(one)
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .collect()
}

/// The points of a sweep from its runs, in any order (those of every shard of a split sweep):
/// each point's metric averaged over its seeds in order, so the points are the same as
/// [`sweep`] gives. On an error, the first one in the plan's order; runs that are not exactly
/// the sweep's, each once, are refused.
pub fn points(
    algorithms: &[String],
    param: &ParamSpec,
    seeds: u64,
    runs: &[SweepRun],
) -> Result<Vec<Point>, SweepError> {
    gather(algorithms, param, seeds, runs, false)
}

/// The points of a sweep cut short whose every seed has run, in order (the others are left out;
/// an error as in [`points`]).
pub fn points_made(
    algorithms: &[String],
    param: &ParamSpec,
    seeds: u64,
    runs: &[SweepRun],
) -> Result<Vec<Point>, SweepError> {
    gather(algorithms, param, seeds, runs, true)
}

fn gather(
    algorithms: &[String],
    param: &ParamSpec,
    seeds: u64,
    runs: &[SweepRun],
    partial: bool,
) -> Result<Vec<Point>, SweepError> {
    let count = algorithms.len() as u64 * param.values.len() as u64 * seeds;
    let mut slots: Vec<Option<&SweepRun>> = vec![None; count as usize];
    for r in runs {
        let Some(slot) = slots.get_mut(r.run as usize) else {
            return Err(SweepError(format!(
                "run {}, past the sweep's {count} runs",
                r.run
            )));
        };
        if slot.is_some() {
            return Err(SweepError(format!("run {} twice", r.run)));
        }
        *slot = Some(r);
    }
    if !partial {
        if let Some(i) = slots.iter().position(Option::is_none) {
            let missing = slots.iter().filter(|r| r.is_none()).count();
            return Err(SweepError(format!(
                "{missing} run{} of {count} missing (the first: run {i})",
                if missing == 1 { "" } else { "s" }
            )));
        }
    }
    let mut out = Vec::new();
    'points: for (point, (algorithm, value)) in algorithms
        .iter()
        .flat_map(|a| param.values.iter().map(move |v| (a, v)))
        .enumerate()
    {
        let (mut sum, mut violations) = (0.0, 0);
        for s in 0..seeds {
            let Some(r) = slots[(point as u64 * seeds + s) as usize] else {
                continue 'points;
            };
            if let Some(e) = &r.error {
                return Err(SweepError(e.clone()));
            }
            sum += r.metric.unwrap_or(f64::NAN);
            violations += r.violations;
        }
        out.push(Point {
            algorithm: algorithm.clone(),
            value: value.clone(),
            metric: sum / seeds as f64,
            seeds,
            violations,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Scenario {
        Scenario::from_toml(
            "algorithm = \"ricart-agrawala\"\nnodes = 3\n[network]\ndelay = \"1ms\"\n[workload]\nkind = \"light\"\nrequests = 2",
            "t",
        )
        .unwrap()
    }

    #[test]
    fn parameters_are_set_by_path_and_checked_by_the_scenario_types() {
        let s = with_param(&base(), "nodes", &Value::from(7)).unwrap();
        assert_eq!(s.nodes, Some(7));
        let s = with_param(&base(), "network.loss", &Value::from(0.25)).unwrap();
        assert_eq!(s.network.loss, 0.25);
        let s = with_param(&base(), "workload.cs", &Value::from("3ms")).unwrap();
        assert_eq!(s.workload.unwrap().cs, std::time::Duration::from_millis(3));
        let e = with_param(&base(), "network.fifoo", &Value::from(true)).unwrap_err();
        assert!(e.0.contains("unknown field `fifoo`"), "{e}");
        let e = with_param(&base(), "workload.cs", &Value::from(3)).unwrap_err();
        assert!(e.0.contains("add a unit"), "{e}");
    }

    #[test]
    fn messages_per_entry_against_nodes_follows_2_n_minus_1() {
        let p = ParamSpec::parse("nodes=2..6").unwrap();
        let points = sweep(
            &base(),
            &["ricart-agrawala".into()],
            &p,
            "messages_per_entry",
            1,
            |_, _| {},
        )
        .unwrap();
        let got: Vec<f64> = points.iter().map(|p| p.metric).collect();
        assert_eq!(got, vec![2.0, 4.0, 6.0, 8.0, 10.0]);
        let e = sweep(
            &base(),
            &["ricart-agrawala".into()],
            &p,
            "no_such_metric",
            1,
            |_, _| {},
        )
        .unwrap_err();
        assert!(e.0.contains("no `no_such_metric`"), "{e}");
    }
}
