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
    /// Write the space-time diagram to this SVG file ("-": to standard output). Without
    /// --from/--to, a trace of more than 4000 events is drawn up to its 4000th (stderr says so).
    #[arg(long, value_name = "OUT.svg")]
    svg: Option<PathBuf>,
    /// Write Chrome trace-event JSON (Perfetto UI, chrome://tracing) to this file.
    #[arg(long, value_name = "OUT.json")]
    perfetto: Option<PathBuf>,
    /// Write a ShiViz log to this file.
    #[arg(long, value_name = "OUT.log")]
    shiviz: Option<PathBuf>,
    /// Start of the SVG's time window (e.g. "2ms"; default: the start of the run).
    #[arg(long, value_name = "TIME", value_parser = parse_time, allow_hyphen_values = true)]
    from: Option<u64>,
    /// End of the SVG's time window (e.g. "5ms"; default: the last event).
    #[arg(long, value_name = "TIME", value_parser = parse_time, allow_hyphen_values = true)]
    to: Option<u64>,
}

/// A time since the start of the run on the command line, in nanoseconds; a negative one is
/// refused in words (clap would take `-1ms` for a flag).
fn parse_time(s: &str) -> Result<u64, String> {
    if s.trim().starts_with('-') {
        return Err(format!(
            "expected a time of 0 or more since the start of the run, like 2ms; got the negative time {}",
            s.trim()
        ));
    }
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
    // Every output is checked before the trace is read (a large one takes a while).
    let outputs = [
        ("--svg", args.svg.as_ref().filter(|p| p.as_os_str() != "-")),
        ("--perfetto", args.perfetto.as_ref()),
        ("--shiviz", args.shiviz.as_ref()),
    ];
    for (flag, path) in outputs {
        if let Some(path) = path {
            crate::output::check_output_path(flag, path)?;
        }
    }
    let file = std::fs::File::open(&args.trace)
        .map_err(|e| format!("cannot read the trace {}: {e}", args.trace.display()))?;
    let origin = args.trace.display().to_string();
    // A window of the SVG alone: only what its drawing needs is kept in memory (the same
    // drawing), so a window of a trace of any size costs memory in proportion to the window.
    let windowed = args.svg.is_some()
        && args.perfetto.is_none()
        && args.shiviz.is_none()
        && (args.from.is_some() || args.to.is_some());
    let (trace, end) = if windowed {
        let w = Trace::read_window(
            BufReader::new(file),
            &origin,
            args.from.unwrap_or(0),
            args.to,
        )?;
        (w.trace, w.end_time_ns)
    } else {
        let trace = Trace::read(BufReader::new(file), &origin)?;
        let end = trace.end_time_ns();
        (trace, end)
    };
    if let Some(out) = &args.svg {
        if let Some(from) = args.from.filter(|&f| f > end) {
            return Err(InputError(format!(
                "--from {}: after the trace's last event, at {} ({})",
                time_arg(from),
                distsync_viz::format_ns(end),
                args.trace.display()
            )));
        }
        let mut options = SvgOptions {
            from_ns: args.from,
            to_ns: args.to,
        };
        if args.from.is_none() && args.to.is_none() {
            if let Some((from, to, why)) = default_window(&trace, false) {
                options = SvgOptions {
                    from_ns: Some(from),
                    to_ns: Some(to),
                };
                crate::output::note(format!(
                    "{}: {why}; choose another window with --from and --to (the trace ends at {})",
                    args.trace.display(),
                    distsync_viz::format_ns(end)
                ));
            }
        }
        let drawing = svg::render(&trace, &options)?;
        if out.as_os_str() == "-" {
            crate::output::write_stdout(&drawing)?;
        } else {
            write_out(out, &drawing)?;
            crate::output::note(format!("{}: space-time diagram", out.display()));
        }
    }
    // What was written is talk, not data: it goes to stderr, so standard output carries only
    // the SVG when `--svg -` asks for it.
    let note = |text: String| crate::output::note(text);
    if let Some(out) = &args.perfetto {
        write_out(out, &perfetto::render(&trace))?;
        note(format!(
            "{}: Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing)",
            out.display()
        ));
    }
    if let Some(out) = &args.shiviz {
        write_out(out, &shiviz::render(&trace))?;
        note(format!("{}: ShiViz log", out.display()));
    }
    Ok(Outcome::Ok)
}

