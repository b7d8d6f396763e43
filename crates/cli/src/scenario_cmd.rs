//! `distsync init`, `distsync validate` and `distsync examples`: scenarios without a checkout.
//!
//! The example scenarios are the files of `scenarios/`, built into the binary, so that an
//! installed `distsync` has them (a test checks this list against the directory).

use crate::{InputError, Outcome};
use distsync_sim::{run, RunOptions, Scenario};
use std::path::PathBuf;
use std::time::Duration;

/// Every file of `scenarios/`: its name (the file name without `.toml`) and its text (kept in
/// crates/web, whose page offers them too).
pub use distsync_web::examples::EXAMPLES;

/// Arguments of `distsync examples`.
#[derive(clap::Args)]
pub struct ExamplesArgs {
    /// Print this example scenario (a name from the list, with or without `.toml`); without a
    /// name, list them all with what each shows.
    name: Option<String>,
    /// Write the scenario to this file instead of printing it.
    #[arg(long, value_name = "FILE", requires = "name")]
    out: Option<PathBuf>,
}

/// Arguments of `distsync init`.
#[derive(clap::Args)]
pub struct InitArgs {
    /// The algorithm (see `distsync list`).
    algorithm: String,
    /// Write the scenario to this file (refused if it exists) instead of printing it.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Arguments of `distsync validate`.
#[derive(clap::Args)]
pub struct ValidateArgs {
    /// The scenario file (TOML).
    scenario: PathBuf,
}

/// The first comment line of a scenario: what it shows.
fn headline(text: &str) -> &str {
    text.lines()
        .next()
        .and_then(|l| l.strip_prefix("# "))
        .unwrap_or("")
}

pub fn examples(args: ExamplesArgs) -> Result<Outcome, InputError> {
    let Some(name) = args.name else {
        let width = EXAMPLES.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        for (name, text) in EXAMPLES {
            println!("{name:width$}  {}", headline(text));
        }
        println!();
        println!(
            "`distsync examples NAME` prints one; `distsync examples NAME --out FILE` writes it."
        );
        return Ok(Outcome::Ok);
    };
    let wanted = name.strip_suffix(".toml").unwrap_or(&name);
    let Some((_, text)) = EXAMPLES.iter().find(|(n, _)| *n == wanted) else {
        let hint = EXAMPLES
            .iter()
            .map(|(n, _)| (strsim::levenshtein(n, wanted), *n))
            .min()
            .filter(|(d, _)| *d <= 3)
            .map(|(_, n)| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
        return Err(InputError(format!(
            "no example scenario named `{wanted}`{hint} (`distsync examples` lists them)"
        )));
    };
    write_or_print(text, args.out)
}

fn write_or_print(text: &str, out: Option<PathBuf>) -> Result<Outcome, InputError> {
    match out {
        None => print!("{text}"),
        Some(path) => {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| format!("--out {}: cannot create it: {e}", path.display()))?;
            std::io::Write::write_all(&mut file, text.as_bytes())
                .map_err(|e| format!("--out {}: {e}", path.display()))?;
            crate::output::note(format!(
                "wrote {}; run it with `distsync run {}`",
                path.display(),
                path.display()
            ));
        }
    }
    Ok(Outcome::Ok)
}

pub fn init(args: InitArgs) -> Result<Outcome, InputError> {
    let text = distsync_sim::template::template(&args.algorithm)
        .map_err(|e| InputError(format!("{}: {e}", args.algorithm)))?;
    write_or_print(&text, args.out)
}

/// Checks a scenario as a run would (parsing, every field, the algorithm's own parameters and
/// its family's fields) by building the run and stopping it at its first instant.
pub fn validate(args: ValidateArgs) -> Result<Outcome, InputError> {
    let origin = args.scenario.display().to_string();
    let scenario = Scenario::load(&args.scenario)?;
    // The scenario as written (its events against its horizon), then a run of its first instant
    // with every scripted event moved there, so that the algorithm's checks see them all.
    scenario.check(&origin)?;
    let mut first_instant = scenario.clone();
    first_instant.until = Some(Duration::from_nanos(1));
    for event in &mut first_instant.events {
        event.at = Duration::ZERO;
    }
    run(
        &first_instant,
        RunOptions {
            origin: origin.clone(),
            ..RunOptions::default()
        },
    )?;
    let nodes = scenario
        .nodes
        .map(|n| n as usize)
        .or(scenario.ids.as_ref().map(Vec::len))
        .unwrap_or(0);
    let events = scenario.events.len();
    println!(
        "{origin}: valid: {}, {}, seed {}, until {}, {}",
        scenario.algorithm,
        crate::output::count(nodes as u64, "node"),
        scenario.seed,
        distsync_core::format_duration(scenario.until.unwrap_or(Duration::from_secs(60))),
        crate::output::count(events as u64, "scripted event"),
    );
    Ok(Outcome::Ok)
}
