//! Line charts as SVG, with plotters' SVG backend (text is left to the viewer's fonts, so nothing
//! here needs system fonts or a bitmap renderer).
//!
//! ```
//! use distsync_viz::plot::{line_chart, Series};
//! let svg = line_chart(
//!     &[
//!         Series::measured("ricart-agrawala", vec![(2.0, 2.0), (4.0, 6.0), (8.0, 14.0)]),
//!         Series::theory("2(N-1)", (2..=8).map(|n| (n as f64, 2.0 * (n as f64 - 1.0))).collect()),
//!     ],
//!     "nodes",
//!     "messages per entry",
//! )
//! .unwrap();
//! assert!(svg.contains("ricart-agrawala") && svg.contains("2(N-1)"));
//! ```

use crate::RenderError;
use plotters::prelude::*;

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesStyle {
    /// Measured points: a solid line with a marker at each point.
    Measured,
    /// A theory curve: a dashed line without markers.
    Theory,
}

/// One named line of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The name shown in the legend.
    pub name: String,
    /// The points, drawn in the order given.
    pub points: Vec<(f64, f64)>,
    /// Measured or theory.
    pub style: SeriesStyle,
    /// Series of one group share a colour and one legend entry (an algorithm's measured and
    /// theory lines); `None`: the series is its own group.
    pub group: Option<String>,
}

impl Series {
    /// A series of measured points.
    pub fn measured(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style: SeriesStyle::Measured,
            group: None,
        }
    }

    /// A theory curve.
    pub fn theory(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style: SeriesStyle::Theory,
            group: None,
        }
    }

    /// The series in `group`: drawn in the group's colour, under the group's legend entry.
    pub fn in_group(mut self, group: impl Into<String>) -> Series {
        self.group = Some(group.into());
        self
    }

    fn group_name(&self) -> &str {
        self.group.as_deref().unwrap_or(&self.name)
    }
}

/// One chart of a figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    /// Drawn above the chart ("light load"); may be empty.
    pub caption: String,
    /// Its lines.
    pub series: Vec<Series>,
}

/// A figure: a title, one or more charts side by side with shared axes labels, and one legend
/// to their right (outside every plot area), sized to fit its longest entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The title, at the top.
    pub title: String,
    /// The x axis.
    pub x_label: String,
    /// The y axis.
    pub y_label: String,
    /// Ticks at whole numbers only (a number of nodes has no 3.5).
    pub integer_x: bool,
    /// The charts, left to right.
    pub panels: Vec<Panel>,
}

const COLORS: [RGBColor; 12] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x39, 0x3b, 0x79),
    RGBColor(0xad, 0x49, 0x4a),
];

/// One chart's plot size in pixels, legend and title excluded.
const PANEL: (u32, u32) = (560, 440);
/// Legend text size, and the width a character of it takes at most on average.
const LEGEND_FONT: u32 = 13;
const CHAR_WIDTH: f64 = 6.6;
const LEGEND_ROW: i32 = 19;

