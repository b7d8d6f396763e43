//! `distsync`: run the classic algorithms of distributed synchronization and see them work and
//! break. Every verb is thin: it parses, calls into the library crates and prints.
//!
//! Exit codes: 0 when the run completed and every monitored property held, 1 when a monitor
//! found a violation, 2 for bad input (an unreadable or invalid scenario, a bad flag).
// Doc comments here are clap's help texts ("ADDR[:PORT]", "a [clock] table"), not links.
#![allow(rustdoc::broken_intra_doc_links)]

mod bench_cmd;
mod check_cmd;
mod clocks_cmd;
mod cluster_cmd;
mod compare_cmd;
mod elect_cmd;
mod interrupt;
mod leader_cmd;
mod list;
mod lock_cmd;
mod node_cmd;
mod output;
mod progress;
mod run;
mod scenario_cmd;
mod shard;
mod shell_cmd;
mod snapshot_cmd;
mod store_cmd;
mod stress_cmd;
mod sweep_cmd;
mod time_cmd;
mod trace_cmd;
mod web_cmd;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// Distributed synchronization, coordination and agreement algorithms: simulate them, check
/// their properties, measure their costs.
#[derive(Parser)]
#[command(name = "distsync", version, about, long_about = None)]
struct Cli {
    /// No notes on stderr (progress bars, the files written, hints); errors, warnings and why a
    /// verb exits non-zero still show, and standard output is unchanged.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the algorithms: name, family, whether they need FIFO channels, description.
    List(list::ListArgs),
    /// Run a scenario file in the deterministic simulator.
    Run(run::RunArgs),
    /// Write a commented scenario for an algorithm, with every field it reads and its default.
    Init(scenario_cmd::InitArgs),
    /// Check a scenario file as `run` would, without running it.
    Validate(scenario_cmd::ValidateArgs),
    /// List the example scenarios built into the binary, or print one.
    Examples(scenario_cmd::ExamplesArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(shell_cmd::CompletionsArgs),
    /// Print the man page, or write one per verb into a directory.
    Man(shell_cmd::ManArgs),
    /// Simulate an algorithm from flags, without a scenario file.
    Simulate(run::SimulateArgs),
    /// From a trace: did event a happen before event b, after it, or concurrently?
    Clocks(clocks_cmd::ClocksArgs),
    /// Draw a trace: SVG space-time diagram, Perfetto / chrome://tracing JSON, ShiViz log.
    Trace(trace_cmd::TraceArgs),
    /// Run every algorithm of a family on the same workloads and set the measured figures
    /// beside the formulas of theory.
    Compare(compare_cmd::CompareArgs),
    /// Plot a report figure against a scenario parameter for several algorithms.
    Sweep(sweep_cmd::SweepArgs),
    /// Explore every interleaving of a small configuration of any family but clock
    /// synchronization: prove its properties there, or print a shortest trace breaking one.
    ///
    /// Within bounds every fault is explored too (crashes, recoveries, loss, duplication,
    /// partitions). The properties are the family's: mutual exclusion, no deadlock and
    /// completion; one agreed, valid leader and termination; FIFO, causal or total order of
    /// deliveries; a snapshot that conserves the bank's money and is a consistent cut; and, with
    /// `--liveness`, that every obligation is eventually met under fairness.
    Check(check_cmd::CheckArgs),
    /// Run one node of a real cluster (TCP, the cluster file's algorithms) until SIGTERM/ctrl-c.
    Node(node_cmd::NodeArgs),
    /// Take a distributed lock, run a command holding it (with a fencing token), release it.
    Lock(lock_cmd::LockArgs),
    /// Campaign to lead NAME; run a command while leading, stop it when leadership is lost.
    Elect(elect_cmd::ElectArgs),
    /// Ask every node of a cluster who leads, and whether they agree.
    Leader(leader_cmd::LeaderArgs),
    /// Start, stop or inspect a cluster of node processes on this machine.
    Cluster(cluster_cmd::ClusterArgs),
    /// The replicated bank of a running cluster (put, add, interest, transfer, get, status), every
    /// update delivered through the cluster's multicast algorithm; and the nodes' own accounts.
    Store(store_cmd::StoreArgs),
    /// NTP for real: serve time over UDP, query NTP servers, see a cluster's clocks.
    Time(time_cmd::TimeArgs),
    /// Serve the interactive page: step through a run, choose what happens next, inject faults,
    /// step back. Prints its URL.
    Web(web_cmd::WebArgs),
    /// Run many randomized scenarios of algorithms (sizes, delays, faults) looking for
    /// violations, hangs and storms; write each failure as a scenario to reproduce it.
    Stress(stress_cmd::StressArgs),
    /// Measure the simulator, elections at scale and the checker, each figure beside an anchor
    /// measured in the same run (a bare binary-heap event loop, a goal), with their ratio.
    Bench(bench_cmd::BenchArgs),
}

/// How a verb ended, mapped to the exit code.
pub enum Outcome {
    /// Everything held.
    Ok,
    /// A monitor found a violation.
    Violation,
    /// This exit code (a locked command's status, a failed lock, a disagreement).
    Code(u8),
}

/// A failure that is the user's input: printed as one line, exit code 2.
pub struct InputError(pub String);

impl<E: std::fmt::Display> From<E> for InputError {
    fn from(e: E) -> Self {
        InputError(e.to_string())
    }
}

/// Every verb prints with `println!`, which panics when standard output cannot take the text
/// (`> /dev/full`, a full disk). That is a write error, not a bug: this hook turns exactly that
/// panic into the one-line error and exit code 2 of any bad input, and leaves every other panic
/// to the default hook. (A closed pipe never gets here: SIGPIPE ends the process first.)
fn stdout_write_errors_exit_cleanly() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if let Some(cause) = message.strip_prefix("failed printing to stdout: ") {
            eprintln!("error: cannot write to standard output: {cause}");
            std::process::exit(2);
        }
        default_hook(info);
    }));
}

