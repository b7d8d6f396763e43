//! `distsync trace render`: a trace file drawn as an SVG space-time diagram, exported for
//! Perfetto / chrome://tracing, or as a ShiViz log; and the capture behind `distsync run --svg`.

use crate::{InputError, Outcome};
use distsync_core::parse_duration;
use distsync_viz::svg::SvgOptions;
use distsync_viz::trace::Trace;
use distsync_viz::{perfetto, shiviz, svg};
use std::cell::RefCell;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// Arguments of `distsync trace`.
#[derive(clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(clap::Subcommand)]
enum TraceCommand {
    /// Draw a trace (from `run --trace`): an SVG space-time diagram, Chrome trace-event JSON for
    /// ui.perfetto.dev and chrome://tracing, or a ShiViz log. Give at least one output.
    Render(RenderArgs),
}

/// Arguments of `distsync trace render`.
#[derive(clap::Args)]
pub struct RenderArgs {
    /// The trace file (JSON lines, as written by `distsync run --trace`).
    trace: PathBuf,
    /// Write the space-time diagram to this SVG file.
    #[arg(long, value_name = "OUT.svg")]
    svg: Option<PathBuf>,
    /// Write Chrome trace-event JSON (Perfetto UI, chrome://tracing) to this file.
    #[arg(long, value_name = "OUT.json")]
    perfetto: Option<PathBuf>,
    /// Write a ShiViz log to this file.
    #[arg(long, value_name = "OUT.log")]
    shiviz: Option<PathBuf>,
    /// Start of the SVG's time window (e.g. "2ms"; default: the start of the run).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    from: Option<u64>,
    /// End of the SVG's time window (e.g. "5ms"; default: the last event).
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    to: Option<u64>,
}

/// A duration on the command line, in nanoseconds.
fn parse_time(s: &str) -> Result<u64, String> {
    let d = parse_duration(s).map_err(|e| e.to_string())?;
    u64::try_from(d.as_nanos()).map_err(|_| format!("`{s}` is too long"))
}

/// Runs `distsync trace ...`.
pub fn trace(args: TraceArgs) -> Result<Outcome, InputError> {
    match args.command {
        TraceCommand::Render(args) => render(args),
    }
}

fn render(args: RenderArgs) -> Result<Outcome, InputError> {
    if args.svg.is_none() && args.perfetto.is_none() && args.shiviz.is_none() {
        return Err(InputError(
            "nothing to write: give --svg OUT.svg, --perfetto OUT.json or --shiviz OUT.log".into(),
        ));
    }
    if args.svg.is_none() && (args.from.is_some() || args.to.is_some()) {
        return Err(InputError(
            "--from and --to select the time window of the --svg drawing; give --svg too".into(),
        ));
    }
    let file = std::fs::File::open(&args.trace)
        .map_err(|e| format!("cannot read the trace {}: {e}", args.trace.display()))?;
    let trace = Trace::read(BufReader::new(file), &args.trace.display().to_string())?;
    if let Some(out) = &args.svg {
        let options = SvgOptions {
            from_ns: args.from,
            to_ns: args.to,
        };
        write_out(out, &svg::render(&trace, &options)?)?;
        println!("{}: space-time diagram", out.display());
    }
    if let Some(out) = &args.perfetto {
        write_out(out, &perfetto::render(&trace))?;
        println!(
            "{}: Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing)",
            out.display()
        );
    }
    if let Some(out) = &args.shiviz {
        write_out(out, &shiviz::render(&trace))?;
        println!("{}: ShiViz log", out.display());
    }
    Ok(Outcome::Ok)
}

fn write_out(path: &Path, text: &str) -> Result<(), InputError> {
    std::fs::write(path, text)
        .map_err(|e| InputError(format!("cannot write {}: {e}", path.display())))
}

/// A trace kept in memory while the simulator writes it (for `distsync run --svg`).
#[derive(Clone, Default)]
pub struct Captured(Rc<RefCell<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes to a file and keeps a copy in memory.
pub struct Tee(pub Box<dyn Write>, pub Captured);

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.0.write(buf)?;
        self.1.write_all(&buf[..n])?;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Draws the captured trace of a run to `out`; `origin` names the run in errors.
pub fn svg_of_run(captured: &Captured, origin: &str, out: &Path) -> Result<(), InputError> {
    let bytes = captured.0.borrow();
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| InputError(format!("the trace of {origin} is not UTF-8: {e}")))?;
    let trace = Trace::parse(text, &format!("trace of {origin}"))?;
    write_out(out, &svg::render(&trace, &SvgOptions::default())?)
}
