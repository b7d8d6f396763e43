//! Scenario templates: for one algorithm, a commented scenario with every field that algorithm
//! reads and its default, ready to edit and run (`distsync init ALGORITHM`).
//!
//! Active lines hold the default value (or a small, runnable choice where a field has none);
//! a line commented as `# field = value` is an optional field whose default depends on the
//! others (the comment says what it is), shown with a value that works when uncommented.
//!
//! The head and the network are the same for every algorithm; the family's fields and sections
//! come from its plug-in (`crates/sim/src/family`).

use crate::family::{self, blank, field, line};
use distsync_algorithms::registry;

/// The template of `algorithm` (a registry name), or an error naming the unknown name and the
/// closest known one.
///
/// ```
/// let text = distsync_sim::template::template("ricart-agrawala").unwrap();
/// let scenario = distsync_sim::Scenario::from_toml(&text, "init").unwrap();
/// assert_eq!(scenario.algorithm, "ricart-agrawala");
/// assert!(distsync_sim::template::template("ricart").is_err());
/// ```
pub fn template(algorithm: &str) -> Result<String, String> {
    let Some(entry) = registry::lookup(algorithm) else {
        let hint = registry::suggest(algorithm)
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        return Err(format!(
            "unknown algorithm `{algorithm}`{hint} (`distsync list` shows every algorithm)"
        ));
    };
    let name = entry.name;
    let plugin = family::plugin(entry.family);
    let nodes = plugin.template_nodes(name);
    let last = nodes - 1;
    let mut t = String::new();
    let w = &mut t;
    line(w, &format!("# {}", entry.description));
    line(
        w,
        &format!("# Written by `distsync init {name}`: every field this algorithm reads, with its"),
    );
    line(
        w,
        "# default. A commented `# field = value` line is optional; its comment gives the default.",
    );
    line(
        w,
        "# Check with `distsync validate FILE`, run with `distsync run FILE`; the format is",
    );
    line(w, "# docs/scenario-format.md.");
    field(
        w,
        "name",
        &format!("\"{name}-example\""),
        "a name for the report",
    );
    field(
        w,
        "algorithm",
        &format!("\"{name}\""),
        "see `distsync list`",
    );
    field(
        w,
        "nodes",
        &nodes.to_string(),
        &format!("ids 0..{last}; or ids = [...] instead, in ring order"),
    );
    field(
        w,
        "seed",
        "1",
        "the seed of every random choice (default 1)",
    );
    field(
        w,
        "until",
        "\"10s\"",
        "simulated-time horizon (default 60s)",
    );

    plugin.template_fields(w, name, last);

    blank(w);
    line(w, "[network]");
    field(
        w,
        "delay",
        "\"1ms\"",
        "or { uniform = [\"1ms\", \"5ms\"] } or { exponential = \"2ms\" } (default 1ms)",
    );
    let fifo_note = if entry.needs_fifo {
        "per-link FIFO delivery (default true); this algorithm needs it"
    } else {
        "per-link FIFO delivery (default true)"
    };
    field(w, "fifo", "true", fifo_note);
    let lossless = plugin.template_lossless_note();
    field(
        w,
        "loss",
        "0.0",
        &format!("probability a message is dropped (default 0){lossless}"),
    );
    field(
        w,
        "duplicate",
        "0.0",
        &format!("probability a message is delivered twice (default 0){lossless}"),
    );

    plugin.template_sections(w, name, last);
    Ok(t)
}
