//! `distsync compare`: the comparison table of seed 003, measured.

use crate::progress::Progress;
use crate::{InputError, Outcome};
use distsync_sim::compare::{compare_mutex, CompareOptions, Load, Relation, Row};
use distsync_sim::compare_election::{
    compare_election, ElectionCompareOptions, ElectionRow, Order,
};
use distsync_viz::plot::{line_chart, Series};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Arguments of `distsync compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// The family to compare.
    #[arg(long, default_value = "mutex", value_parser = ["mutex", "election"])]
    family: String,
    /// Membership sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "3,5,8")]
    nodes: Vec<u32>,
    /// light, heavy or both (mutex).
    #[arg(long, default_value = "both", value_parser = ["light", "heavy", "both"])]
    load: String,
    /// Id orders along the ring, comma-separated (election): ascending, descending, random.
    #[arg(long, value_delimiter = ',', default_value = "ascending,descending,random",
          value_parser = ["ascending", "descending", "random"])]
    orders: Vec<String>,
    /// Only these algorithms (comma-separated registry names); all of the family by default.
    #[arg(long, value_delimiter = ',')]
    algo: Vec<String>,
    /// The seed of every run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON rows instead of the table.
    #[arg(long)]
    json: bool,
    /// Draw messages per entry against N (measured points, theory curves) to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

fn fmt(v: Option<f64>) -> String {
    match v {
        Some(v) if (v - v.round()).abs() < 0.005 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "-".into(),
    }
}

fn verdict(row: &Row) -> &'static str {
    match (row.agrees, row.relation) {
        (Some(true), Relation::Exact) => "yes",
        (Some(true), Relation::Approximate(_)) => "yes (approx.)",
        (Some(true), _) => "yes (bound)",
        (Some(false), Relation::Exact) => "NO",
        (Some(false), Relation::Approximate(_)) => "no (approx.)",
        (Some(false), _) => "NO (bound)",
        (None, _) => "",
    }
}

pub fn compare(args: CompareArgs) -> Result<Outcome, InputError> {
    if args.nodes.is_empty() || args.nodes.iter().any(|&n| n < 2) {
        return Err(InputError(
            "--nodes: expected a comma-separated list of sizes of at least 2, like 3,5,8 (one process exchanges no messages, so there is nothing to set beside the formulas)".into(),
        ));
    }
    for name in &args.algo {
        match distsync_algorithms::registry::lookup(name) {
            Some(e) if e.family.name() == args.family => {}
            Some(e) => {
                return Err(InputError(format!(
                    "--algo: `{name}` is a {} algorithm, not {}",
                    e.family.name(),
                    args.family
                )))
            }
            None => {
                return Err(InputError(format!(
                    "--algo: unknown algorithm `{name}` (`distsync list` shows every algorithm)"
                )))
            }
        }
    }
    if args.family == "election" {
        return compare_elections(&args);
    }
    let loads = match args.load.as_str() {
        "light" => vec![Load::Light],
        "heavy" => vec![Load::Heavy],
        _ => vec![Load::Light, Load::Heavy],
    };
    let options = CompareOptions {
        algorithms: args.algo.clone(),
        nodes: args.nodes.clone(),
        loads,
        seed: args.seed,
        ..CompareOptions::default()
    };
    let progress = Progress::runs(args.json, "comparing");
    let rows = compare_mutex(&options, |done, total| {
        progress.update(done as u64, total as u64)
    });
    drop(progress);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print_table(&rows);
    }
    if let Some(path) = &args.plot {
        std::fs::write(path, plot(&rows)?)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    // Exit 1 when an exact formula or a bound is broken, as a monitor violation would be; an
    // average that strays from an approximate formula is shown but is not a failure.
    if rows
        .iter()
        .any(|r| r.agrees == Some(false) && !matches!(r.relation, Relation::Approximate(_)))
    {
        Ok(Outcome::Violation)
    } else {
        Ok(Outcome::Ok)
    }
}

/// `--family election`: rings in each order, every process or one starting.
fn compare_elections(args: &CompareArgs) -> Result<Outcome, InputError> {
    if args.plot.is_some() {
        return Err(InputError(
            "--plot draws the mutex comparison; the election comparison prints a table".into(),
        ));
    }
    let orders = args
        .orders
        .iter()
        .map(|o| match o.as_str() {
            "ascending" => Order::Ascending,
            "descending" => Order::Descending,
            _ => Order::Random,
        })
        .collect();
    let options = ElectionCompareOptions {
        algorithms: args.algo.clone(),
        nodes: args.nodes.clone(),
        orders,
        seed: args.seed,
    };
    let progress = Progress::runs(args.json, "comparing");
    let rows = compare_election(&options, |done, total| {
        progress.update(done as u64, total as u64)
    });
    drop(progress);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print_election_table(&rows);
    }
    if rows
        .iter()
        .any(|r| r.agrees == Some(false) && !matches!(r.relation, Relation::Approximate(_)))
    {
        Ok(Outcome::Violation)
    } else {
        Ok(Outcome::Ok)
    }
}

fn print_election_table(rows: &[ElectionRow]) {
    println!(
        "T = 1ms message delay, FIFO; ids 0..n-1 along the ring in the given order; messages are \
         the algorithm's own (no acknowledgements); completion in units of T.\n"
    );
    println!(
        "{:16}  {:>4}  {:10}  {:8}  {:13}  {:>8}  {:>8}  {:44}  agrees",
        "algorithm", "N", "order", "starters", "metric", "measured", "theory", "formula"
    );
    for r in rows {
        let note = if r.note.is_empty() {
            String::new()
        } else {
            format!("  ({})", r.note)
        };
        let verdict = match (r.agrees, r.relation) {
            (Some(true), Relation::Exact) => "yes",
            (Some(true), _) => "yes (bound)",
            (Some(false), Relation::Exact) => "NO",
            (Some(false), _) => "NO (bound)",
            (None, _) => "",
        };
        println!(
            "{:16}  {:>4}  {:10}  {:8}  {:13}  {:>8}  {:>8}  {:44}  {}{}",
            r.algorithm,
            r.nodes,
            r.order,
            r.starters,
            r.metric,
            fmt(r.measured),
            fmt(r.theory),
            r.formula,
            verdict,
            note
        );
    }
    let checked = rows.iter().filter(|r| r.agrees.is_some()).count();
    let ok = rows.iter().filter(|r| r.agrees == Some(true)).count();
    println!("\n{ok} of {checked} figures with a formula or bound agree.");
}

fn print_table(rows: &[Row]) {
    let name_width = rows
        .iter()
        .map(|r| r.algorithm.len())
        .max()
        .unwrap_or(9)
        .max(9);
    println!("T = 1ms message delay, E = 10T in the critical section; times in units of T.\n");
    println!(
        "{:name_width$}  {:>3}  {:5}  {:18}  {:>8}  {:>8}  {:42}  agrees",
        "algorithm", "N", "load", "metric", "measured", "theory", "formula"
    );
    for r in rows {
        let metric = match r.metric {
            "messages_per_entry" => "messages per entry",
            "sync_delay_T" => "sync delay",
            _ => "response time",
        };
        let note = if r.note.is_empty() {
            String::new()
        } else {
            format!("  ({})", r.note)
        };
        println!(
            "{:name_width$}  {:>3}  {:5}  {:18}  {:>8}  {:>8}  {:42}  {}{}",
            r.algorithm,
            r.nodes,
            r.load,
            metric,
            fmt(r.measured),
            fmt(r.theory),
            r.formula,
            verdict(r),
            note
        );
    }
    let exact = rows
        .iter()
        .filter(|r| r.relation == Relation::Exact && r.theory.is_some())
        .count();
    let exact_ok = rows
        .iter()
        .filter(|r| r.relation == Relation::Exact && r.agrees == Some(true))
        .count();
    println!("\n{exact_ok} of {exact} figures with an exact formula agree.");
}

fn plot(rows: &[Row]) -> Result<String, InputError> {
    let mut measured: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    let mut theory: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    // Only figures with a formula: an unbounded one (the token ring under light load) would
    // flatten every other line.
    for r in rows
        .iter()
        .filter(|r| r.metric == "messages_per_entry" && r.theory.is_some())
    {
        let key = format!("{} ({})", r.algorithm, r.load);
        if let Some(m) = r.measured {
            measured
                .entry(key.clone())
                .or_default()
                .push((f64::from(r.nodes), m));
        }
        if let Some(t) = r.theory {
            theory
                .entry(format!("{key}: {}", r.formula))
                .or_default()
                .push((f64::from(r.nodes), t));
        }
    }
    let mut series: Vec<Series> = measured
        .into_iter()
        .map(|(k, p)| Series::measured(k, p))
        .collect();
    series.extend(theory.into_iter().map(|(k, p)| Series::theory(k, p)));
    line_chart(&series, "nodes (N)", "messages per critical-section entry")
        .map_err(|e| InputError(e.to_string()))
}
