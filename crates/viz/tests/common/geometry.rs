//! The space-time diagram's marks as boxes, to check that no label sits on a glyph or on another
//! label. Read back from the SVG the renderer wrote, so what is checked is what a reader sees.
//!
//! Glyphs: the crash cross, the recovery triangle, the leader diamond and the clock-adjustment
//! diamond, each boxed by its own path or rectangle (plus half its stroke). Labels: every
//! `<text>` of class `mark` (leader, adjustment and output labels; partition names), boxed at
//! 10 px type as the renderer's own label spacing assumes: 6.2 px per character, from 9 px above
//! the baseline (ascenders) to 2.5 px below it (descenders).
//!
//! Also included by crates/cli/tests/label_geometry.rs, which draws every scenario.

#![allow(dead_code)]

/// A box: left, top, right, bottom.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    /// Whether the two boxes share more than an edge.
    pub fn overlaps(&self, other: &Rect) -> bool {
        self.x0 < other.x1 && other.x0 < self.x1 && self.y0 < other.y1 && other.y0 < self.y1
    }

    fn around(points: &[(f64, f64)], pad: f64) -> Rect {
        let xs = points.iter().map(|p| p.0);
        let ys = points.iter().map(|p| p.1);
        Rect {
            x0: xs.clone().fold(f64::INFINITY, f64::min) - pad,
            x1: xs.fold(f64::NEG_INFINITY, f64::max) + pad,
            y0: ys.clone().fold(f64::INFINITY, f64::min) - pad,
            y1: ys.fold(f64::NEG_INFINITY, f64::max) + pad,
        }
    }
}

/// A mark and what it is ("recover", "leader 6", ...).
#[derive(Clone, Debug)]
pub struct Mark {
    pub what: String,
    pub rect: Rect,
}

/// The points of an SVG path made of absolute M and L commands.
fn path_points(d: &str) -> Vec<(f64, f64)> {
    d.split(|c: char| c.is_ascii_alphabetic() || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .filter_map(|pair| {
            let (x, y) = pair.split_once(',')?;
            Some((x.parse().ok()?, y.parse().ok()?))
        })
        .collect()
}

fn num(node: roxmltree::Node, attr: &str) -> f64 {
    node.attribute(attr)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("<{}> without a numeric {attr}", node.tag_name().name()))
}

fn classes<'a>(node: &roxmltree::Node<'a, 'a>) -> Vec<&'a str> {
    node.attribute("class")
        .map(|c| c.split_whitespace().collect())
        .unwrap_or_default()
}

/// The glyphs and the labels of a diagram.
pub fn marks(svg: &str) -> (Vec<Mark>, Vec<Mark>) {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is XML");
    let (mut glyphs, mut labels) = (Vec::new(), Vec::new());
    for node in doc.descendants().filter(|n| n.is_element()) {
        let own = classes(&node);
        let parent = node
            .parent_element()
            .map(|p| classes(&p))
            .unwrap_or_default();
        match node.tag_name().name() {
            "path" if own.contains(&"recover") => glyphs.push(Mark {
                what: "recovery triangle".into(),
                rect: Rect::around(&path_points(node.attribute("d").unwrap()), 0.5),
            }),
            "path" if parent.contains(&"crash") => glyphs.push(Mark {
                what: "crash cross".into(),
                rect: Rect::around(&path_points(node.attribute("d").unwrap()), 1.75),
            }),
            "path" if parent.contains(&"leader") => glyphs.push(Mark {
                what: "leader diamond".into(),
                rect: Rect::around(&path_points(node.attribute("d").unwrap()), 0.5),
            }),
            "rect" if parent.contains(&"adjust") => {
                // A square of side s turned 45 degrees about its centre: half-diagonal s/sqrt(2).
                let s = num(node, "width");
                let (cx, cy) = (num(node, "x") + s / 2.0, num(node, "y") + s / 2.0);
                let h = s / std::f64::consts::SQRT_2 + 0.5;
                glyphs.push(Mark {
                    what: "adjustment diamond".into(),
                    rect: Rect {
                        x0: cx - h,
                        y0: cy - h,
                        x1: cx + h,
                        y1: cy + h,
                    },
                });
            }
            "text" if own.contains(&"mark") => {
                let text = node.text().unwrap_or_default().to_string();
                let (x, y) = (num(node, "x"), num(node, "y"));
                let width = text.chars().count() as f64 * 6.2;
                let x0 = match node.attribute("text-anchor") {
                    Some("end") => x - width,
                    Some("middle") => x - width / 2.0,
                    _ => x,
                };
                labels.push(Mark {
                    what: format!("label `{text}`"),
                    rect: Rect {
                        x0,
                        y0: y - 9.0,
                        x1: x0 + width,
                        y1: y + 2.5,
                    },
                });
            }
            _ => {}
        }
    }
    (glyphs, labels)
}

/// Every label that overlaps a glyph or another label, in words; empty when the drawing is
/// clear.
pub fn collisions(svg: &str) -> Vec<String> {
    let (glyphs, labels) = marks(svg);
    let mut found = Vec::new();
    for (i, label) in labels.iter().enumerate() {
        for glyph in &glyphs {
            if label.rect.overlaps(&glyph.rect) {
                found.push(format!(
                    "{} {:?} overlaps a {} {:?}",
                    label.what, label.rect, glyph.what, glyph.rect
                ));
            }
        }
        for other in &labels[i + 1..] {
            if label.rect.overlaps(&other.rect) {
                found.push(format!(
                    "{} {:?} overlaps {} {:?}",
                    label.what, label.rect, other.what, other.rect
                ));
            }
        }
    }
    found
}
