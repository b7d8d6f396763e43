//! `distsync stress`: many randomized runs of each algorithm, looking for violations, hangs and
//! storms; each failure is written as a scenario file with the command that reproduces it.
//!
//! Exit codes: 0 nothing found, 1 a violation, hang or storm found, 2 bad input.

use crate::progress::Progress;
use crate::shard::Shard;
use crate::{InputError, Outcome};
use distsync_algorithms::registry::{self, Family};
use distsync_core::multicast::Order;
use distsync_sim::stress::{self, Fault, RunRecord, StressOptions, StressResult};
use std::path::PathBuf;

/// Arguments of `distsync stress`.
#[derive(clap::Args)]
pub struct StressArgs {
    /// The algorithms to stress, comma-separated (see `distsync list`).
    #[arg(
        long = "algo",
        value_name = "NAME[,NAME...]",
        value_delimiter = ',',
        required_unless_present_any = ["family", "merge"],
        conflicts_with = "family"
    )]
    algorithms: Vec<String>,
    /// Stress every algorithm of a family: mutex, election, clock-sync, multicast, snapshot, or
    /// all.
    #[arg(long, value_name = "FAMILY")]
    family: Option<String>,
    /// Runs per algorithm.
    #[arg(long, default_value_t = 100)]
    seeds: u64,
    /// The faults to inject, comma-separated: delay, reorder, loss, duplicate, crash,
    /// partition. Default: for each algorithm, what it claims to survive (random delays always;
    /// reordering unless it needs FIFO links; loss, duplication, crashes only if it claims to
    /// survive them).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    faults: Option<Vec<String>>,
    /// Membership sizes, "A..B" or "N" (default: a range suited to each family).
    #[arg(long, value_name = "A..B")]
    nodes: Option<String>,
    /// Threads (default: one per core). The result does not depend on it.
    #[arg(long, value_name = "J")]
    jobs: Option<usize>,
    /// The seed every scenario is drawn from.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Multicast only: also monitor these orders (fifo, causal, total), beyond those the
    /// algorithm promises.
    #[arg(long, value_name = "ORDERS", value_delimiter = ',')]
    check: Vec<String>,
    /// Where failing scenarios are written (default: the user's state directory,
    /// `$XDG_STATE_HOME/distsync/stress`, else `~/.local/state/distsync/stress`, else the
    /// system's temporary directory; never the current directory).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// How many failing scenarios to write per algorithm (the smallest first).
    #[arg(long, value_name = "K", default_value_t = 5)]
    keep: usize,
    /// Stop a run after this many events and count it as a runaway.
    #[arg(long, value_name = "N", default_value_t = stress::DEFAULT_MAX_EVENTS)]
    max_events: u64,
    /// Run every scenario over reliable FIFO links (`[network] reliable = true`); without
    /// --faults, reordering, loss and duplication are then added to each algorithm's claims,
    /// since the links mask them.
    #[arg(long)]
    reliable: bool,
    /// Also draw, per run, the options the algorithms' documented assumptions depend on: an
    /// election's failure detector on or off, links that are not FIFO for an algorithm that
    /// needs them, reliable links (recoveries kept). Each failure is then reported as outside
    /// an assumption (the one it broke, and the page that states it) or inside them, a bug;
    /// only bugs make the exit code 1.
    #[arg(long)]
    draw_assumptions: bool,
    /// Print the result as one JSON object.
    #[arg(long)]
    json: bool,
    /// Make only shard K of N of the campaign (the runs whose index is K-1 modulo N, for every
    /// algorithm) and print its results file (JSON) for `--merge`; exit 0 whatever it found, the
    /// merge tells. See docs/stress.md for a Kubernetes Indexed Job and a Slurm array.
    #[arg(long, value_name = "K/N", value_parser = crate::shard::parse,
          conflicts_with_all = ["json", "out", "keep"])]
    shard: Option<Shard>,
    /// Merge the results files of every shard of a campaign (`--shard`): print what the
    /// unsharded campaign prints, byte for byte, write its failures (`--out`, `--keep`) and exit
    /// as it exits. The campaign comes from the files.
    #[arg(long, value_name = "FILE", num_args = 1..,
          conflicts_with_all = ["family", "seeds", "faults", "nodes", "jobs", "seed", "check",
                                "max_events", "reliable", "draw_assumptions", "shard"])]
    merge: Vec<PathBuf>,
}

