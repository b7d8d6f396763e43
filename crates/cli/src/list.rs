//! `distsync list`: the registry.

use crate::{InputError, Outcome};
use distsync_algorithms::registry;

/// Arguments of `distsync list`.
#[derive(clap::Args)]
pub struct ListArgs {
    /// Print JSON (an array of {name, family, needs_fifo, description}).
    #[arg(long)]
    json: bool,
}

pub fn list(args: &ListArgs) -> Result<Outcome, InputError> {
    let entries = registry::entries();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(Outcome::Ok);
    }
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    // Every family's name fits its column, "clock-sync" and "multicast" included.
    let fam = entries
        .iter()
        .map(|e| e.family.name().len())
        .max()
        .unwrap_or(0);
    println!(
        "{:width$}  {:fam$}  {:4}  description",
        "name", "family", "fifo"
    );
    for e in entries {
        println!(
            "{:width$}  {:fam$}  {:4}  {}",
            e.name,
            e.family.name(),
            if e.needs_fifo { "yes" } else { "no" },
            e.description
        );
    }
    Ok(Outcome::Ok)
}
