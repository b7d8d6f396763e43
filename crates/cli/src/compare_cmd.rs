//! `distsync compare`: the comparison table of seed 003, measured.

use crate::progress::Progress;
use crate::shard::Shard;
use crate::{InputError, Outcome};
use distsync_algorithms::registry::Family;
use distsync_sim::compare::{
    compare_mutex, family_algorithms, CompareOptions, Load, Relation, Row,
};
use distsync_sim::compare_election::{
    compare_election, election_algorithms, ElectionCompareOptions, ElectionRow, Order,
};
use distsync_viz::plot::{figure, Figure, Panel, Series};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::PathBuf;

/// Arguments of `distsync compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// The family to compare.
    #[arg(long, default_value = "mutex",
          value_parser = clap::builder::PossibleValuesParser::new(COMPARISONS.iter().map(|c| c.family.name())))]
    family: String,
    /// Membership sizes, comma-separated.
    #[arg(long, allow_negative_numbers = true, value_parser = crate::output::whole::<u32>, value_delimiter = ',', default_value = "3,5,8")]
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
    #[arg(long, allow_negative_numbers = true, value_parser = crate::output::whole::<u64>, default_value_t = 1)]
    seed: u64,
    /// Print JSON rows instead of the table.
    #[arg(long)]
    json: bool,
    /// Mutex: print one line per algorithm and N, the four figures side by side, each as
    /// "measured = formula" with a check mark (the default when the output is a terminal).
    #[arg(long, conflicts_with_all = ["full", "json"])]
    summary: bool,
    /// Mutex: print every figure on its own row with its formula and verdict (the default when
    /// the output is piped).
    #[arg(long, conflicts_with = "json")]
    full: bool,
    /// Draw messages against N to this SVG file: measured (solid) and theory (dashed) in one
    /// colour per algorithm, one panel per load (mutex) or per id order (election).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Make only shard K of N of the comparison (the runs whose index, algorithm by algorithm
    /// and size by size, is K-1 modulo N) and print its results file (JSON) for `--merge`;
    /// exit 0 whatever was measured, the merge tells. See docs/stress.md.
    #[arg(long, value_name = "K/N", value_parser = crate::shard::parse,
          conflicts_with_all = ["json", "summary", "full", "plot"])]
    shard: Option<Shard>,
    /// Merge the results files of every shard of a comparison (`--shard`): print (and draw,
    /// with `--plot`) what the unsharded comparison does, byte for byte, and exit as it exits.
    /// The comparison comes from the files.
    #[arg(long, value_name = "FILE", num_args = 1..,
          conflicts_with_all = ["family", "nodes", "load", "orders", "algo", "seed", "shard"])]
    merge: Vec<PathBuf>,
}

/// What decides a comparison's runs, as a results file of a shard keeps it.
#[derive(Serialize, Deserialize)]
struct Campaign {
    family: String,
    nodes: Vec<u32>,
    load: String,
    orders: Vec<String>,
    algo: Vec<String>,
    seed: u64,
}

/// One run of a sharded comparison: its index and its rows.
#[derive(Serialize, Deserialize)]
struct CompareRun<R> {
    run: u64,
    rows: Vec<R>,
}

/// [`Relation`] as a results file has it.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum RelationIn {
    Exact,
    Approximate(f64),
    AtMost,
    Between(f64),
    None,
}

impl From<RelationIn> for Relation {
    fn from(r: RelationIn) -> Relation {
        match r {
            RelationIn::Exact => Relation::Exact,
            RelationIn::Approximate(t) => Relation::Approximate(t),
            RelationIn::AtMost => Relation::AtMost,
            RelationIn::Between(t) => Relation::Between(t),
            RelationIn::None => Relation::None,
        }
    }
}

/// A [`Row`] as a results file has it.
#[derive(Deserialize)]
struct RowIn {
    algorithm: String,
    nodes: u32,
    load: String,
    metric: String,
    measured: Option<f64>,
    theory: Option<f64>,
    formula: String,
    relation: RelationIn,
    agrees: Option<bool>,
    note: String,
}

/// An [`ElectionRow`] as a results file has it.
#[derive(Deserialize)]
struct ElectionRowIn {
    algorithm: String,
    nodes: u32,
    order: String,
    starters: String,
    metric: String,
    measured: Option<f64>,
    theory: Option<f64>,
    formula: String,
    relation: RelationIn,
    agrees: Option<bool>,
    note: String,
}

