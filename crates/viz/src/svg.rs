//! The space-time diagram of a run, as SVG written by hand.
//!
//! One horizontal line per process (in the header's `ids` order, labelled `P<id>`), time from left
//! to right on a scale with units. Each element has a stable class, so tests and stylesheets can
//! find it:
//!
//! | class | what |
//! | --- | --- |
//! | `process` | one group per process: its line (`lifeline`) and its label (`label`) |
//! | `msg` | one arrow per delivered copy of a message, coloured by kind; `msg duplicate` (dashed) for the second copy of a duplicated message |
//! | `drop` | one group per dropped message: a dotted line from the send to a cross (`cross`) on the receiver's line where it would have arrived |
//! | `inflight` | a message still travelling when the trace ends |
//! | `cs` | a critical section (output `Enter` to `Exit` or crash) as a thick bar; `cs crashed`, `cs open` |
//! | `down` | the stretch of a process line between a crash and its recovery |
//! | `crash`, `recover` | a red cross and a green triangle on the process line |
//! | `leader` | a leader announcement (an output `{"Leader": id}`), labelled with the leader |
//! | `adjust` | a clock adjustment: an `adjust` event (the runtime corrected the clock by `delta_ns`), labelled with the correction |
//! | `output` | any other output, labelled with its variant |
//! | `partition`, `heal` | a vertical line across all processes |
//! | `ev` | one dot per event on a process line (`ev-send`, `ev-deliver`, `ev-input`, `ev-output`, `ev-timer`, ...), whose `<title>` tooltip gives the event's time, sequence number, Lamport and vector timestamps |
//! | `legend` | the key: message kinds and the marks used |
//!
//! The drawing scales to its content: the typical gap between successive event times gets a fixed
//! room, so the width grows with the number of events, and quiet stretches are shortened and
//! marked as breaks in the axis (`gap`), as `scale.rs` explains. The plot is 720 to 60 000 pixels
//! wide.

use crate::scale::TimeScale;
use crate::trace::{leader_of, variant_name, Event, EventKind, NodeId, Trace};
use crate::units::{format_ns_short, in_unit, nice_step, unit_for};
use crate::{format_ns, RenderError};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write as _;

/// What part of the run to draw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SvgOptions {
    /// Start of the time window in nanoseconds (default: 0).
    pub from_ns: Option<u64>,
    /// End of the time window in nanoseconds (default: the last event).
    pub to_ns: Option<u64>,
}

const LEFT: f64 = 84.0;
const RIGHT: f64 = 72.0;
const TOP: f64 = 72.0;
const LANE: f64 = 64.0;
/// The widest glyph's half-width (the crash cross with its stroke).
const GLYPH_HALF: f64 = 8.75;

/// Colours for message kinds, in order of first appearance in the trace (red is kept for crashes
/// and drops).
const PALETTE: [&str; 12] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
    "#393b79", "#637939", "#8c6d31", "#7f7f7f",
];

/// Escapes text for SVG/XML content and attribute values; characters XML cannot hold (control
/// characters other than tab, newline and carriage return) become U+FFFD.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_escaped(&mut out, text);
    out
}

fn push_escaped(out: &mut String, text: &str) {
    let bytes = text.as_bytes();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let (replacement, len) = match bytes[i] {
            b'&' => ("&amp;", 1),
            b'<' => ("&lt;", 1),
            b'>' => ("&gt;", 1),
            b'"' => ("&quot;", 1),
            b'\'' => ("&#39;", 1),
            b'\t' | b'\n' | b'\r' => {
                i += 1;
                continue;
            }
            0..=0x1f => ("\u{FFFD}", 1),
            // U+FFFE and U+FFFF (EF BF BE, EF BF BF) are not XML characters either.
            0xEF if bytes.get(i + 1) == Some(&0xBF)
                && matches!(bytes.get(i + 2), Some(0xBE | 0xBF)) =>
            {
                ("\u{FFFD}", 3)
            }
            _ => {
                i += 1;
                continue;
            }
        };
        out.push_str(&text[start..i]);
        out.push_str(replacement);
        i += len;
        start = i;
    }
    out.push_str(&text[start..]);
}

/// The diagram's style sheet, the text of its `<style>` element (a page that embeds the diagram
/// under a Content-Security-Policy allows exactly this text by its hash).
pub const STYLE: &str = "\n\
             .lifeline{stroke:#444;stroke-width:1.2}\n\
             .down{stroke:#f6c4c4;stroke-width:9}\n\
             .label{font-weight:bold;font-size:14px}\n\
             .grid{stroke:#e4e4e4;stroke-width:1}\n\
             .axis{stroke:#444;stroke-width:1}\n\
             .msg{stroke-width:1.5;fill:none}\n\
             .msg.duplicate{stroke-dasharray:7 4}\n\
             .drop line{stroke-width:1.3;stroke-dasharray:2 3}\n\
             .cross{stroke:#d62728;stroke-width:2.5}\n\
             .inflight{stroke-width:1.3;stroke-dasharray:1 3}\n\
             .cs{fill:#222;fill-opacity:0.55}\n\
             .cs.crashed{fill:#d62728}\n\
             .mark{font-size:10px}\n";

/// Draws the space-time diagram of `trace` for the window in `opts`.
pub fn render(trace: &Trace, opts: &SvgOptions) -> Result<String, RenderError> {
    let t0 = opts.from_ns.unwrap_or(0);
    let t1 = opts.to_ns.unwrap_or_else(|| trace.end_time_ns().max(t0));
    if t1 < t0 {
        return Err(RenderError::Window {
            from_ns: t0,
            to_ns: t1,
        });
    }
    Ok(Diagram::new(trace, t0, t1).draw())
}

struct Diagram<'a> {
    trace: &'a Trace,
    t0: u64,
    t1: u64,
    /// Events `lo..hi` of the trace lie in the window.
    lo: usize,
    hi: usize,
    plot_width: f64,
    scale: TimeScale,
    kinds: Vec<&'a str>,
    kind_index: HashMap<&'a str, usize>,
    lanes: HashMap<NodeId, usize>,
    used: Used,
    /// Per lane, where the last label above (below) the line ends.
    label_end_above: Vec<f64>,
    label_end_below: Vec<f64>,
    /// Where each (lane, above, text) label was last drawn.
    last_label: HashMap<(usize, String), f64>,
    /// The boxes of the glyphs drawn in the window (crash crosses, recovery triangles, leader
    /// and adjustment diamonds), which no label may cover; in time order.
    glyphs: Vec<[f64; 4]>,
    /// Where the last label of the row above the processes (partition, heal) ends.
    top_label_end: f64,
}

