//! `distsync`: run the classic algorithms of distributed synchronization and see them work and
//! break. Every verb is thin: it parses, calls into the library crates and prints.
//!
//! Exit codes: 0 when the run completed and every monitored property held, 1 when a monitor
//! found a violation, 2 for bad input (an unreadable or invalid scenario, a bad flag).

mod compare_cmd;
mod list;
mod output;
mod run;
mod sweep_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Distributed synchronization, coordination and agreement algorithms: simulate them, check
/// their properties, measure their costs.
#[derive(Parser)]
#[command(name = "distsync", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the algorithms: name, family, whether they need FIFO channels, description.
    List(list::ListArgs),
    /// Run a scenario file in the deterministic simulator.
    Run(run::RunArgs),
    /// Simulate an algorithm from flags, without a scenario file.
    Simulate(run::SimulateArgs),
    /// Run every algorithm of a family on the same workloads and set the measured figures
    /// beside the formulas of theory.
    Compare(compare_cmd::CompareArgs),
    /// Plot a report figure against a scenario parameter for several algorithms.
    Sweep(sweep_cmd::SweepArgs),
}

/// How a verb ended, mapped to the exit code.
pub enum Outcome {
    /// Everything held.
    Ok,
    /// A monitor found a violation.
    Violation,
}

/// A failure that is the user's input: printed as one line, exit code 2.
pub struct InputError(pub String);

impl<E: std::fmt::Display> From<E> for InputError {
    fn from(e: E) -> Self {
        InputError(e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::List(args) => list::list(&args),
        Command::Run(args) => run::run_file(args),
        Command::Simulate(args) => run::simulate(args),
        Command::Compare(args) => compare_cmd::compare(args),
        Command::Sweep(args) => sweep_cmd::sweep_cmd(args),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Violation) => ExitCode::from(1),
        Err(InputError(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
