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
    use std::fmt::Write as _;
    let entries = registry::entries();
    let mut text = String::new();
    if args.json {
        text = serde_json::to_string_pretty(&entries)? + "\n";
    } else {
        let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
        // Every family's name fits its column, "clock-sync" and "multicast" included.
        let fam = entries
            .iter()
            .map(|e| e.family.name().len())
            .max()
            .unwrap_or(0);
        let _ = writeln!(
            text,
            "{:width$}  {:fam$}  {:4}  description",
            "name", "family", "fifo"
        );
        for e in entries {
            let _ = writeln!(
                text,
                "{:width$}  {:fam$}  {:4}  {}",
                e.name,
                e.family.name(),
                if e.needs_fifo { "yes" } else { "no" },
                e.description
            );
        }
    }
    crate::output::write_stdout(&text)?;
    Ok(Outcome::Ok)
}
