//! Pictures of distsync runs.
//!
//! Everything here starts from a trace (`docs/trace-format.md`), read by [`trace::Trace::parse`]
//! or [`trace::Trace::read`] into this crate's own model, so any trace file draws, whoever wrote it:
//!
//! - [`svg::render`]: a space-time diagram (one line per process, messages as arrows coloured by
//!   kind, drops, duplicates, critical sections, crashes, recoveries, leaders, clock adjustments,
//!   and every event's Lamport and vector timestamps as a tooltip), for a time window;
//! - [`perfetto::render`]: Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing;
//! - [`shiviz::render`]: a log for ShiViz, with its own vector clocks;
//! - [`plot::line_chart`]: a line chart of measured series and theory curves, as SVG.
//!
//! ```
//! use distsync_viz::{svg, trace::Trace};
//! let text = r#"{"event":"header","version":1,"algorithm":"central","family":"mutex","ids":[0,1],"seed":1}
//! {"seq":0,"time_ns":0,"event":"send","node":1,"lamport":1,"vector":[0,1],"to":0,"msg_id":0,"kind":"Request","msg":"Request"}
//! {"seq":1,"time_ns":1000000,"event":"deliver","node":0,"lamport":2,"vector":[1,1],"from":1,"msg_id":0,"kind":"Request","msg":"Request","duplicate":false}"#;
//! let trace = Trace::parse(text, "example.jsonl").unwrap();
//! let picture = svg::render(&trace, &svg::SvgOptions::default()).unwrap();
//! assert_eq!(picture.matches("class=\"msg").count(), 1);
//! ```

pub mod perfetto;
pub mod plot;
mod scale;
pub mod shiviz;
pub mod svg;
pub mod trace;
mod units;

pub use units::format_ns;

use std::fmt;

/// Why a picture cannot be drawn from an otherwise valid trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenderError {
    /// The time window is empty: `from` is after `to`.
    Window {
        /// The requested start, in nanoseconds.
        from_ns: u64,
        /// The requested end, in nanoseconds.
        to_ns: u64,
    },
    /// A plot was asked for with nothing to draw or with values it cannot place.
    Plot(String),
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderError::Window { from_ns, to_ns } => write!(
                f,
                "the time window is empty: --from {} is after --to {}",
                format_ns(*from_ns),
                format_ns(*to_ns)
            ),
            RenderError::Plot(m) => write!(f, "cannot plot: {m}"),
        }
    }
}

impl std::error::Error for RenderError {}