fn main() -> ExitCode {
    // Output piped into `head` and closed early ends the process quietly, as for any Unix tool,
    // instead of a panic on the broken pipe: restore the default action of SIGPIPE, which the
    // Rust runtime sets to ignore.
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread starts; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    stdout_write_errors_exit_cleanly();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // `--help`, `--version` and usage errors: clap's own text, whose write can fail too.
        Err(e) => {
            if let Err(io) = e.print() {
                eprintln!("error: cannot write to standard output: {io}");
                return ExitCode::from(2);
            }
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    output::set_quiet(cli.quiet);
    let result = match cli.command {
        Command::List(args) => list::list(&args),
        Command::Run(args) => run::run_file(args),
        Command::Init(args) => scenario_cmd::init(args),
        Command::Validate(args) => scenario_cmd::validate(args),
        Command::Examples(args) => scenario_cmd::examples(args),
        Command::Completions(args) => shell_cmd::completions(args, Cli::command()),
        Command::Man(args) => shell_cmd::man(args, Cli::command()),
        Command::Simulate(args) => run::simulate(args),
        Command::Trace(args) => trace_cmd::trace(args),
        Command::Clocks(args) => clocks_cmd::clocks(args),
        Command::Compare(args) => compare_cmd::compare(args),
        Command::Sweep(args) => sweep_cmd::sweep_cmd(args),
        Command::Check(args) => check_cmd::check(args),
        Command::Node(args) => node_cmd::node(args),
        Command::Lock(args) => lock_cmd::lock(args),
        Command::Elect(args) => elect_cmd::elect(args),
        Command::Leader(args) => leader_cmd::leader(args),
        Command::Cluster(args) => cluster_cmd::cluster(args),
        Command::Store(args) => store_cmd::store(args),
        Command::Time(args) => time_cmd::time(args),
        Command::Web(args) => web_cmd::web(args),
        Command::Stress(args) => stress_cmd::stress_cmd(args),
        Command::Bench(args) => bench_cmd::bench_cmd(args),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Violation) => ExitCode::from(1),
        Ok(Outcome::Code(c)) => ExitCode::from(c),
        Err(InputError(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
