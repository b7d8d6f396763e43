//! `distsync compare`: the comparison table of seed 003, measured.

use crate::progress::Progress;
use crate::{InputError, Outcome};
use distsync_sim::compare::{compare_mutex, CompareOptions, Load, Relation, Row};
use distsync_sim::compare_election::{
    compare_election, ElectionCompareOptions, ElectionRow, Order,
};
use distsync_viz::plot::{figure, Figure, Panel, Series};
use std::io::IsTerminal;
use std::path::PathBuf;

/// Arguments of `distsync compare`.
#[derive(clap::Args)]
pub struct CompareArgs {
    /// The family to compare.
    #[arg(long, default_value = "mutex", value_parser = ["mutex", "election"])]
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
    } else if args.summary || (!args.full && std::io::stdout().is_terminal()) {
        print_summary(&rows);
    } else {
        print_table(&rows);
    }
    if let Some(path) = &args.plot {
        std::fs::write(path, plot(&rows, args.seed)?)
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
    if let Some(path) = &args.plot {
        std::fs::write(path, plot_elections(&rows)?)
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