/// `text` as the one of `names` it is (the rows name loads, metrics, orders and starters by
/// fixed words).
fn word(field: &str, text: &str, names: &[&'static str]) -> Result<&'static str, InputError> {
    names.iter().copied().find(|n| *n == text).ok_or_else(|| {
        InputError(format!(
            "--merge: a row's {field} `{text}`, expected one of {}",
            names.join(", ")
        ))
    })
}

impl RowIn {
    fn row(self) -> Result<Row, InputError> {
        Ok(Row {
            algorithm: self.algorithm,
            nodes: self.nodes,
            load: word("load", &self.load, &["light", "heavy"])?,
            metric: word(
                "metric",
                &self.metric,
                &["messages_per_entry", "sync_delay_T", "response_time_T"],
            )?,
            measured: self.measured,
            theory: self.theory,
            formula: self.formula,
            relation: self.relation.into(),
            agrees: self.agrees,
            note: self.note,
        })
    }
}

impl ElectionRowIn {
    fn row(self) -> Result<ElectionRow, InputError> {
        Ok(ElectionRow {
            algorithm: self.algorithm,
            nodes: self.nodes,
            order: word(
                "order",
                &self.order,
                &["ascending", "descending", "random", "-"],
            )?,
            starters: word("starters", &self.starters, &["all", "one", "highest"])?,
            metric: self.metric,
            measured: self.measured,
            theory: self.theory,
            formula: self.formula,
            relation: self.relation.into(),
            agrees: self.agrees,
            note: self.note,
        })
    }
}

/// The rows of every run, in index order; refuses runs that are not exactly `count` runs, each
/// once.
fn in_order<R>(runs: Vec<CompareRun<R>>, count: usize) -> Result<Vec<R>, InputError> {
    let mut slots: Vec<Option<Vec<R>>> = (0..count).map(|_| None).collect();
    for r in runs {
        let Some(slot) = slots.get_mut(r.run as usize) else {
            return Err(InputError(format!(
                "--merge: run {}, past the comparison's {count} runs",
                r.run
            )));
        };
        if slot.is_some() {
            return Err(InputError(format!("--merge: run {} twice", r.run)));
        }
        *slot = Some(r.rows);
    }
    if let Some(i) = slots.iter().position(Option::is_none) {
        return Err(InputError(format!(
            "--merge: run {i} of the comparison's {count} missing"
        )));
    }
    Ok(slots.into_iter().flatten().flatten().collect())
}

/// The mutex comparison's runs: one per algorithm, size and load, in the order of its rows.
fn mutex_plan(options: &CompareOptions) -> Vec<CompareOptions> {
    let algorithms: Vec<String> = if options.algorithms.is_empty() {
        family_algorithms(Family::Mutex)
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        options.algorithms.clone()
    };
    let mut plan = Vec::new();
    for a in &algorithms {
        for &n in &options.nodes {
            for &load in &options.loads {
                plan.push(CompareOptions {
                    algorithms: vec![a.clone()],
                    nodes: vec![n],
                    loads: vec![load],
                    ..options.clone()
                });
            }
        }
    }
    plan
}

/// The election comparison's runs: one per algorithm and size (each with every order and
/// starter), in the order of its rows.
fn election_plan(options: &ElectionCompareOptions) -> Vec<ElectionCompareOptions> {
    let algorithms: Vec<String> = if options.algorithms.is_empty() {
        election_algorithms()
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        options.algorithms.clone()
    };
    let mut plan = Vec::new();
    for a in &algorithms {
        for &n in &options.nodes {
            plan.push(ElectionCompareOptions {
                algorithms: vec![a.clone()],
                nodes: vec![n],
                ..options.clone()
            });
        }
    }
    plan
}

impl Campaign {
    fn of(args: &CompareArgs) -> Campaign {
        Campaign {
            family: args.family.clone(),
            nodes: args.nodes.clone(),
            load: args.load.clone(),
            orders: args.orders.clone(),
            algo: args.algo.clone(),
            seed: args.seed,
        }
    }
}

/// Makes the comparison whose runs are `plan` (each on its own, in parallel, the rows in the
/// plan's order: the same rows as the library's whole comparison), or only shard `--shard` of it,
/// printed as a results file; on Ctrl-C, the rows of the runs made.
fn campaign<O: Sync, R: Serialize + Send>(
    args: &CompareArgs,
    plan: &[O],
    one: impl Fn(&O) -> Vec<R> + Sync,
    report: impl FnOnce(&CompareArgs, &[R]) -> Result<Outcome, InputError>,
) -> Result<Outcome, InputError> {
    let selected: Vec<(u64, &O)> = plan
        .iter()
        .enumerate()
        .map(|(i, o)| (i as u64, o))
        .filter(|(i, _)| args.shard.is_none_or(|s| s.takes(*i)))
        .collect();
    let stop = crate::interrupt::catch();
    let progress = Progress::runs(args.json || args.shard.is_some(), "comparing");
    let done = std::sync::atomic::AtomicU64::new(0);
    let total = selected.len() as u64;
    let runs: Vec<CompareRun<R>> = selected
        .par_iter()
        .filter_map(|&(run, o)| {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return None;
            }
            let rows = one(o);
            let d = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress.update(d, total);
            Some(CompareRun { run, rows })
        })
        .collect();
    drop(progress);
    let interrupted = crate::interrupt::interrupted();
    if let Some(shard) = args.shard {
        let text = crate::shard::file_text(
            "compare",
            shard,
            &Campaign::of(args),
            &runs,
            interrupted.is_some(),
        )?;
        crate::output::write_stdout(&text)?;
        return Ok(interrupted.map_or(Outcome::Ok, |s| {
            Outcome::Code(crate::interrupt::exit_code(s))
        }));
    }
    let Some(signal) = interrupted else {
        return report(args, &in_order(runs, plan.len())?);
    };
    eprintln!(
        "interrupted by {} after {} of {} runs: the rows of those runs",
        crate::interrupt::name(signal),
        runs.len(),
        plan.len()
    );
    let rows: Vec<R> = runs.into_iter().flat_map(|r| r.rows).collect();
    report(args, &rows)?;
    Ok(Outcome::Code(crate::interrupt::exit_code(signal)))
}

/// `--merge`: the comparison from its shards' results files.
fn merge(mut args: CompareArgs) -> Result<Outcome, InputError> {
    let (campaign, runs): (Campaign, Vec<CompareRun<serde_json::Value>>) =
        crate::shard::read("compare", &args.merge)?;
    args.family = campaign.family;
    args.nodes = campaign.nodes;
    args.load = campaign.load;
    args.orders = campaign.orders;
    args.algo = campaign.algo;
    args.seed = campaign.seed;
    (comparison(&args.family)?.merge)(&args, runs)
}

/// What `compare` does for one family: run the comparison, and merge its shards' results.
struct Comparison {
    /// The family compared (`--family`, its name).
    family: Family,
    /// Runs the comparison of `args`, prints its rows and says how it ends.
    run: fn(&CompareArgs) -> Result<Outcome, InputError>,
    /// `--merge`: the comparison of `args` from the runs of its results files.
    merge: fn(&CompareArgs, Vec<CompareRun<serde_json::Value>>) -> Result<Outcome, InputError>,
}

/// The families `compare` compares with their formulas (each family's theory is in
/// `crates/sim/src/family/<family>/compare.rs`), one line each.
static COMPARISONS: [Comparison; 2] = [
    Comparison {
        family: Family::Mutex,
        run: compare_mutexes,
        merge: merge_mutexes,
    },
    Comparison {
        family: Family::Election,
        run: compare_elections,
        merge: merge_elections,
    },
];

/// The comparison of the family named `family`.
fn comparison(family: &str) -> Result<&'static Comparison, InputError> {
    COMPARISONS
        .iter()
        .find(|c| c.family.name() == family)
        .ok_or_else(|| InputError(format!("--family: `{family}` has no comparison")))
}

