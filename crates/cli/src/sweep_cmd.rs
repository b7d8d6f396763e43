//! `distsync sweep`: any report metric against any scenario parameter, several algorithms on one
//! chart.

use crate::progress::{Progress, Work};
use crate::shard::Shard;
use crate::{InputError, Outcome};
use distsync_sim::sweep::{
    points, points_made, sweep_runs, with_param, ParamSpec, Point, RunDone, SweepRun,
};
use distsync_sim::{Scenario, WorkloadKind, WorkloadSpec};
use distsync_viz::plot::{figure, Figure, Panel, Series};
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `distsync sweep`.
#[derive(clap::Args)]
pub struct SweepArgs {
    /// Algorithms, comma-separated (registry names).
    #[arg(long, value_delimiter = ',', required_unless_present = "merge")]
    algo: Vec<String>,
    /// The scenario parameter and its values: nodes=2..64, network.loss=0..0.2:0.05,
    /// workload.cs=1ms,5ms,10ms (any field of a scenario file, by its dotted path).
    #[arg(long, required_unless_present = "merge")]
    param: Option<String>,
    /// The report figure to plot: messages_per_entry, sync_delay_ns.p99, messages.total, ...
    /// (a dotted path into the JSON report, or a name in a family section).
    #[arg(long, default_value = "messages_per_entry")]
    metric: String,
    /// The scenario to start from (default: heavy load, 5 nodes, T = 1ms, E = 10ms, 10 requests
    /// per node).
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Seeds per point (the metric is averaged over seeds 1..=K of the scenario's seed).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::output::whole::<u64>, default_value_t = 1)]
    seeds: u64,
    /// Print JSON points instead of a table.
    #[arg(long)]
    json: bool,
    /// Draw the metric against the parameter to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Make only shard K of N of the sweep (the runs whose index, point by point and seed by
    /// seed, is K-1 modulo N) and print its results file (JSON) for `--merge`; exit 0 whatever
    /// the runs saw, the merge tells. See docs/stress.md.
    #[arg(long, value_name = "K/N", value_parser = crate::shard::parse,
          conflicts_with_all = ["json", "plot"])]
    shard: Option<Shard>,
    /// Merge the results files of every shard of a sweep (`--shard`): print (and draw, with
    /// `--plot`) what the unsharded sweep does, byte for byte, and exit as it exits. The sweep
    /// comes from the files.
    #[arg(long, value_name = "FILE", num_args = 1..,
          conflicts_with_all = ["algo", "param", "metric", "scenario", "seeds", "shard"])]
    merge: Vec<PathBuf>,
}

/// What decides a sweep's runs, as a results file of a shard keeps it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Campaign {
    algo: Vec<String>,
    param: String,
    metric: String,
    seeds: u64,
    /// The scenario file as given (the plot's title names it).
    scenario_file: Option<PathBuf>,
    /// The scenario itself, so that shards run on different files do not merge.
    scenario: serde_json::Value,
}

fn default_base() -> Scenario {
    Scenario {
        nodes: Some(5),
        until: Some(Duration::from_secs(3600)),
        workload: Some(WorkloadSpec {
            kind: WorkloadKind::Saturated,
            rate: None,
            cs: Duration::from_millis(10),
            requests: Some(10),
            gap: None,
        }),
        ..Scenario::default()
    }
}