fn write_out(path: &Path, text: &str) -> Result<(), InputError> {
    std::fs::write(path, text)
        .map_err(|e| InputError(format!("cannot write {}: {e}", path.display())))
}

/// The most trace events `run --svg` keeps in memory for its drawing. Parsing and laying out a
/// trace costs far more than its text: 48 processes under heavy load (20 requests each) took
/// 470 MB in a debug build, 80 processes 4 GB and 26 s, and 200 processes did not end. Past this, the
/// drawing is refused with the way to draw a window of the run instead. The environment
/// variable `DISTSYNC_MAX_CAPTURED_EVENTS` sets another cap (the tests use a small one).
pub const MAX_CAPTURED_EVENTS: usize = 100_000;

fn max_captured_events() -> usize {
    std::env::var("DISTSYNC_MAX_CAPTURED_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(MAX_CAPTURED_EVENTS)
}

/// A trace kept in memory while the simulator writes it (for `distsync run --svg`), up to
/// [`MAX_CAPTURED_EVENTS`] lines: past them nothing more is kept, and the capture says so.
#[derive(Clone)]
pub struct Captured(Rc<RefCell<Capture>>);

/// What [`Captured`] holds.
pub struct Capture {
    bytes: Vec<u8>,
    lines: usize,
    cap: usize,
    over: bool,
}

impl Default for Captured {
    fn default() -> Captured {
        Captured(Rc::new(RefCell::new(Capture {
            bytes: Vec::new(),
            lines: 0,
            cap: max_captured_events(),
            over: false,
        })))
    }
}

impl Captured {
    /// Whether the trace went past the cap, so that nothing of it is kept.
    pub fn over(&self) -> bool {
        self.0.borrow().over
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut c = self.0.borrow_mut();
        if !c.over {
            c.lines += buf.iter().filter(|&&b| b == b'\n').count();
            // The header line is not an event.
            if c.lines > c.cap + 1 {
                c.over = true;
                c.bytes = Vec::new();
            } else {
                c.bytes.extend_from_slice(buf);
            }
        }
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

/// Above this many events in the window, a drawing is windowed automatically (a wider one is
/// megabytes of SVG that a browser draws slowly and nobody can read); `--from/--to` choose.
pub const MAX_DRAWN_EVENTS: usize = 4000;

/// Events drawn before and after a violation when the drawing is windowed around it.
const BEFORE_VIOLATION: usize = 60;
const AFTER_VIOLATION: usize = 20;

/// A time for the command line, exact in the largest unit that divides it: 179700us, 2s.
pub fn time_arg(ns: u64) -> String {
    match ns {
        0 => "0s".into(),
        n if n % 3_600_000_000_000 == 0 => format!("{}h", n / 3_600_000_000_000),
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

/// The window `run --svg` and `trace render` draw when none is given: around the first
/// violation if there is one, else the first MAX_DRAWN_EVENTS events when there are more; and
/// why, for stderr. `None`: the whole run.
pub fn default_window(trace: &Trace, around_violation: bool) -> Option<(u64, u64, String)> {
    let events = &trace.events;
    let round_down = |t: u64| t / 1_000 * 1_000;
    let round_up = |t: u64| t.div_ceil(1_000) * 1_000;
    if let Some(&(i, t, property, _)) = trace.violations().first().filter(|_| around_violation) {
        let from = round_down(events[i.saturating_sub(BEFORE_VIOLATION)].time_ns);
        let to = round_up(
            events[(i + AFTER_VIOLATION).min(events.len() - 1)]
                .time_ns
                .max(t),
        );
        if from == 0 && to >= trace.end_time_ns() {
            return None;
        }
        return Some((
            from,
            to,
            format!(
                "violation of {property} at {}: drawn from {} to {} around it",
                distsync_viz::format_ns(t),
                time_arg(from),
                time_arg(to)
            ),
        ));
    }
    if events.len() > MAX_DRAWN_EVENTS {
        let to = round_up(events[MAX_DRAWN_EVENTS].time_ns);
        return Some((
            0,
            to,
            format!(
                "the trace has {} events (a message's send and its delivery are two), too many to draw legibly: drawn up to its {}th, {}",
                events.len(),
                MAX_DRAWN_EVENTS,
                time_arg(to)
            ),
        ));
    }
    None
}

/// Checks, before a run, where `run --svg` will draw: not standard output (the run's report goes
/// there), not a directory, in a directory that exists. `trace_file` and `rerun` as in
/// [`svg_of_run`].
pub fn check_svg_out(out: &Path, trace_file: Option<&Path>, rerun: &str) -> Result<(), InputError> {
    // Standard output is the run's report; `trace render --svg -` is the way to a pipe.
    if out.as_os_str() == "-" {
        let file = trace_file.map_or("run.jsonl".into(), |p| p.display().to_string());
        let first = match trace_file {
            Some(_) => String::new(),
            None => format!("{rerun} --trace run.jsonl && "),
        };
        return Err(InputError(format!(
            "--svg -: `run` prints its report on standard output, so the drawing needs a \
             file (--svg run.svg); to draw it on standard output: {first}distsync trace render \
             {file} --svg -"
        )));
    }
    if out.is_dir() {
        return Err(InputError(format!(
            "--svg {}: it is a directory; name the file to draw (--svg {}/run.svg)",
            out.display(),
            out.display()
        )));
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(InputError(format!(
            "--svg {}: the directory {} does not exist",
            out.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// Draws the captured trace of a run to `out`, windowed as `default_window` says (saying so on
/// stderr, with the commands that draw other windows); `origin` names the run in errors,
/// `trace_file` is the run's `--trace` file if it has one and `rerun` the command that
/// repeats the run.
pub fn svg_of_run(
    captured: &Captured,
    origin: &str,
    out: &Path,
    trace_file: Option<&Path>,
    rerun: &str,
) -> Result<(), InputError> {
    let capture = captured.0.borrow();
    if capture.over {
        let (first, file) = match trace_file {
            Some(path) => (String::new(), path.display().to_string()),
            None => (
                format!("{rerun} --trace run.jsonl && "),
                "run.jsonl".to_string(),
            ),
        };
        return Err(InputError(format!(
            "--svg {}: the run's trace has more than {} events, too many to keep for a drawing \
             (80 processes under heavy load took 4 GB and 26 s); draw a window of it: \
             {first}distsync trace render {file} --svg {} --from T1 --to T2",
            out.display(),
            capture.cap,
            out.display()
        )));
    }
    let text = std::str::from_utf8(&capture.bytes)
        .map_err(|e| InputError(format!("the trace of {origin} is not UTF-8: {e}")))?;
    let trace = Trace::parse(text, &format!("trace of {origin}"))?;
    let window = default_window(&trace, true);
    let options = match &window {
        Some((from, to, _)) => SvgOptions {
            from_ns: Some(*from),
            to_ns: Some(*to),
        },
        None => SvgOptions::default(),
    };
    write_out(out, &svg::render(&trace, &options)?)?;
    if let Some((from, to, why)) = window {
        let (first, file) = match trace_file {
            Some(path) => (String::new(), path.display().to_string()),
            None => (
                format!("{rerun} --trace run.jsonl && "),
                "run.jsonl".to_string(),
            ),
        };
        crate::output::note(format!(
            "{}: {why}\n  this window: {first}distsync trace render {file} --svg {} --from {} --to {}\n  another: choose --from and --to (the run ends at {})",
            out.display(),
            out.display(),
            time_arg(from),
            time_arg(to),
            distsync_viz::format_ns(trace.end_time_ns())
        ));
    }
    Ok(())
}