/// Which marks appear, for the legend.
#[derive(Default)]
struct Used {
    kinds: Vec<bool>,
    duplicate: bool,
    drop: bool,
    inflight: bool,
    cs: bool,
    crash: bool,
    recover: bool,
    leader: bool,
    adjust: bool,
    partition: bool,
    violation: bool,
    input: bool,
    timer: bool,
    output: bool,
    dot: bool,
}

impl<'a> Diagram<'a> {
    fn new(trace: &'a Trace, t0: u64, t1: u64) -> Diagram<'a> {
        let lo = trace.events.partition_point(|e| e.time_ns < t0);
        let hi = trace.events.partition_point(|e| e.time_ns <= t1);
        let scale = TimeScale::new(t0, t1, trace.events[lo..hi].iter().map(|e| e.time_ns));
        let plot_width = scale.width;
        let mut kinds = Vec::new();
        let mut kind_index = HashMap::new();
        for e in &trace.events {
            let kind = match &e.kind {
                EventKind::Send { kind, .. }
                | EventKind::Deliver { kind, .. }
                | EventKind::Drop { kind, .. } => kind.as_str(),
                _ => continue,
            };
            kind_index.entry(kind).or_insert_with(|| {
                kinds.push(kind);
                kinds.len() - 1
            });
        }
        let lanes = trace
            .header
            .ids
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i))
            .collect();
        let used = Used {
            kinds: vec![false; kinds.len()],
            ..Used::default()
        };
        Diagram {
            trace,
            t0,
            t1,
            lo,
            hi,
            plot_width,
            scale,
            kinds,
            kind_index,
            lanes,
            used,
            label_end_above: vec![f64::NEG_INFINITY; trace.header.ids.len()],
            label_end_below: vec![f64::NEG_INFINITY; trace.header.ids.len()],
            last_label: HashMap::new(),
            glyphs: Vec::new(),
            top_label_end: f64::NEG_INFINITY,
        }
    }

    fn x(&self, t: u64) -> f64 {
        LEFT + self.scale.x(t)
    }

    /// Whether a label of `text` starting at `x` above (or below) `node`'s line stays clear of
    /// the last one drawn there and of every glyph, and says something new; if so, it takes the
    /// room. Labels that would overlap, and a label repeating one drawn on the same line less
    /// than REPEAT_GAP pixels before (Berkeley's "Master" every round), are left out: the mark
    /// and its tooltip stay.
    fn label_room(&mut self, node: NodeId, above: bool, x: f64, text: &str) -> bool {
        if !self.label_fits(node, above, x, text) {
            return false;
        }
        self.take_label(node, above, x, text);
        true
    }

    /// Where a label of `text` may go near `x`, at `node`'s line, `above` it by preference:
    /// there, else moved right past the glyphs in its way (a few times at most), else, if it may
    /// `flip`, on the other side at `x`; None if it is a repeat or finds no room. Takes the room
    /// it returns. (The preferred side keeps the label off the arrows, so it is tried first.)
    fn label_place(
        &mut self,
        node: NodeId,
        above: bool,
        flip: bool,
        x: f64,
        text: &str,
    ) -> Option<(bool, f64)> {
        if self.is_repeat(node, x, text) {
            return None;
        }
        let mut at = x;
        for _ in 0..4 {
            if self.label_fits(node, above, at, text) {
                self.take_label(node, above, at, text);
                return Some((above, at));
            }
            // Past the rightmost glyph in the way.
            let bx = self.label_box(node, above, at, text);
            let past = self
                .glyphs_near(bx)
                .filter(|g| overlaps(bx, **g))
                .map(|g| g[2])
                .fold(f64::NEG_INFINITY, f64::max);
            if past == f64::NEG_INFINITY {
                break; // in the way of a label, not of a glyph
            }
            at = past + 2.0;
        }
        if flip && self.label_fits(node, !above, x, text) {
            self.take_label(node, !above, x, text);
            return Some((!above, x));
        }
        None
    }

    /// The label's box: 10 px type at 6.2 px per character (and a quarter pixel either side,
    /// for the coordinates' rounding), from 9 px above its baseline to 2.5 px below; baselines
    /// 9 px above the line, 18 below. Above, it just clears its own diamond (which reaches
    /// 6.5 px up with its stroke).
    fn label_box(&self, node: NodeId, above: bool, x: f64, text: &str) -> [f64; 4] {
        let baseline = self.y(node) + if above { -9.0 } else { 18.0 };
        [
            x - 0.25,
            baseline - 9.0,
            x + text.chars().count() as f64 * 6.2 + 0.25,
            baseline + 2.5,
        ]
    }

    fn label_fits(&self, node: NodeId, above: bool, x: f64, text: &str) -> bool {
        let lane = self.lanes.get(&node).copied().unwrap_or(0);
        let ends = if above {
            &self.label_end_above
        } else {
            &self.label_end_below
        };
        if x < ends[lane] + 4.0 || self.is_repeat(node, x, text) {
            return false;
        }
        let bx = self.label_box(node, above, x, text);
        !self.glyphs_near(bx).any(|g| overlaps(bx, *g))
    }

    fn is_repeat(&self, node: NodeId, x: f64, text: &str) -> bool {
        const REPEAT_GAP: f64 = 600.0;
        let lane = self.lanes.get(&node).copied().unwrap_or(0);
        self.last_label
            .get(&(lane, text.to_string()))
            .is_some_and(|&last| x - last < REPEAT_GAP)
    }

    fn take_label(&mut self, node: NodeId, above: bool, x: f64, text: &str) {
        let lane = self.lanes.get(&node).copied().unwrap_or(0);
        let ends = if above {
            &mut self.label_end_above
        } else {
            &mut self.label_end_below
        };
        ends[lane] = x + text.chars().count() as f64 * 6.2;
        self.last_label.insert((lane, text.to_string()), x);
    }

    /// The glyphs whose boxes may reach into the horizontal span of `bx`.
    fn glyphs_near(&self, bx: [f64; 4]) -> impl Iterator<Item = &[f64; 4]> {
        // Glyphs are at most GLYPH_HALF wide either side of their event, in time order.
        let first = self
            .glyphs
            .partition_point(|g| g[0] < bx[0] - 2.0 * GLYPH_HALF);
        self.glyphs[first..]
            .iter()
            .take_while(move |g| g[0] < bx[2])
    }

    /// The boxes of the glyphs `events` draws in the window, as it draws them.
    fn collect_glyphs(&mut self) {
        let mut glyphs = Vec::new();
        for e in &self.trace.events[self.lo..self.hi] {
            let Some(node) = e.node else { continue };
            let (x, y) = (self.x(e.time_ns), self.y(node));
            let b = match &e.kind {
                EventKind::Crash => [x - 8.75, y - 8.75, x + 8.75, y + 8.75],
                EventKind::Recover => [x - 7.5, y + 2.5, x + 7.5, y + 16.5],
                EventKind::Output(v) if leader_of(v).is_some() => {
                    [x - 6.5, y - 6.5, x + 6.5, y + 6.5]
                }
                EventKind::Adjust { .. } => [x - 6.9, y - 6.9, x + 6.9, y + 6.9],
                _ => continue,
            };
            glyphs.push(b);
        }
        self.glyphs = glyphs;
    }

    fn y(&self, node: NodeId) -> f64 {
        TOP + self.lanes.get(&node).copied().unwrap_or(0) as f64 * LANE
    }

    fn bottom(&self) -> f64 {
        TOP + (self.trace.header.ids.len().saturating_sub(1)) as f64 * LANE
    }

    fn width(&self) -> f64 {
        LEFT + self.plot_width + RIGHT
    }

    fn color(&self, kind: &str) -> &'static str {
        PALETTE[self.kind_index.get(kind).copied().unwrap_or(0) % PALETTE.len()]
    }

    fn in_window(&self, t: u64) -> bool {
        t >= self.t0 && t <= self.t1
    }

    fn draw(mut self) -> String {
        let mut body = self.body();
        let legend = self.legend();
        let height = legend.1 + 16.0;
        let width = self.width();
        let mut svg = String::with_capacity(4096);
        let _ = write!(
            svg,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" \
             viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
        );
        svg.push_str(&self.defs());
        let _ = writeln!(
            svg,
            "<rect class=\"background\" x=\"0\" y=\"0\" width=\"{width:.0}\" height=\"{height:.0}\" fill=\"white\"/>"
        );
        // The body is by far the largest part: put the head in front of it in place.
        body.reserve(svg.len() + legend.0.len() + 8);
        body.insert_str(0, &svg);
        body.push_str(&legend.0);
        body.push_str("</svg>\n");
        body
    }

    fn defs(&self) -> String {
        let mut d = String::from("<defs>\n");
        for (i, _) in self.kinds.iter().enumerate() {
            let _ = writeln!(
                d,
                "<marker id=\"arrow{i}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"{}\"/></marker>",
                PALETTE[i % PALETTE.len()]
            );
        }
        d.push_str("<style>");
        d.push_str(STYLE);
        d.push_str("</style>\n");
        d.push_str("</defs>\n");
        d
    }

    fn body(&mut self) -> String {
        let mut b = String::with_capacity(16384 + (self.hi - self.lo) * 480);
        self.title(&mut b);
        self.axis(&mut b);
        self.down_stretches(&mut b);
        self.lifelines(&mut b);
        self.critical_sections(&mut b);
        self.events(&mut b);
        self.messages(&mut b);
        b
    }

    fn title(&self, b: &mut String) {
        let h = &self.trace.header;
        b.push_str(
            "<text class=\"title\" x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"bold\">",
        );
        push_escaped(
            b,
            &format!(
                "{} ({}) · seed {} · {} processes · {} to {}",
                h.algorithm,
                h.family,
                h.seed,
                h.ids.len(),
                if self.t0 == 0 {
                    "0".to_string()
                } else {
                    format_ns_short(self.t0)
                },
                format_ns_short(self.t1)
            ),
        );
        b.push_str("</text>\n");
    }

    fn axis(&self, b: &mut String) {
        // About one tick per 80 pixels inside the stretches drawn to scale, labelled in the unit
        // that keeps the labels short (a 200 µs step in ms: 3.2, 3.4, ...).
        let step = nice_step((80.0 / self.scale.px_per_ns).max(1.0) as u64, 1);
        let unit = unit_for(step.saturating_mul(10));
        let top = TOP - 20.0;
        let axis_y = self.bottom() + 28.0;
        b.push_str("<g class=\"time-axis\">\n");
        // Shortened quiet stretches: a light band and a break in the axis.
        for &(from, to) in &self.scale.breaks {
            let (xa, xb) = (self.x(from), self.x(to));
            let mid = (xa + xb) / 2.0;
            let _ = writeln!(
                b,
                "<g class=\"gap\"><title>no event from {} to {} ({}): drawn shortened</title>\
                 <rect x=\"{:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#f2f2f2\"/>\
                 <path d=\"M{:.1},{:.1} l6,-12 M{:.1},{:.1} l6,-12\" stroke=\"#444\" stroke-width=\"1.2\"/>\
                 <text class=\"mark\" x=\"{mid:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#666\">+{}</text></g>",
                format_ns(from),
                format_ns(to),
                format_ns(to - from),
                xa + 8.0,
                (xb - xa - 16.0).max(1.0),
                axis_y - top,
                mid - 7.0,
                axis_y + 6.0,
                mid + 1.0,
                axis_y + 6.0,
                axis_y + 31.0,
                format_ns_short(to - from)
            );
        }
        // The axis line, interrupted at each break.
        let mut segments: Vec<(f64, f64)> = Vec::new();
        for &(from, to) in &self.scale.runs {
            segments.push((self.x(from), self.x(to)));
        }
        for (i, &(xa, xb)) in segments.iter().enumerate() {
            let xa = if i > 0 { xa - 12.0 } else { xa };
            let xb = if i + 1 < segments.len() {
                xb + 12.0
            } else {
                xb
            };
            let _ = writeln!(
                b,
                "<line class=\"axis\" x1=\"{xa:.1}\" y1=\"{axis_y:.1}\" x2=\"{xb:.1}\" y2=\"{axis_y:.1}\"/>"
            );
        }
        let mut last_x = f64::NEG_INFINITY;
        for &(from, to) in &self.scale.runs {
            let mut ticks: Vec<u64> = Vec::new();
            let mut t = from.div_ceil(step).saturating_mul(step);
            while t <= to {
                ticks.push(t);
                match t.checked_add(step) {
                    Some(next) => t = next,
                    None => break,
                }
            }
            for t in ticks {
                let x = self.x(t);
                if x - last_x < 44.0 {
                    continue;
                }
                last_x = x;
                let _ = writeln!(
                    b,
                    "<line class=\"grid\" x1=\"{x:.1}\" y1=\"{top:.1}\" x2=\"{x:.1}\" y2=\"{axis_y:.1}\"/>\
                     <line class=\"axis\" x1=\"{x:.1}\" y1=\"{axis_y:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>\
                     <text class=\"tick\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                    axis_y + 5.0,
                    axis_y + 18.0,
                    in_unit(t, unit)
                );
            }
        }
        let _ = writeln!(
            b,
            "<text class=\"axis-title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">time ({})</text>",
            LEFT + self.plot_width / 2.0,
            axis_y + 46.0,
            unit.symbol
        );
        b.push_str("</g>\n");
    }

    fn lifelines(&mut self, b: &mut String) {
        let (x0, x1) = (self.x(self.t0), self.x(self.t1));
        for &id in &self.trace.header.ids {
            let y = self.y(id);
            let _ = writeln!(
                b,
                "<g class=\"process\" data-node=\"{id}\"><line class=\"lifeline\" x1=\"{x0:.1}\" y1=\"{y:.1}\" x2=\"{x1:.1}\" y2=\"{y:.1}\"/>\
                 <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">P{id}</text></g>",
                LEFT - 14.0,
                y + 5.0
            );
        }
    }

    /// Stretches between a crash and the recovery (or the end), as a band under the line.
    fn down_stretches(&mut self, b: &mut String) {
        let mut down_since: HashMap<NodeId, u64> = HashMap::new();
        let mut stretches = Vec::new();
        for e in &self.trace.events {
            match (&e.kind, e.node) {
                (EventKind::Crash, Some(n)) => {
                    down_since.entry(n).or_insert(e.time_ns);
                }
                (EventKind::Recover, Some(n)) => {
                    if let Some(s) = down_since.remove(&n) {
                        stretches.push((n, s, e.time_ns));
                    }
                }
                _ => {}
            }
        }
        let end = self.trace.end_time_ns().max(self.t1);
        stretches.extend(down_since.into_iter().map(|(n, s)| (n, s, end)));
        stretches.sort_unstable();
        for (n, s, e) in stretches {
            if e < self.t0 || s > self.t1 {
                continue;
            }
            let y = self.y(n);
            let _ = writeln!(
                b,
                "<line class=\"down\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"><title>P{n} down from {} to {}</title></line>",
                self.x(s.max(self.t0)),
                self.x(e.min(self.t1)),
                format_ns(s),
                format_ns(e)
            );
        }
    }

    fn critical_sections(&mut self, b: &mut String) {
        for cs in self.trace.critical_sections() {
            let end = cs.end_ns.unwrap_or(self.t1.max(cs.start_ns));
            if end < self.t0 || cs.start_ns > self.t1 {
                continue;
            }
            self.used.cs = true;
            let x0 = self.x(cs.start_ns.max(self.t0));
            let x1 = self.x(end.min(self.t1));
            let y = self.y(cs.node);
            let class = match (cs.end_ns, cs.ended_by_crash) {
                (None, _) => "cs open",
                (_, true) => "cs crashed",
                _ => "cs",
            };
            let how = match (cs.end_ns, cs.ended_by_crash) {
                (None, _) => "still inside when the trace ends".to_string(),
                (Some(t), true) => format!("until its crash at {}", format_ns(t)),
                (Some(t), false) => {
                    format!(
                        "until {} ({} inside)",
                        format_ns(t),
                        format_ns(t - cs.start_ns)
                    )
                }
            };
            let _ = writeln!(
                b,
                "<rect class=\"{class}\" x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"10\" rx=\"2\"><title>P{} in the critical section from {} {how}</title></rect>",
                y - 5.0,
                (x1 - x0).max(2.0),
                cs.node,
                format_ns(cs.start_ns)
            );
        }
    }

    /// Clips the segment from `(ts, ya)` to `(tr, yb)` to the window, in pixels.
    fn segment(&self, ts: u64, ya: f64, tr: u64, yb: f64) -> (f64, f64, f64, f64) {
        let (a, c) = (ts as f64, tr as f64);
        let at = |t: f64| {
            if c > a {
                ya + (yb - ya) * (t - a) / (c - a)
            } else {
                yb
            }
        };
        let s = ts.max(self.t0);
        let r = tr.min(self.t1);
        (self.x(s), at(s as f64), self.x(r), at(r as f64))
    }

    fn messages(&mut self, b: &mut String) {
        let trace = self.trace;
        let mut sends: HashMap<u64, usize> = HashMap::new();
        let mut resolved: HashMap<u64, bool> = HashMap::new();
        for (i, e) in trace.events.iter().enumerate() {
            match &e.kind {
                EventKind::Send { msg_id, .. } => {
                    sends.insert(*msg_id, i);
                }
                EventKind::Deliver { msg_id, .. } | EventKind::Drop { msg_id, .. } => {
                    resolved.insert(*msg_id, true);
                }
                _ => {}
            }
        }
        for e in &trace.events[self.lo..] {
            let (from, msg_id, kind) = match &e.kind {
                EventKind::Deliver {
                    from, msg_id, kind, ..
                }
                | EventKind::Drop {
                    from, msg_id, kind, ..
                } => (*from, *msg_id, kind.as_str()),
                _ => continue,
            };
            let send = sends.get(&msg_id).map(|&i| &trace.events[i]);
            let sent_at = send.map_or(e.time_ns, |s| s.time_ns);
            if sent_at > self.t1 {
                continue; // sent after the window
            }
            let Some(to) = e.node else { continue };
            self.used.kinds[self.kind_index[kind]] = true;
            match &e.kind {
                EventKind::Deliver { duplicate, msg, .. } => {
                    self.arrow(b, e, send, from, to, kind, msg, *duplicate)
                }
                EventKind::Drop { reason, .. } => self.dropped(b, e, send, from, to, kind, reason),
                _ => {}
            }
        }
        for e in &trace.events[self.lo..self.hi] {
            if let EventKind::Send {
                to,
                msg_id,
                kind,
                msg,
            } = &e.kind
            {
                if resolved.contains_key(msg_id) {
                    continue;
                }
                let Some(from) = e.node else { continue };
                self.used.inflight = true;
                self.used.kinds[self.kind_index[kind.as_str()]] = true;
                let (x, y) = (self.x(e.time_ns), self.y(from));
                let yt = self.y(*to);
                let dy = if yt > y {
                    18.0
                } else if yt < y {
                    -18.0
                } else {
                    0.0
                };
                let _ = write!(
                    b,
                    "<line class=\"inflight\" data-kind=\"{k}\" x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{}\"><title>",
                    x + 24.0,
                    y + dy,
                    self.color(kind),
                    k = escape(kind)
                );
                push_escaped(
                    b,
                    &format!(
                        "{kind} #{msg_id} P{from} → P{to}, sent at {}, still in flight when the trace ends · {}",
                        format_ns(e.time_ns),
                        short_json(msg)
                    ),
                );
                b.push_str("</title></line>\n");
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn arrow(
        &mut self,
        b: &mut String,
        deliver: &Event,
        send: Option<&Event>,
        from: NodeId,
        to: NodeId,
        kind: &str,
        msg: &Value,
        duplicate: bool,
    ) {
        let color = self.color(kind);
        let marker = self.kind_index[kind];
        let class = if duplicate {
            self.used.duplicate = true;
            "msg duplicate"
        } else {
            "msg"
        };
        let (ya, yb) = (self.y(from), self.y(to));
        let mut title = format!("{kind} #{} P{from} → P{to}", msg_id_of(deliver));
        if duplicate {
            title.push_str(" (duplicate copy)");
        }
        match send {
            Some(s) => title.push_str(&format!(
                " · sent at {} ({}) · delivered at {} ({}) · {}",
                format_ns(s.time_ns),
                lamport(s),
                format_ns(deliver.time_ns),
                lamport(deliver),
                short_json(msg)
            )),
            None => title.push_str(&format!(
                " · send not in the trace · delivered at {} ({}) · {}",
                format_ns(deliver.time_ns),
                lamport(deliver),
                short_json(msg)
            )),
        }
        let k = escape(kind);
        if from == to {
            // A message to oneself: a loop above the line.
            let xs = self.x(send.map_or(deliver.time_ns, |s| s.time_ns).max(self.t0));
            let xr = self.x(deliver.time_ns.min(self.t1));
            let _ = write!(
                b,
                "<path class=\"{class}\" data-kind=\"{k}\" d=\"M{xs:.1},{ya:.1} C{xs:.1},{:.1} {xr:.1},{:.1} {xr:.1},{yb:.1}\" stroke=\"{color}\" marker-end=\"url(#arrow{marker})\"><title>",
                ya - 28.0,
                yb - 28.0
            );
        } else {
            let (x1, y1, x2, y2) = match send {
                Some(s) => self.segment(s.time_ns, ya, deliver.time_ns, yb),
                None => {
                    let xr = self.x(deliver.time_ns);
                    (xr - 16.0, ya, xr, yb)
                }
            };
            let _ = write!(
                b,
                "<line class=\"{class}\" data-kind=\"{k}\" x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{color}\" marker-end=\"url(#arrow{marker})\"><title>"
            );
        }
        push_escaped(b, &title);
        b.push_str("</title>");
        b.push_str(if from == to { "</path>\n" } else { "</line>\n" });
    }

    #[allow(clippy::too_many_arguments)]
    fn dropped(
        &mut self,
        b: &mut String,
        drop: &Event,
        send: Option<&Event>,
        from: NodeId,
        to: NodeId,
        kind: &str,
        reason: &str,
    ) {
        self.used.drop = true;
        let color = self.color(kind);
        let (ya, yb) = (self.y(from), self.y(to));
        let mut title = format!(
            "{kind} #{} P{from} → P{to} dropped ({reason})",
            msg_id_of(drop)
        );
        if let Some(s) = send {
            title.push_str(&format!(
                " · sent at {} ({})",
                format_ns(s.time_ns),
                lamport(s)
            ));
        }
        title.push_str(&format!(" · lost at {}", format_ns(drop.time_ns)));
        let _ = write!(
            b,
            "<g class=\"drop\" data-kind=\"{}\"><title>",
            escape(kind)
        );
        push_escaped(b, &title);
        b.push_str("</title>");
        let (x1, y1, x2, y2) = match send {
            Some(s) => self.segment(s.time_ns, ya, drop.time_ns, yb),
            None => {
                let xr = self.x(drop.time_ns);
                (xr - 16.0, ya, xr, yb)
            }
        };
        let _ = write!(
            b,
            "<line x1=\"{x1:.1}\" y1=\"{y1:.1}\" x2=\"{x2:.1}\" y2=\"{y2:.1}\" stroke=\"{color}\"/>"
        );
        if self.in_window(drop.time_ns) {
            let r = 5.0;
            let _ = write!(
                b,
                "<path class=\"cross\" d=\"M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}\"/>",
                x2 - r,
                y2 - r,
                x2 + r,
                y2 + r,
                x2 - r,
                y2 + r,
                x2 + r,
                y2 - r
            );
        }
        b.push_str("</g>\n");
    }

    fn events(&mut self, b: &mut String) {
        self.collect_glyphs();
        let trace = self.trace;
        let (mut scratch, mut title) = (String::new(), String::new());
        for (i, e) in trace.events[self.lo..self.hi].iter().enumerate() {
            let x = self.x(e.time_ns);
            if let EventKind::Violation { property, detail } = &e.kind {
                self.violation_mark(b, self.lo + i, e, x, property, detail);
                continue;
            }
            let Some(node) = e.node else {
                self.global_mark(b, e, x);
                continue;
            };
            let y = self.y(node);
            scratch.clear();
            describe_into(&mut scratch, e, true);
            title.clear();
            push_escaped(&mut title, &scratch);
            let name = e.kind.name();
            let cls = escape(name);
            match &e.kind {
                EventKind::Crash => {
                    self.used.crash = true;
                    let r = 7.0;
                    let _ = writeln!(
                        b,
                        "<g class=\"crash\"><title>{title}</title><path d=\"M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}\" stroke=\"#d62728\" stroke-width=\"3.5\"/></g>",
                        x - r, y - r, x + r, y + r, x - r, y + r, x + r, y - r
                    );
                }
                EventKind::Recover => {
                    self.used.recover = true;
                    // Below the line, pointing up at it, so a mark on the line stays visible.
                    let _ = writeln!(
                        b,
                        "<path class=\"recover\" d=\"M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} z\" fill=\"#2ca02c\" stroke=\"#1b5e20\"><title>{title}</title></path>",
                        x, y + 3.0, x - 7.0, y + 16.0, x + 7.0, y + 16.0
                    );
                }
                EventKind::Output(v) if leader_of(v).is_some() => {
                    self.used.leader = true;
                    let leader = leader_of(v).unwrap_or_default();
                    let _ = write!(
                        b,
                        "<g class=\"leader\"><title>{title}</title><path d=\"M{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} z\" fill=\"#f2c500\" stroke=\"#8a6d00\"/>",
                        x, y - 6.0, x + 6.0, y, x, y + 6.0, x - 6.0, y
                    );
                    let label = format!("leader {leader}");
                    // Above the line, unless the arrows leaving or reaching this process just
                    // after it go up through that place (a new coordinator telling everyone).
                    // If a glyph is in the way there (the triangle of a recovery just before,
                    // a crash just after), moved right past it, or else on the other side.
                    let above = !self.arrows_go_up(self.lo + i, node, x + 6.0 + 6.2 * 9.0);
                    if let Some((above, lx)) = self.label_place(node, above, true, x + 6.0, &label)
                    {
                        let _ = write!(
                            b,
                            "<text class=\"mark\" x=\"{lx:.1}\" y=\"{:.1}\" fill=\"#6b5400\">{label}</text>",
                            if above { y - 9.0 } else { y + 18.0 }
                        );
                    }
                    b.push_str("</g>\n");
                }
                EventKind::Adjust { delta_ns } => {
                    self.used.adjust = true;
                    let sign = if *delta_ns < 0 { "−" } else { "+" };
                    let _ = write!(
                        b,
                        "<g class=\"adjust\"><title>{title}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"9\" height=\"9\" transform=\"rotate(45 {x:.1} {y:.1})\" fill=\"#17becf\" stroke=\"#0b5f67\"/>",
                        x - 4.5,
                        y - 4.5
                    );
                    let label = format!("{sign}{}", format_ns_short(delta_ns.unsigned_abs()));
                    if self.label_room(node, false, x + 6.0, &label) {
                        let _ = write!(
                            b,
                            "<text class=\"mark\" x=\"{:.1}\" y=\"{:.1}\" fill=\"#0b5f67\">{label}</text>",
                            x + 6.0,
                            y + 18.0
                        );
                    }
                    b.push_str("</g>\n");
                }
                EventKind::Output(v) => {
                    self.used.output = true;
                    let variant = variant_name(v).unwrap_or("output");
                    let cs_mark = matches!(variant, "Enter" | "Exit");
                    let _ = write!(
                        b,
                        "<circle class=\"ev ev-output\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"#6a3d9a\"><title>{title}</title></circle>"
                    );
                    // Above the line, moved right past a glyph drawn at the same place (the
                    // runtime's adjustment diamond under Berkeley's "Adjust").
                    let text = truncate(variant, 24);
                    let place = if cs_mark {
                        None
                    } else {
                        self.label_place(node, true, false, x + 4.0, &text)
                    };
                    if let Some((_, lx)) = place {
                        let mut label = String::new();
                        push_escaped(&mut label, &text);
                        let _ = write!(
                            b,
                            "<text class=\"output mark\" x=\"{lx:.1}\" y=\"{:.1}\" fill=\"#6a3d9a\">{label}</text>",
                            y - 9.0
                        );
                    }
                    b.push('\n');
                }
                EventKind::Input(_) => {
                    self.used.input = true;
                    let _ = writeln!(
                        b,
                        "<rect class=\"ev ev-input\" x=\"{:.1}\" y=\"{:.1}\" width=\"6\" height=\"6\" fill=\"#555\"><title>{title}</title></rect>",
                        x - 3.0,
                        y - 3.0
                    );
                }
                EventKind::Timer(_) => {
                    self.used.timer = true;
                    let _ = writeln!(
                        b,
                        "<circle class=\"ev ev-timer\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"white\" stroke=\"#333\" stroke-width=\"1.5\"><title>{title}</title></circle>"
                    );
                }
                EventKind::Send { .. } | EventKind::Deliver { .. } => {
                    self.used.dot = true;
                    let _ = writeln!(
                        b,
                        "<circle class=\"ev ev-{cls}\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.6\" fill=\"#222\"><title>{title}</title></circle>"
                    );
                }
                EventKind::Drop { .. } => {} // drawn with its message
                _ => {
                    let _ = writeln!(
                        b,
                        "<circle class=\"ev ev-{cls}\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2\" fill=\"#999\"><title>{title}</title></circle>"
                    );
                }
            }
        }
    }

    /// Whether more of the arrows at `node` between event `index` and the pixel `until` leave
    /// or arrive upwards (to or from a lane above) than downwards.
    fn arrows_go_up(&self, index: usize, node: NodeId, until: f64) -> bool {
        let lane = |n: NodeId| self.lanes.get(&n).copied().unwrap_or(0);
        let mine = lane(node);
        let (mut up, mut down) = (0, 0);
        // From the first event drawn at the same place (a coordinator may send before it
        // announces itself) to `until`.
        let here = self.x(self.trace.events[index].time_ns);
        let mut first = index;
        while first > self.lo && self.x(self.trace.events[first - 1].time_ns) >= here - 1.0 {
            first -= 1;
        }
        for e in &self.trace.events[first..self.hi] {
            if self.x(e.time_ns) > until {
                break;
            }
            let other = match (&e.kind, e.node) {
                (EventKind::Send { to, .. }, Some(n)) if n == node => *to,
                (EventKind::Deliver { from, .. }, Some(n)) if n == node => *from,
                _ => continue,
            };
            match lane(other).cmp(&mine) {
                std::cmp::Ordering::Less => up += 1,
                std::cmp::Ordering::Greater => down += 1,
                std::cmp::Ordering::Equal => {}
            }
        }
        up > down
    }

    /// A violation: a red band across the processes it concerns, labelled with the property
    /// in words and the detail (the whole detail in the tooltip).
    fn violation_mark(
        &mut self,
        b: &mut String,
        index: usize,
        e: &Event,
        x: f64,
        property: &str,
        detail: &str,
    ) {
        self.used.violation = true;
        let nodes = self.trace.violation_nodes(index);
        let ys: Vec<f64> = nodes.iter().map(|&n| self.y(n)).collect();
        let top = ys.iter().copied().fold(f64::INFINITY, f64::min) - 16.0;
        let bottom = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max) + 16.0;
        let words = property_in_words(property);
        let list = nodes
            .iter()
            .map(|n| format!("P{n}"))
            .collect::<Vec<_>>()
            .join(", ");
        let label = format!("{words}: {}", truncate(detail, 90));
        // Right of the band, or left of it when the label would run off the drawing.
        let (anchor, label_x) = if x + 10.0 + label.chars().count() as f64 * 7.0 > self.width() {
            ("end", x - 10.0)
        } else {
            ("start", x + 10.0)
        };
        let _ = write!(
            b,
            "<g class=\"violation\" data-property=\"{}\"><title>VIOLATION at {} (seq {}): {}: {} ({})</title>\
             <rect x=\"{:.1}\" y=\"{top:.1}\" width=\"14\" height=\"{:.1}\" fill=\"#d62728\" fill-opacity=\"0.28\" stroke=\"#d62728\" stroke-width=\"1.5\"/>\
             <text class=\"violation-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\" fill=\"#b0191e\" font-weight=\"bold\" paint-order=\"stroke\" stroke=\"white\" stroke-width=\"3\">",
            escape(property),
            format_ns(e.time_ns),
            e.seq,
            escape(words),
            escape(detail),
            list,
            x - 7.0,
            bottom - top,
            label_x,
            top - 4.0
        );
        push_escaped(b, &label);
        b.push_str("</text></g>\n");
    }

    fn global_mark(&mut self, b: &mut String, e: &Event, x: f64) {
        self.used.partition = true;
        let class = match e.kind {
            EventKind::Heal => "heal",
            EventKind::Partition { .. } => "partition",
            _ => "global",
        };
        let color = if class == "heal" {
            "#2ca02c"
        } else {
            "#d62728"
        };
        let label = match &e.kind {
            EventKind::Partition { groups } => format!("partition {}", groups_text(groups)),
            other => other.name().to_string(),
        };
        let _ = write!(
            b,
            "<g class=\"{class}\"><title>{} at {} (seq {})</title>\
             <line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"{color}\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>",
            escape(&label),
            format_ns(e.time_ns),
            e.seq,
            TOP - 26.0,
            self.bottom() + 12.0,
        );
        // One row of these labels above the processes: one that would run into the last is left
        // out (a heal soon after its partition), and the line and its tooltip stay.
        if x + 3.0 >= self.top_label_end + 4.0 {
            self.top_label_end = x + 3.0 + label.chars().count() as f64 * 6.2;
            let _ = write!(
                b,
                "<text class=\"mark\" x=\"{:.1}\" y=\"{:.1}\" fill=\"{color}\">",
                x + 3.0,
                TOP - 28.0
            );
            push_escaped(b, &label);
            b.push_str("</text>");
        }
        b.push_str("</g>\n");
    }

    /// The legend and the y of its last row.
    fn legend(&self) -> (String, f64) {
        let mut items: Vec<(String, String)> = Vec::new();
        for (i, kind) in self.kinds.iter().enumerate() {
            if !self.used.kinds[i] {
                continue;
            }
            let c = PALETTE[i % PALETTE.len()];
            items.push((
                format!("<line x1=\"0\" y1=\"0\" x2=\"26\" y2=\"0\" stroke=\"{c}\" stroke-width=\"1.5\" marker-end=\"url(#arrow{i})\"/>"),
                kind.to_string(),
            ));
        }
        let u = &self.used;
        let fixed: [(bool, &str, &str); 15] = [
            (u.dot, "<circle cx=\"13\" cy=\"0\" r=\"2.6\" fill=\"#222\"/>", "send / delivery"),
            (u.input, "<rect x=\"10\" y=\"-3\" width=\"6\" height=\"6\" fill=\"#555\"/>", "input (e.g. Request)"),
            (u.output, "<circle cx=\"13\" cy=\"0\" r=\"3\" fill=\"#6a3d9a\"/>", "output"),
            (u.timer, "<circle cx=\"13\" cy=\"0\" r=\"4\" fill=\"white\" stroke=\"#333\" stroke-width=\"1.5\"/>", "timer expired"),
            (u.violation, "<rect x=\"6\" y=\"-8\" width=\"14\" height=\"16\" fill=\"#d62728\" fill-opacity=\"0.28\" stroke=\"#d62728\" stroke-width=\"1.5\"/>", "violation (property broken)"),
            (u.duplicate, "<line x1=\"0\" y1=\"0\" x2=\"26\" y2=\"0\" stroke=\"#555\" stroke-width=\"1.5\" stroke-dasharray=\"7 4\"/>", "duplicate copy"),
            (u.drop, "<line x1=\"0\" y1=\"0\" x2=\"22\" y2=\"0\" stroke=\"#555\" stroke-dasharray=\"2 3\"/><path d=\"M17,-5 L27,5 M17,5 L27,-5\" stroke=\"#d62728\" stroke-width=\"2.5\"/>", "dropped"),
            (u.inflight, "<line x1=\"0\" y1=\"0\" x2=\"26\" y2=\"0\" stroke=\"#555\" stroke-dasharray=\"1 3\"/>", "in flight at the end"),
            (u.cs, "<rect x=\"0\" y=\"-5\" width=\"26\" height=\"10\" rx=\"2\" fill=\"#222\" fill-opacity=\"0.55\"/>", "critical section"),
            (u.crash, "<path d=\"M7,-6 L19,6 M7,6 L19,-6\" stroke=\"#d62728\" stroke-width=\"3.5\"/>", "crash"),
            (u.crash, "<line x1=\"0\" y1=\"0\" x2=\"26\" y2=\"0\" stroke=\"#f6c4c4\" stroke-width=\"9\"/><line x1=\"0\" y1=\"0\" x2=\"26\" y2=\"0\" stroke=\"#444\" stroke-width=\"1.2\"/>", "process down"),
            (u.recover, "<path d=\"M13,-6 L6,7 L20,7 z\" fill=\"#2ca02c\" stroke=\"#1b5e20\"/>", "recovery"),
            (u.leader, "<path d=\"M13,-7 L20,0 L13,7 L6,0 z\" fill=\"#f2c500\" stroke=\"#8a6d00\"/>", "leader announced"),
            (u.adjust, "<rect x=\"9\" y=\"-4.5\" width=\"9\" height=\"9\" transform=\"rotate(45 13 0)\" fill=\"#17becf\" stroke=\"#0b5f67\"/>", "clock adjusted"),
            (u.partition, "<line x1=\"13\" y1=\"-8\" x2=\"13\" y2=\"8\" stroke=\"#d62728\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/>", "partition / heal"),
        ];
        for (on, symbol, label) in fixed {
            if on {
                items.push((symbol.to_string(), label.to_string()));
            }
        }
        let top = self.bottom() + 100.0;
        let mut s = String::from("<g class=\"legend\">\n");
        let (mut x, mut y) = (LEFT, top);
        let right = self.width() - RIGHT;
        for (symbol, label) in items {
            let w = 40.0 + label.chars().count() as f64 * 7.2 + 18.0;
            if x + w > right && x > LEFT {
                x = LEFT;
                y += 22.0;
            }
            let _ = writeln!(
                s,
                "<g transform=\"translate({x:.1},{y:.1})\">{symbol}<text x=\"34\" y=\"4\">{}</text></g>",
                escape(&label)
            );
            x += w;
        }
        s.push_str("</g>\n");
        (s, y)
    }
}

/// Whether boxes `[left, top, right, bottom]` share more than an edge.
fn overlaps(a: [f64; 4], b: [f64; 4]) -> bool {
    a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
}

/// A monitor's property name as a phrase for the picture.
fn property_in_words(property: &str) -> &str {
    match property {
        "mutual-exclusion" => "mutual exclusion broken",
        "deadlock" => "deadlock",
        "starvation" => "starvation",
        "contract" => "contract broken",
        "agreement" => "leaders disagree",
        "causal-order" => "causal order broken",
        "fifo-order" => "FIFO order broken",
        "total-order" => "total order broken",
        "snapshot-total" => "snapshot total wrong",
        "snapshot-consistency" => "snapshot inconsistent",
        other => other,
    }
}

fn msg_id_of(e: &Event) -> u64 {
    match e.kind {
        EventKind::Send { msg_id, .. }
        | EventKind::Deliver { msg_id, .. }
        | EventKind::Drop { msg_id, .. } => msg_id,
        _ => 0,
    }
}

/// "Lamport 3" (a message's tooltip; the vector timestamps are on the events at its ends).
fn lamport(e: &Event) -> String {
    e.lamport
        .map_or("no timestamps".to_string(), |l| format!("Lamport {l}"))
}

fn push_stamps(s: &mut String, e: &Event) {
    let start = s.len();
    if let Some(l) = e.lamport {
        let _ = write!(s, "Lamport {l}");
    }
    if let Some(v) = &e.vector {
        if s.len() > start {
            s.push_str(", ");
        }
        s.push_str("vector [");
        for (i, c) in v.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{c}");
        }
        s.push(']');
    }
    if s.len() == start {
        s.push_str("no timestamps");
    }
}