pub fn sweep_cmd(mut args: SweepArgs) -> Result<Outcome, InputError> {
    if let Some(path) = &args.plot {
        crate::output::check_output_path("--plot", path)?;
    }
    if !args.merge.is_empty() {
        let (campaign, runs): (Campaign, Vec<SweepRun>) = crate::shard::read("sweep", &args.merge)?;
        args.algo = campaign.algo;
        args.param = Some(campaign.param);
        args.metric = campaign.metric;
        args.seeds = campaign.seeds;
        args.scenario = campaign.scenario_file;
        let text = args.param.clone().unwrap_or_default();
        let param =
            ParamSpec::parse(&text).map_err(|e| format!("--merge: the sweep's --param: {e}"))?;
        let points =
            points(&args.algo, &param, args.seeds, &runs).map_err(|e| format!("--merge: {e}"))?;
        return report(&args, &param, points);
    }
    let param_text = args.param.clone().unwrap_or_default();
    let param = ParamSpec::parse(&param_text).map_err(|e| format!("--param: {e}"))?;
    if param.path == "algorithm" {
        for v in &param.values {
            let name = v.as_str().unwrap_or_default();
            if distsync_algorithms::registry::lookup(name).is_none() {
                let hint = distsync_algorithms::registry::suggest(name)
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                return Err(InputError(format!(
                    "--param: unknown algorithm `{}`{hint} (`distsync list` shows every algorithm)",
                    v.as_str().map_or(v.to_string(), str::to_string)
                )));
            }
        }
    }
    if args.seeds == 0 {
        return Err(InputError("--seeds: expected at least 1".into()));
    }
    for name in &args.algo {
        if distsync_algorithms::registry::lookup(name).is_none() {
            return Err(InputError(format!(
                "--algo: unknown algorithm `{name}` (`distsync list` shows every algorithm)"
            )));
        }
    }
    let base = match &args.scenario {
        Some(path) => Scenario::load(path)?,
        None => default_base(),
    };
    // The bar counts work, not runs: a 64-node point costs far more than a 2-node one.
    // Every value must make a scenario, and a refused one names the flag.
    let priors: Vec<f64> = param
        .values
        .iter()
        .map(|value| {
            let scenario = with_param(&base, &param.path, value)
                .map_err(|e| InputError(format!("--param {param_text}: {e}")))?;
            Ok(prior(&scenario))
        })
        .collect::<Result<_, InputError>>()?;
    let mut work = Work::new(
        (0..args.algo.len()).flat_map(|group| priors.iter().map(move |&p| (group, p))),
        args.seeds,
    );
    let progress = Progress::work(args.json || args.shard.is_some(), "sweeping");
    let started = std::time::Instant::now();
    progress.show_work(&work, started);
    let stop = crate::interrupt::catch();
    let select = |run: u64| args.shard.is_none_or(|s| s.takes(run));
    let runs = sweep_runs(
        &base,
        &args.algo,
        &param,
        &args.metric,
        args.seeds,
        &select,
        stop,
        |done: RunDone| {
            work.record(done.point, done.events);
            progress.show_work(&work, started);
        },
    );
    drop(progress);
    let interrupted = crate::interrupt::interrupted();
    if let Some(shard) = args.shard {
        let campaign = Campaign {
            algo: args.algo.clone(),
            param: param_text,
            metric: args.metric.clone(),
            seeds: args.seeds,
            scenario_file: args.scenario.clone(),
            scenario: serde_json::to_value(&base)?,
        };
        let text =
            crate::shard::file_text("sweep", shard, &campaign, &runs, interrupted.is_some())?;
        crate::output::write_stdout(&text)?;
        return Ok(interrupted.map_or(Outcome::Ok, |s| {
            Outcome::Code(crate::interrupt::exit_code(s))
        }));
    }
    let Some(signal) = interrupted else {
        let points = points(&args.algo, &param, args.seeds, &runs)?;
        return report(&args, &param, points);
    };
    let points = points_made(&args.algo, &param, args.seeds, &runs)?;
    eprintln!(
        "interrupted by {} after {} of {} runs: the {} point{} all of whose runs were made",
        crate::interrupt::name(signal),
        runs.len(),
        args.algo.len() as u64 * param.values.len() as u64 * args.seeds,
        points.len(),
        if points.len() == 1 { "" } else { "s" }
    );
    report(&args, &param, points)?;
    Ok(Outcome::Code(crate::interrupt::exit_code(signal)))
}

/// Prints (and draws) the points, and says how the sweep ends.
fn report(args: &SweepArgs, param: &ParamSpec, points: Vec<Point>) -> Result<Outcome, InputError> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(&points)?);
    } else {
        print_table(args, param, &points);
    }
    if let Some(path) = &args.plot {
        let series: Vec<Series> = args
            .algo
            .iter()
            .map(|a| {
                let pts = points
                    .iter()
                    .filter(|p| &p.algorithm == a)
                    .filter_map(|p| Some((p.value.as_f64()?, p.metric)))
                    .collect();
                Series::measured(a.clone(), pts)
            })
            .collect();
        if series.iter().all(|s| s.points.is_empty()) {
            return Err(InputError(format!(
                "--plot: the values of `{}` are not numbers, so there is no axis to draw",
                param.path
            )));
        }
        let integer_x = points
            .iter()
            .all(|p| p.value.as_f64().is_some_and(|v| v.fract() == 0.0));
        let base = match &args.scenario {
            Some(path) => path.display().to_string(),
            None => "heavy load, T = 1ms, E = 10ms, 10 requests per node".into(),
        };
        let seeds = crate::output::count(args.seeds, "seed");
        let svg = figure(&Figure {
            title: format!(
                "{} against {}: {base}; {seeds} per point",
                args.metric, param.path
            ),
            x_label: param.path.clone(),
            y_label: args.metric.clone(),
            integer_x,
            panels: vec![Panel {
                caption: String::new(),
                series,
            }],
        })
        .map_err(|e| InputError(format!("--plot: {e}")))?;
        std::fs::write(path, svg).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if points.iter().any(|p| p.violations > 0) {
        eprintln!("some runs violated a monitored property (see the `violations` column)");
        Ok(Outcome::Violation)
    } else {
        Ok(Outcome::Ok)
    }
}

/// A run's expected work before it has run, up to a factor: nodes x requests per node (the
/// Poisson rate over the horizon when the requests are unlimited). The progress bar learns from
/// the finished runs how events grow with it.
fn prior(scenario: &Scenario) -> f64 {
    let nodes = scenario
        .ids
        .as_ref()
        .map_or(scenario.nodes.unwrap_or(1) as usize, Vec::len) as f64;
    let requests = scenario
        .workload
        .as_ref()
        .map_or(1.0, |w| match w.requests {
            Some(r) => r as f64,
            None => w.rate.map_or(1.0, |rate| {
                rate * scenario
                    .until
                    .unwrap_or(Duration::from_secs(60))
                    .as_secs_f64()
            }),
        });
    nodes * requests.max(1.0)
}

fn print_table(args: &SweepArgs, param: &ParamSpec, points: &[Point]) {
    let width = args.algo.iter().map(|a| a.len()).max().unwrap_or(9).max(9);
    println!(
        "{:width$}  {:>12}  {:>14}  violations",
        "algorithm", param.path, args.metric
    );
    for p in points {
        let value = match &p.value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        println!(
            "{:width$}  {:>12}  {:>14.3}  {}",
            p.algorithm, value, p.metric, p.violations
        );
    }
}
