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
}

impl Series {
    /// A series of measured points.
    pub fn measured(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style: SeriesStyle::Measured,
        }
    }

    /// A theory curve.
    pub fn theory(name: impl Into<String>, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            style: SeriesStyle::Theory,
        }
    }
}

const COLORS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// Chart size in pixels.
const SIZE: (u32, u32) = (800, 500);

/// Draws `series` on one chart with the given axis labels and returns the SVG text.
///
/// Fails when there is no point at all or a coordinate is not finite (naming the series).
pub fn line_chart(series: &[Series], x_label: &str, y_label: &str) -> Result<String, RenderError> {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for s in series {
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
    let mut buf = String::new();
    draw(&mut buf, series, x_label, y_label, (x0, x1), (y0, y1))
        .map_err(|e| RenderError::Plot(e.to_string()))?;
    Ok(buf)
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

fn draw(
    buf: &mut String,
    series: &[Series],
    x_label: &str,
    y_label: &str,
    x: (f64, f64),
    y: (f64, f64),
) -> DrawResult {
    let root = SVGBackend::with_string(buf, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(20)
        .x_label_area_size(52)
        .y_label_area_size(72)
        .build_cartesian_2d(x.0..x.1, y.0..y.1)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(0xe4, 0xe4, 0xe4))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()?;
    // Theory curves first, so measured points are drawn over them.
    let mut ordered: Vec<(usize, &Series)> = series.iter().enumerate().collect();
    ordered.sort_by_key(|(_, s)| s.style == SeriesStyle::Measured);
    for (i, s) in ordered {
        let color = COLORS[i % COLORS.len()];
        let line = color.stroke_width(2);
        match s.style {
            SeriesStyle::Measured => {
                chart
                    .draw_series(LineSeries::new(s.points.iter().copied(), line))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], line));
                chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
            }
            SeriesStyle::Theory => {
                chart
                    .draw_series(DashedLineSeries::new(s.points.iter().copied(), 8, 5, line))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        plotters::element::DashedPathElement::new(
                            vec![(x, y), (x + 20, y)],
                            5,
                            3,
                            line,
                        )
                    });
            }
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
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
    fn single_point_still_has_a_range() {
        assert_eq!(padded(&[3.0], false), (1.9, 4.1));
        assert_eq!(padded(&[2.0, 4.0], true), (0.0, 4.2));
    }
}