/// What decides a stress campaign's runs: the options but the threads, as a results file of a
/// shard keeps them.
#[derive(serde::Serialize, serde::Deserialize)]
struct Campaign {
    algorithms: Vec<String>,
    seeds: u64,
    faults: Option<Vec<String>>,
    nodes: Option<(u32, u32)>,
    seed: u64,
    check: Vec<String>,
    max_events: u64,
    reliable: bool,
    #[serde(default)]
    draw_assumptions: bool,
}

impl Campaign {
    fn of(o: &StressOptions) -> Campaign {
        Campaign {
            algorithms: o.algorithms.clone(),
            seeds: o.seeds,
            faults: o
                .faults
                .as_ref()
                .map(|f| f.iter().map(|f| f.name().to_string()).collect()),
            nodes: o.nodes,
            seed: o.seed,
            check: o.check.iter().map(|&c| order_name(c).to_string()).collect(),
            max_events: o.max_events,
            reliable: o.reliable,
            draw_assumptions: o.draw_assumptions,
        }
    }

    fn options(self) -> Result<StressOptions, String> {
        let faults = match self.faults {
            None => None,
            Some(names) => Some(
                names
                    .iter()
                    .map(|n| {
                        Fault::parse(n).ok_or_else(|| {
                            format!("--merge: the campaign's fault `{n}` is unknown")
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let check = self
            .check
            .iter()
            .map(|c| parse_order(c).map_err(|e| format!("--merge: the campaign's {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(StressOptions {
            algorithms: self.algorithms,
            seeds: self.seeds,
            faults,
            nodes: self.nodes,
            seed: self.seed,
            jobs: None,
            check,
            max_events: self.max_events,
            reliable: self.reliable,
            draw_assumptions: self.draw_assumptions,
        })
    }
}

fn order_name(order: Order) -> &'static str {
    match order {
        Order::Fifo => "fifo",
        Order::Causal => "causal",
        Order::Total => "total",
    }
}

fn parse_nodes(s: &str) -> Result<(u32, u32), String> {
    let parse = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("--nodes: expected a range like 3..7 or a size like 5, got `{s}`"))
    };
    let (lo, hi) = match s.split_once("..") {
        Some((a, b)) => (parse(a)?, parse(b.trim_start_matches('='))?),
        None => {
            let n = parse(s)?;
            (n, n)
        }
    };
    if lo == 0 || lo > hi {
        return Err(format!(
            "--nodes: expected A..B with 1 <= A <= B, got `{s}`"
        ));
    }
    Ok((lo, hi))
}

fn parse_order(s: &str) -> Result<Order, String> {
    match s {
        "fifo" => Ok(Order::Fifo),
        "causal" => Ok(Order::Causal),
        "total" => Ok(Order::Total),
        other => Err(format!(
            "--check: unknown order `{other}`, expected fifo, causal or total"
        )),
    }
}

/// The options the arguments ask for.
fn options(args: &StressArgs) -> Result<StressOptions, String> {
    let algorithms: Vec<String> = match &args.family {
        Some(f) => {
            let family = match f.as_str() {
                "all" => None,
                name => Some(Family::parse(name).ok_or_else(|| {
                    let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
                    format!(
                        "--family: unknown family `{name}`, expected {} or all",
                        names.join(", ")
                    )
                })?),
            };
            registry::entries()
                .into_iter()
                .filter(|e| family.is_none_or(|f| e.family == f))
                .map(|e| e.name.to_string())
                .collect()
        }
        None => args
            .algorithms
            .iter()
            .map(|a| a.trim().to_string())
            .collect(),
    };
    let faults = match &args.faults {
        None => None,
        Some(list) => {
            let mut faults = Vec::new();
            for name in list {
                let name = name.trim();
                if name.is_empty() || name == "none" {
                    continue;
                }
                let fault = Fault::parse(name).ok_or_else(|| {
                    format!(
                        "--faults: unknown fault `{name}`, expected some of delay, reorder, loss, duplicate, crash, partition"
                    )
                })?;
                if !faults.contains(&fault) {
                    faults.push(fault);
                }
            }
            Some(faults)
        }
    };
    let check = args
        .check
        .iter()
        .map(|c| parse_order(c.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    if args.jobs == Some(0) {
        return Err("--jobs: expected at least 1 thread".into());
    }
    if args.max_events == 0 {
        return Err("--max-events: expected at least 1".into());
    }
    Ok(StressOptions {
        algorithms,
        seeds: args.seeds,
        faults,
        nodes: args.nodes.as_deref().map(parse_nodes).transpose()?,
        seed: args.seed,
        jobs: args.jobs,
        check,
        max_events: args.max_events,
        reliable: args.reliable,
        draw_assumptions: args.draw_assumptions,
    })
}

pub fn stress_cmd(args: StressArgs) -> Result<Outcome, InputError> {
    if !args.merge.is_empty() {
        let (campaign, records): (Campaign, Vec<RunRecord>) =
            crate::shard::read("stress", &args.merge)?;
        let options = campaign.options().map_err(InputError)?;
        let result = stress::merge_runs(&options, records).map_err(|e| format!("--merge: {e}"))?;
        return report(&args, &options, result);
    }
    let options = options(&args).map_err(InputError)?;
    let bar = Progress::runs(args.json || args.shard.is_some(), "stressing");
    let drawn = bar.bar().cloned();
    let progress = move |done: u64, total: u64| {
        if let Some(b) = &drawn {
            b.set_length(total);
            b.set_position(done);
        }
    };
    let stop = crate::interrupt::catch();
    let shard = args.shard;
    let select = move |i: u64| shard.is_none_or(|s| s.takes(i));
    let records = stress::stress_runs(&options, &select, stop, &progress);
    drop(bar);
    let records = records?;
    let interrupted = crate::interrupt::interrupted();
    if let Some(shard) = args.shard {
        let text = crate::shard::file_text(
            "stress",
            shard,
            &Campaign::of(&options),
            &records,
            interrupted.is_some(),
        )?;
        crate::output::write_stdout(&text)?;
        return Ok(interrupted.map_or(Outcome::Ok, |s| {
            Outcome::Code(crate::interrupt::exit_code(s))
        }));
    }
    let Some(signal) = interrupted else {
        let result = stress::merge_runs(&options, records)?;
        return report(&args, &options, result);
    };
    let made = records.len();
    let result = stress::partial_result(&options, records)?;
    eprintln!(
        "interrupted by {} after {made} of {} runs: the summary and failures of those runs",
        crate::interrupt::name(signal),
        options.seeds * result.algorithms.len() as u64
    );
    report(&args, &options, result)?;
    Ok(Outcome::Code(crate::interrupt::exit_code(signal)))
}

/// Writes the failures, prints the result, and says how the campaign ends.
fn report(
    args: &StressArgs,
    options: &StressOptions,
    mut result: StressResult,
) -> Result<Outcome, InputError> {
    let out = args.out.clone().unwrap_or_else(default_out);
    stress::write_failures(&mut result, &out, args.keep)?;
    let text = if args.json {
        serde_json::to_string_pretty(&result)? + "\n"
    } else {
        summary(&result, options)
    };
    crate::output::write_stdout(&text)?;
    // Drawing the assumptions, a failure outside them is what the docs say happens there;
    // only one inside them (a bug) fails the command.
    let failed = if options.draw_assumptions {
        result.bugs()
    } else {
        result.found()
    };
    Ok(if failed {
        Outcome::Violation
    } else {
        Outcome::Ok
    })
}

/// Where failing scenarios go without `--out`: the XDG state directory (a campaign's findings
/// are state worth keeping, not a cache), else the temporary directory.
fn default_out() -> PathBuf {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|home| PathBuf::from(home).join(".local/state"))
        });
    match state {
        Some(dir) => dir.join("distsync").join("stress"),
        None => std::env::temp_dir().join("distsync-stress"),
    }
}

fn faults_text(faults: &[Fault]) -> String {
    if faults.is_empty() {
        "none".into()
    } else {
        faults
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The table a person reads.
fn summary(r: &StressResult, options: &StressOptions) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "stress: {} runs of each of {} algorithm{}, seed {}{}{}, faults {}",
        r.seeds,
        r.algorithms.len(),
        if r.algorithms.len() == 1 { "" } else { "s" },
        r.seed,
        if options.reliable {
            ", reliable links"
        } else {
            ""
        },
        if options.draw_assumptions {
            ", assumptions drawn"
        } else {
            ""
        },
        match &options.faults {
            Some(f) => faults_text(f),
            None => "as each algorithm claims to survive".into(),
        }
    );
    let width = r
        .algorithms
        .iter()
        .map(|a| a.algorithm.len())
        .max()
        .unwrap_or(9)
        .max(9);
    let _ = writeln!(
        s,
        "{:width$}  {:34}  {:>6}  {:>10}  {:>6}  {:>5}  {:>6}  violations",
        "algorithm", "faults", "runs", "events", "failed", "hangs", "storms"
    );
    for a in &r.algorithms {
        let list = |m: &std::collections::BTreeMap<String, u64>| {
            m.iter()
                .map(|(p, n)| format!("{p} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut violations = if a.violations.is_empty() {
            "none".to_string()
        } else {
            list(&a.violations)
        };
        if !a.known.is_empty() {
            violations += &format!(" (known, not promised: {})", list(&a.known));
        }
        if !a.outside.is_empty() {
            violations += &format!(
                " ({} inside the assumptions; outside: {})",
                a.inside,
                list(&a.outside)
            );
        }
        let _ = writeln!(
            s,
            "{:width$}  {:34}  {:>6}  {:>10}  {:>6}  {:>5}  {:>6}  {violations}",
            a.algorithm,
            faults_text(&a.faults),
            a.runs,
            a.events,
            a.failed,
            a.hangs,
            a.storms
        );
    }
    if options.draw_assumptions {
        for a in &r.algorithms {
            let drawn: Vec<String> = a
                .drawn
                .iter()
                .map(|(d, c)| format!("{d} {} ({} failed)", c.runs, c.failed))
                .collect();
            if !drawn.is_empty() {
                let _ = writeln!(s, "{:width$}  drawn: {}", a.algorithm, drawn.join(", "));
            }
        }
    }
    for a in r.algorithms.iter().filter(|a| a.failed > 0) {
        if options.draw_assumptions {
            let _ = writeln!(
                s,
                "\n{}: {} of {} runs failed, {} inside the assumptions; bugs first, then the smallest:",
                a.algorithm, a.failed, a.runs, a.inside
            );
        } else {
            let _ = writeln!(
                s,
                "\n{}: {} of {} runs failed; the smallest:",
                a.algorithm, a.failed, a.runs
            );
        }
        for f in a.failures.iter().filter(|f| f.reproduce.is_some()) {
            let _ = writeln!(
                s,
                "  {} nodes, run {} (seed {}), {} events: {} at {}: {}",
                f.nodes,
                f.run,
                f.seed,
                f.events,
                f.first.property,
                distsync_core::format_duration(std::time::Duration::from_nanos(f.first.time_ns)),
                f.first.detail
            );
            if options.draw_assumptions || !f.outside.is_empty() {
                let _ = writeln!(s, "    {}", classification(f));
            }
            let _ = writeln!(
                s,
                "    reproduce: {}",
                f.reproduce.as_deref().unwrap_or_default()
            );
        }
    }
    if !r.found() {
        let _ = writeln!(s, "nothing found");
    } else if options.draw_assumptions && !r.bugs() {
        let _ = writeln!(
            s,
            "nothing found inside the assumptions: every failure broke a documented assumption and only properties its page names at risk"
        );
    }
    s
}

/// Where a failure stands against the documented assumptions, as the summary prints it.
fn classification(f: &stress::Failure) -> String {
    let assumptions = || {
        f.outside
            .iter()
            .map(|o| format!("{} — {}", o.assumption, o.doc))
            .collect::<Vec<_>>()
            .join("; ")
    };
    if f.explained {
        format!("outside assumptions: {}", assumptions())
    } else if f.outside.is_empty() {
        "INSIDE the assumptions: a bug".to_string()
    } else {
        let named: Vec<&str> = f.outside.iter().flat_map(|o| o.at_risk.clone()).collect();
        let unnamed: Vec<&str> = f
            .properties
            .iter()
            .map(String::as_str)
            .filter(|p| !named.contains(p))
            .collect();
        format!(
            "a bug: outside assumptions ({}), but {} is not what the docs name at risk there",
            assumptions(),
            unnamed.join(", ")
        )
    }
}