/// `--merge` of the mutex comparison.
fn merge_mutexes(
    args: &CompareArgs,
    runs: Vec<CompareRun<serde_json::Value>>,
) -> Result<Outcome, InputError> {
    let count = mutex_plan(&mutex_options(args)).len();
    let runs = read_rows(runs, RowIn::row)?;
    report_mutex(args, &in_order(runs, count)?)
}

/// `--merge` of the election comparison.
fn merge_elections(
    args: &CompareArgs,
    runs: Vec<CompareRun<serde_json::Value>>,
) -> Result<Outcome, InputError> {
    let count = election_plan(&election_options(args)).len();
    let runs = read_rows(runs, ElectionRowIn::row)?;
    report_elections(args, &in_order(runs, count)?)
}

/// The rows of every run of the results files, each read as `I` and turned into a row by `row`.
fn read_rows<I: serde::de::DeserializeOwned, R>(
    runs: Vec<CompareRun<serde_json::Value>>,
    row: fn(I) -> Result<R, InputError>,
) -> Result<Vec<CompareRun<R>>, InputError> {
    runs.into_iter()
        .map(|r| {
            let rows = r
                .rows
                .into_iter()
                .map(|v| {
                    serde_json::from_value::<I>(v)
                        .map_err(|e| InputError(format!("--merge: a row: {e}")))
                        .and_then(row)
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(CompareRun { run: r.run, rows })
        })
        .collect()
}

fn mutex_options(args: &CompareArgs) -> CompareOptions {
    let loads = match args.load.as_str() {
        "light" => vec![Load::Light],
        "heavy" => vec![Load::Heavy],
        _ => vec![Load::Light, Load::Heavy],
    };
    CompareOptions {
        algorithms: args.algo.clone(),
        nodes: args.nodes.clone(),
        loads,
        seed: args.seed,
        ..CompareOptions::default()
    }
}

fn election_options(args: &CompareArgs) -> ElectionCompareOptions {
    let orders = args
        .orders
        .iter()
        .map(|o| match o.as_str() {
            "ascending" => Order::Ascending,
            "descending" => Order::Descending,
            _ => Order::Random,
        })
        .collect();
    ElectionCompareOptions {
        algorithms: args.algo.clone(),
        nodes: args.nodes.clone(),
        orders,
        seed: args.seed,
    }
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
    if let Some(path) = &args.plot {
        crate::output::check_output_path("--plot", path)?;
    }
    if !args.merge.is_empty() {
        return merge(args);
    }
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
                    "--algo: `{name}` is {} algorithm, not {}",
                    crate::output::a(e.family.name()),
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
    (comparison(&args.family)?.run)(&args)
}

/// `--family mutex`: every algorithm at each size and load.
fn compare_mutexes(args: &CompareArgs) -> Result<Outcome, InputError> {
    let plan = mutex_plan(&mutex_options(args));
    campaign(args, &plan, |o| compare_mutex(o, |_, _| {}), report_mutex)
}

/// Prints (and draws) the mutex comparison's rows, and says how it ends.
fn report_mutex(args: &CompareArgs, rows: &[Row]) -> Result<Outcome, InputError> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if args.summary || (!args.full && std::io::stdout().is_terminal()) {
        print_summary(rows);
    } else {
        print_table(rows);
    }
    if let Some(path) = &args.plot {
        std::fs::write(path, plot(rows, args.seed)?)
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
    let plan = election_plan(&election_options(args));
    campaign(
        args,
        &plan,
        |o| compare_election(o, |_, _| {}),
        report_elections,
    )
}

/// Prints (and draws) the election comparison's rows, and says how it ends.
fn report_elections(args: &CompareArgs, rows: &[ElectionRow]) -> Result<Outcome, InputError> {
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print_election_table(rows);
    }
    if let Some(path) = &args.plot {
        std::fs::write(path, plot_elections(rows)?)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
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

/// One cell of the summary: "measured = formula ✓", "measured ≤ formula ✓", "measured ≈
/// formula ✗", or the measured figure alone where there is no formula.
fn cell(r: &Row) -> String {
    let Some(measured) = r.measured else {
        return if r.note.is_empty() {
            "-".into()
        } else {
            r.note.clone()
        };
    };
    let m = fmt(Some(measured));
    if r.theory.is_none() || r.formula == "-" {
        return m;
    }
    let sign = match r.relation {
        Relation::Exact => "=",
        Relation::Approximate(_) => "≈",
        Relation::AtMost => "≤",
        Relation::Between(_) => "within",
        Relation::None => return m,
    };
    let mark = match r.agrees {
        Some(true) => " ✓",
        Some(false) => " ✗",
        None => "",
    };
    // The formula without its explanation in parentheses (`--full` shows it) and without a
    // leading "up to" the sign already says.
    let formula = r.formula.split(" (").next().unwrap_or(&r.formula);
    let formula = formula.strip_prefix("up to ").unwrap_or(formula);
    format!("{m} {sign} {formula}{mark}")
}

/// The pivot table: one line per algorithm and N, the README's four columns.
fn print_summary(rows: &[Row]) {
    let columns = [
        ("messages/entry, light", "light", "messages_per_entry"),
        ("messages/entry, heavy", "heavy", "messages_per_entry"),
        ("sync delay, heavy (T)", "heavy", "sync_delay_T"),
        ("response, light (T)", "light", "response_time_T"),
    ];
    let mut keys: Vec<(&str, u32)> = Vec::new();
    for r in rows {
        if !keys.contains(&(r.algorithm.as_str(), r.nodes)) {
            keys.push((&r.algorithm, r.nodes));
        }
    }
    let table: Vec<Vec<String>> = keys
        .iter()
        .map(|&(algorithm, n)| {
            let mut line = vec![algorithm.to_string(), n.to_string()];
            for (_, load, metric) in columns {
                line.push(
                    rows.iter()
                        .find(|r| {
                            r.algorithm == algorithm
                                && r.nodes == n
                                && r.load == load
                                && r.metric == metric
                        })
                        .map_or_else(|| "-".to_string(), cell),
                );
            }
            line
        })
        .collect();
    let mut header = vec!["algorithm".to_string(), "N".to_string()];
    header.extend(columns.iter().map(|c| c.0.to_string()));
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            table
                .iter()
                .chain(std::iter::once(&header))
                .map(|l| l[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    println!("T = 1ms message delay, E = 10T in the critical section; times in units of T.");
    println!(
        "✓ the measured figure agrees with the formula, ✗ it does not; `--full` shows every row.\n"
    );
    for line in std::iter::once(&header).chain(&table) {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                let pad = w - c.chars().count();
                if i == 1 {
                    format!("{}{c}", " ".repeat(pad))
                } else {
                    format!("{c}{}", " ".repeat(pad))
                }
            })
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
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

/// One algorithm's line of the plot: its name, measured points, theory points, formulas.
type PlotLine = (String, Vec<(f64, f64)>, Vec<(f64, f64)>, Vec<String>);

/// Messages per entry against N: one panel per load, one colour per algorithm, measured solid
/// and theory dashed.
fn plot(rows: &[Row], seed: u64) -> Result<String, InputError> {
    let mut panels = Vec::new();
    for (load, caption) in [
        ("light", "light load: one request in the system at a time"),
        ("heavy", "heavy load: every node always requesting"),
    ] {
        // (algorithm, measured points, theory points, formulas), in the rows' order.
        let mut lines: Vec<PlotLine> = Vec::new();
        // Only figures with a formula: an unbounded one (the token ring under light load) would
        // flatten every other line.
        for r in rows
            .iter()
            .filter(|r| r.load == load && r.metric == "messages_per_entry" && r.theory.is_some())
        {
            let at = match lines.iter().position(|l| l.0 == r.algorithm) {
                Some(i) => i,
                None => {
                    lines.push((r.algorithm.clone(), Vec::new(), Vec::new(), Vec::new()));
                    lines.len() - 1
                }
            };
            let line = &mut lines[at];
            let n = f64::from(r.nodes);
            if let Some(m) = r.measured {
                line.1.push((n, m));
            }
            if let Some(t) = r.theory {
                line.2.push((n, t));
            }
            if !line.3.contains(&r.formula) {
                line.3.push(r.formula.clone());
            }
        }
        if lines.is_empty() {
            continue;
        }
        let mut series = Vec::new();
        for (algorithm, measured, theory, formulas) in lines {
            series.push(Series::measured(algorithm.clone(), measured).in_group(&algorithm));
            series.push(Series::theory(formulas.join(", "), theory).in_group(&algorithm));
        }
        panels.push(Panel {
            caption: caption.into(),
            series,
        });
    }
    figure(&Figure {
        title: format!(
            "Messages per critical-section entry: measured (solid) and theory (dashed); T = 1ms constant delay, E = 10T, seed {seed}"
        ),
        x_label: "nodes (N)".into(),
        y_label: "messages per entry".into(),
        integer_x: true,
        panels,
    })
    .map_err(|e| InputError(format!("--plot: {e}")))
}

/// Election messages against n, every process starting: one panel per id order (the bully
/// algorithm, for which the order means nothing, in each), theory dashed where the formulas
/// of every message kind are known.
fn plot_elections(rows: &[ElectionRow]) -> Result<String, InputError> {
    let mut orders: Vec<&str> = rows.iter().map(|r| r.order).filter(|o| *o != "-").collect();
    orders.dedup();
    orders.sort_by_key(|o| {
        ["ascending", "descending", "random"]
            .iter()
            .position(|x| x == o)
    });
    orders.dedup();
    if orders.is_empty() {
        orders.push("-");
    }
    let mut panels = Vec::new();
    for order in orders {
        let mut series = Vec::new();
        let mut algorithms: Vec<&str> = Vec::new();
        for r in rows.iter().filter(|r| r.order == order || r.order == "-") {
            if !algorithms.contains(&r.algorithm.as_str()) {
                algorithms.push(&r.algorithm);
            }
        }
        for algorithm in algorithms {
            let mine: Vec<&ElectionRow> = rows
                .iter()
                .filter(|r| {
                    r.algorithm == algorithm
                        && (r.order == order || r.order == "-")
                        && r.starters == "all"
                })
                .collect();
            let mut sizes: Vec<u32> = mine.iter().map(|r| r.nodes).collect();
            sizes.dedup();
            let mut measured = Vec::new();
            let mut theory = Vec::new();
            let mut formulas: Vec<String> = Vec::new();
            for n in sizes {
                let at_n: Vec<&&ElectionRow> = mine.iter().filter(|r| r.nodes == n).collect();
                let Some(total) = at_n.iter().find(|r| r.metric == "messages") else {
                    continue;
                };
                if let Some(m) = total.measured {
                    measured.push((f64::from(n), m));
                }
                // The total's own formula, else the sum of every kind's exact formula.
                let kinds: Vec<&&&ElectionRow> = at_n
                    .iter()
                    .filter(|r| r.metric.starts_with(|c: char| c.is_ascii_uppercase()))
                    .collect();
                let (t, f) = if total.theory.is_some() {
                    (total.theory, vec![total.formula.clone()])
                } else if !kinds.is_empty()
                    && kinds
                        .iter()
                        .all(|r| r.theory.is_some() && r.relation == Relation::Exact)
                {
                    (
                        Some(kinds.iter().filter_map(|r| r.theory).sum()),
                        kinds
                            .iter()
                            .map(|r| format!("{} {}", r.formula, r.metric))
                            .collect(),
                    )
                } else {
                    (None, Vec::new())
                };
                if let Some(t) = t {
                    theory.push((f64::from(n), t));
                    let f = f.join(" + ");
                    if !formulas.contains(&f) {
                        formulas.push(f);
                    }
                }
            }
            if measured.is_empty() {
                continue;
            }
            series.push(Series::measured(algorithm, measured).in_group(algorithm));
            if !theory.is_empty() {
                series.push(Series::theory(formulas.join("; "), theory).in_group(algorithm));
            }
        }
        panels.push(Panel {
            caption: match order {
                "-" => "every process starting".into(),
                o => format!("ids {o} along the ring"),
            },
            series,
        });
    }
    figure(&Figure {
        title: "Election messages, every process starting: measured (solid) and theory (dashed); T = 1ms, FIFO links".into(),
        x_label: "processes (n)".into(),
        y_label: "messages".into(),
        integer_x: true,
        panels,
    })
    .map_err(|e| InputError(format!("--plot: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The comparison made run by run (as `compare` makes it, to be stopped or sharded) has the
    /// rows of the library's whole comparison, in the same order.
    #[test]
    fn run_by_run_rows_are_the_whole_comparisons() {
        let options = CompareOptions {
            nodes: vec![3, 4],
            ..CompareOptions::default()
        };
        let whole = compare_mutex(&options, |_, _| {});
        let by_run: Vec<Row> = mutex_plan(&options)
            .iter()
            .flat_map(|o| compare_mutex(o, |_, _| {}))
            .collect();
        assert!(!whole.is_empty());
        assert_eq!(by_run, whole);
        let options = ElectionCompareOptions {
            nodes: vec![4, 5],
            seed: 3,
            ..ElectionCompareOptions::default()
        };
        let whole = compare_election(&options, |_, _| {});
        let by_run: Vec<ElectionRow> = election_plan(&options)
            .iter()
            .flat_map(|o| compare_election(o, |_, _| {}))
            .collect();
        assert!(!whole.is_empty());
        assert_eq!(by_run, whole);
    }
}