/// Appends the tooltip of an event to `s`: what, where, when, and its timestamps (the Lamport
/// timestamp only, unless `vector`).
pub(crate) fn describe_into(s: &mut String, e: &Event, vector: bool) {
    if let Some(n) = e.node {
        let _ = write!(s, "P{n} ");
    }
    match &e.kind {
        EventKind::Send {
            to,
            msg_id,
            kind,
            msg,
            ..
        } => {
            let _ = write!(s, "send {kind} #{msg_id} → P{to}: ");
            push_short_json(s, msg);
        }
        EventKind::Deliver {
            from,
            msg_id,
            kind,
            msg,
            duplicate,
        } => {
            let dup = if *duplicate { " (duplicate)" } else { "" };
            let _ = write!(s, "deliver {kind} #{msg_id} from P{from}{dup}: ");
            push_short_json(s, msg);
        }
        EventKind::Drop {
            from,
            msg_id,
            kind,
            reason,
        } => {
            let _ = write!(s, "drop {kind} #{msg_id} from P{from} ({reason})");
        }
        EventKind::Input(v) => {
            s.push_str("input ");
            push_short_json(s, v);
        }
        EventKind::Output(v) => {
            s.push_str("output ");
            push_short_json(s, v);
        }
        EventKind::Timer(v) => {
            s.push_str("timer ");
            push_short_json(s, v);
        }
        EventKind::Partition { groups } => {
            let _ = write!(s, "partition {}", groups_text(groups));
        }
        EventKind::Adjust { delta_ns } => {
            let sign = if *delta_ns < 0 { "-" } else { "+" };
            let _ = write!(
                s,
                "clock adjusted by {sign}{}",
                format_ns(delta_ns.unsigned_abs())
            );
        }
        other => s.push_str(other.name()),
    }
    let _ = write!(s, " · at {} · seq {} · ", format_ns(e.time_ns), e.seq);
    if vector {
        push_stamps(s, e);
    } else if let Some(l) = e.lamport {
        let _ = write!(s, "Lamport {l}");
    } else {
        s.push_str("no timestamps");
    }
}