/// Draws `series` on one chart with the given axis labels and returns the SVG text.
///
/// Fails when there is no point at all or a coordinate is not finite (naming the series).
pub fn line_chart(series: &[Series], x_label: &str, y_label: &str) -> Result<String, RenderError> {
    figure(&Figure {
        title: String::new(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        integer_x: false,
        panels: vec![Panel {
            caption: String::new(),
            series: series.to_vec(),
        }],
    })
}

/// Draws a figure and returns the SVG text.
///
/// Fails when there is no point at all or a coordinate is not finite (naming the series).
///
/// ```
/// use distsync_viz::plot::{figure, Figure, Panel, Series};
/// let panel = Panel {
///     caption: "heavy load".into(),
///     series: vec![
///         Series::measured("measured", vec![(3.0, 4.0), (5.0, 8.0)]).in_group("ricart-agrawala"),
///         Series::theory("2(N-1)", vec![(3.0, 4.0), (5.0, 8.0)]).in_group("ricart-agrawala"),
///     ],
/// };
/// let svg = figure(&Figure {
///     title: "messages per entry".into(),
///     x_label: "N".into(),
///     y_label: "messages".into(),
///     integer_x: true,
///     panels: vec![panel],
/// })
/// .unwrap();
/// assert!(svg.contains("ricart-agrawala") && svg.contains("heavy load"));
/// ```
pub fn figure(fig: &Figure) -> Result<String, RenderError> {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for s in fig.panels.iter().flat_map(|p| &p.series) {
        for &(x, y) in &s.points {
            if !x.is_finite() || !y.is_finite() {
                return Err(RenderError::Plot(format!(
                    "series \"{}\" has a point that is not a finite number: ({x}, {y})",
                    s.name
                )));
            }
            xs.push(x);
            ys.push(y);
        }
    }
    if xs.is_empty() {
        return Err(RenderError::Plot("no points to draw".into()));
    }
    let (x0, x1) = padded(&xs, false);
    let (y0, y1) = padded(&ys, true);
    let ticks = if fig.integer_x {
        integer_ticks(&xs, x0, x1)
    } else {
        nice_ticks(x0, x1)
    };
    let legend = legend_entries(fig);
    let mut buf = String::new();
    draw(&mut buf, fig, &legend, (x0, x1), (y0, y1), ticks)
        .map_err(|e| RenderError::Plot(e.to_string()))?;
    Ok(buf)
}

/// A legend entry: a colour group and its text, or a line-style key.
struct LegendEntry {
    text: String,
    color: RGBColor,
    /// Which samples to draw: measured (solid with a dot), theory (dashed), or both.
    measured: bool,
    theory: bool,
}

/// One entry per group, in order of first appearance, in the group's colour, listing the names
/// of its series when they say more than the group name; then the key to the line styles used.
fn legend_entries(fig: &Figure) -> Vec<LegendEntry> {
    let mut entries: Vec<(String, Vec<String>, bool, bool)> = Vec::new();
    for s in fig.panels.iter().flat_map(|p| &p.series) {
        let group = s.group_name().to_string();
        let at = match entries.iter().position(|e| e.0 == group) {
            Some(i) => i,
            None => {
                entries.push((group.clone(), Vec::new(), false, false));
                entries.len() - 1
            }
        };
        let e = &mut entries[at];
        if s.name != group && !e.1.contains(&s.name) {
            e.1.push(s.name.clone());
        }
        match s.style {
            SeriesStyle::Measured => e.2 = true,
            SeriesStyle::Theory => e.3 = true,
        }
    }
    let styles = (entries.iter().any(|e| e.2), entries.iter().any(|e| e.3));
    let mut out: Vec<LegendEntry> = entries
        .into_iter()
        .enumerate()
        .map(|(i, (group, names, measured, theory))| LegendEntry {
            text: if names.is_empty() {
                group
            } else {
                format!("{group}: {}", names.join("; "))
            },
            color: COLORS[i % COLORS.len()],
            measured,
            theory,
        })
        .collect();
    if styles.0 && styles.1 {
        let grey = RGBColor(0x55, 0x55, 0x55);
        out.push(LegendEntry {
            text: "solid, dots: measured".into(),
            color: grey,
            measured: true,
            theory: false,
        });
        out.push(LegendEntry {
            text: "dashed: theory".into(),
            color: grey,
            measured: false,
            theory: true,
        });
    }
    out
}

fn group_color(fig: &Figure, group: &str) -> RGBColor {
    let mut seen: Vec<&str> = Vec::new();
    for s in fig.panels.iter().flat_map(|p| &p.series) {
        if !seen.contains(&s.group_name()) {
            seen.push(s.group_name());
        }
    }
    let i = seen.iter().position(|g| *g == group).unwrap_or(0);
    COLORS[i % COLORS.len()]
}

/// The whole numbers to mark: the data's own x values when they are few, else a round step.
fn integer_ticks(xs: &[f64], lo: f64, hi: f64) -> Vec<f64> {
    let mut distinct: Vec<f64> = xs.iter().map(|x| x.round()).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    if distinct.len() <= 12 {
        return distinct;
    }
    let step = nice_step((hi - lo) / 8.0).max(1.0).round();
    let first = (lo / step).ceil() * step;
    (0..)
        .map(|i| first + step * i as f64)
        .take_while(|v| *v <= hi)
        .collect()
}

/// About six round values (multiples of 1, 2 or 5 times a power of ten) in [lo, hi].
fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let step = nice_step((hi - lo) / 6.0);
    let first = (lo / step).ceil() * step;
    (0..)
        .map(|i| ((first + step * i as f64) * 1e9).round() / 1e9)
        .take_while(|v| *v <= hi + step * 1e-9)
        .collect()
}

fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let m = raw / power;
    let nice = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// The range of `values`, widened a little (and to include zero for y values that are all
/// positive, so charts do not exaggerate small differences).
fn padded(values: &[f64], from_zero: bool) -> (f64, f64) {
    let mut lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if from_zero && lo > 0.0 {
        lo = 0.0;
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        lo -= 1.0;
        hi += 1.0;
    }
    let pad = (hi - lo) * 0.05;
    (
        if from_zero && lo == 0.0 {
            0.0
        } else {
            lo - pad
        },
        hi + pad,
    )
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// A linear axis whose ticks are exactly the values given (whole numbers for N).
struct Ticked {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

impl plotters::coord::ranged1d::Ranged for Ticked {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let share = (value - self.range.start) / (self.range.end - self.range.start);
        limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

fn format_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn draw(
    buf: &mut String,
    fig: &Figure,
    legend: &[LegendEntry],
    x: (f64, f64),
    y: (f64, f64),
    ticks: Vec<f64>,
) -> DrawResult {
    let panels = fig.panels.len().max(1) as u32;
    let panel_width = if panels > 2 { PANEL.0 * 4 / 5 } else { PANEL.0 };
    let legend_width = legend
        .iter()
        .map(|e| (e.text.chars().count() as f64 * CHAR_WIDTH) as u32 + 52)
        .max()
        .unwrap_or(0)
        .max(120);
    let title_height = if fig.title.is_empty() { 10 } else { 44 };
    let legend_height = legend.len() as u32 * LEGEND_ROW as u32 + 40;
    // Wide enough for the title too (18px text: about 8.2px a character on average).
    let title_width = (fig.title.chars().count() as f64 * 8.2) as u32 + 40;
    let width = (panel_width * panels + legend_width + 20).max(title_width);
    let height = (PANEL.1 + title_height).max(legend_height + title_height);
    let root = SVGBackend::with_string(buf, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let body = if fig.title.is_empty() {
        root.margin(10, 0, 0, 0)
    } else {
        root.titled(&fig.title, ("sans-serif", 18))?
    };
    let (charts, legend_area) = body.split_horizontally(panel_width * panels);
    let areas = charts.split_evenly((1, panels as usize));
    for (panel, area) in fig.panels.iter().zip(areas) {
        let mut builder = ChartBuilder::on(&area);
        builder
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(64);
        if !panel.caption.is_empty() {
            builder.caption(&panel.caption, ("sans-serif", 15));
        }
        let mut chart = builder.build_cartesian_2d(
            Ticked {
                range: x.0..x.1,
                ticks: ticks.clone(),
            },
            y.0..y.1,
        )?;
        chart
            .configure_mesh()
            .x_desc(fig.x_label.as_str())
            .y_desc(fig.y_label.as_str())
            .x_label_formatter(&|v| format_tick(*v))
            .y_label_formatter(&|v| format_tick(*v))
            .light_line_style(TRANSPARENT)
            .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()?;
        // Theory curves first, so measured points are drawn over them.
        let mut ordered: Vec<&Series> = panel.series.iter().collect();
        ordered.sort_by_key(|s| s.style == SeriesStyle::Measured);
        for s in ordered {
            let color = group_color(fig, s.group_name());
            let line = color.stroke_width(2);
            match s.style {
                SeriesStyle::Measured => {
                    chart.draw_series(LineSeries::new(s.points.iter().copied(), line))?;
                    chart
                        .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
                }
                SeriesStyle::Theory => {
                    chart.draw_series(DashedLineSeries::new(
                        s.points.iter().copied(),
                        8,
                        5,
                        line,
                    ))?;
                }
            }
        }
    }
    // The legend, outside the plot areas.
    let left = 8;
    let mut top = 24;
    for e in legend {
        let line = e.color.stroke_width(2);
        if e.measured && e.theory {
            legend_area.draw(&PathElement::new(
                vec![(left, top - 3), (left + 16, top - 3)],
                line,
            ))?;
            legend_area.draw(&Circle::new((left + 8, top - 3), 3, e.color.filled()))?;
            legend_area.draw(&plotters::element::DashedPathElement::new(
                vec![(left, top + 4), (left + 16, top + 4)],
                4,
                3,
                line,
            ))?;
        } else if e.measured {
            legend_area.draw(&PathElement::new(vec![(left, top), (left + 16, top)], line))?;
            legend_area.draw(&Circle::new((left + 8, top), 3, e.color.filled()))?;
        } else {
            legend_area.draw(&plotters::element::DashedPathElement::new(
                vec![(left, top), (left + 16, top)],
                4,
                3,
                line,
            ))?;
        }
        legend_area.draw(&Text::new(
            e.text.clone(),
            (left + 24, top - 7),
            ("sans-serif", LEGEND_FONT).into_font(),
        ))?;
        top += LEGEND_ROW;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_empty_and_non_finite() {
        assert!(line_chart(&[], "x", "y").is_err());
        let e = line_chart(&[Series::measured("a", vec![(1.0, f64::NAN)])], "x", "y").unwrap_err();
        assert!(e.to_string().contains("series \"a\""), "{e}");
    }

    #[test]
    fn integer_axes_mark_whole_numbers_only() {
        assert_eq!(
            integer_ticks(&[3.0, 5.0, 8.0], 2.75, 8.25),
            vec![3.0, 5.0, 8.0]
        );
        let many: Vec<f64> = (2..=32).map(f64::from).collect();
        let t = integer_ticks(&many, 0.5, 33.5);
        assert!(t.iter().all(|v| v.fract() == 0.0) && t.len() >= 4, "{t:?}");
        assert_eq!(nice_ticks(0.0, 1.0), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
    }

    #[test]
    fn one_legend_entry_and_colour_per_group_and_the_style_key() {
        let fig = Figure {
            title: "t".into(),
            x_label: "N".into(),
            y_label: "m".into(),
            integer_x: true,
            panels: vec![Panel {
                caption: String::new(),
                series: vec![
                    Series::measured("measured", vec![(3.0, 1.0)]).in_group("a"),
                    Series::theory("2(N-1)", vec![(3.0, 1.0)]).in_group("a"),
                    Series::measured("measured", vec![(3.0, 2.0)]).in_group("b"),
                ],
            }],
        };
        let legend = legend_entries(&fig);
        let texts: Vec<&str> = legend.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "a: measured; 2(N-1)",
                "b: measured",
                "solid, dots: measured",
                "dashed: theory"
            ]
        );
        assert_eq!(group_color(&fig, "a"), COLORS[0]);
        assert_eq!(group_color(&fig, "b"), COLORS[1]);
    }

    #[test]
    fn single_point_still_has_a_range() {
        assert_eq!(padded(&[3.0], false), (1.9, 4.1));
        assert_eq!(padded(&[2.0, 4.0], true), (0.0, 4.2));
    }
}