fn groups_text(groups: &[Vec<NodeId>]) -> String {
    groups
        .iter()
        .map(|g| {
            let ids: Vec<String> = g.iter().map(|i| i.to_string()).collect();
            format!("{{{}}}", ids.join(","))
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn short_json(v: &Value) -> String {
    let mut s = String::new();
    push_short_json(&mut s, v);
    s
}

/// Appends compact JSON, cut after 160 characters.
fn push_short_json(s: &mut String, v: &Value) {
    const MAX: usize = 160;
    let start = s.len();
    let _ = write!(s, "{v}");
    if s.len() - start > MAX {
        if let Some((cut, _)) = s[start..].char_indices().nth(MAX) {
            s.truncate(start + cut);
            s.push('…');
        }
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            escape(r#"<a href="x">&'"#),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(escape("a\u{1}b\tc"), "a\u{FFFD}b\tc");
        assert_eq!(escape("P1 → P2 µs"), "P1 → P2 µs");
        assert_eq!(escape("a\u{FFFE}b\u{FFFF}c"), "a\u{FFFD}b\u{FFFD}c");
        assert_eq!(
            escape("\u{FFFD}\u{F000}\u{FFEE}"),
            "\u{FFFD}\u{F000}\u{FFEE}"
        );
    }

    #[test]
    fn truncates_long_text() {
        assert_eq!(truncate("abcdef", 3), "abc…");
        assert_eq!(truncate("abc", 3), "abc");
    }

    #[test]
    fn windows_that_run_backwards_are_refused() {
        let t = Trace::parse(
            r#"{"event":"header","version":1,"algorithm":"a","family":"f","ids":[0],"seed":1}"#,
            "t",
        )
        .unwrap();
        let e = render(
            &t,
            &SvgOptions {
                from_ns: Some(5_000_000),
                to_ns: Some(1_000_000),
            },
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the time window is empty: --from 5 ms is after --to 1 ms"
        );
    }
}
