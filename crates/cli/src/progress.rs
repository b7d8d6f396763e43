//! Progress bars for long work: drawn on a terminal, never when stderr is piped or the output is
//! `--json`; cleared when dropped, so a verb's early return leaves no half-drawn bar.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar that may not be drawn at all.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar of `len` steps drawn with `template`, unless `quiet`, `-q/--quiet` or stderr is not
    /// a terminal.
    pub fn new(quiet: bool, len: u64, template: &str) -> Progress {
        Progress(
            (!quiet && !crate::output::quiet() && std::io::stderr().is_terminal()).then(|| {
                let bar = ProgressBar::new(len);
                bar.set_style(ProgressStyle::with_template(template).expect("a valid template"));
                bar
            }),
        )
    }

    /// A bar counting runs: "{doing} [====] 12/40 runs, 3s elapsed, ETA 7s".
    pub fn runs(quiet: bool, doing: &str) -> Progress {
        Progress::new(
            quiet,
            0,
            &format!(
                "{{spinner}} {doing} {{bar:40}} {{pos}}/{{len}} runs, {{elapsed}} elapsed, ETA {{eta}}"
            ),
        )
    }

    /// `done` of `total` steps.
    pub fn update(&self, done: u64, total: u64) {
        if let Some(bar) = &self.0 {
            bar.set_length(total);
            bar.set_position(done);
        }
    }

    /// The bar itself, where one is drawn (for messages, or to move into a callback).
    pub fn bar(&self) -> Option<&ProgressBar> {
        self.0.as_ref()
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

/// The expected work of a batch of runs grouped in points (a sweep: one point per algorithm and
/// parameter value, `seeds` runs each), in events, learned as runs finish.
///
/// Before a point has run, its work is guessed from a prior (nodes x requests, say) through a
/// power law `events = a * prior^b` fitted, in log-log space, to the finished points of the same
/// group (the same algorithm): a broadcast algorithm's events grow with the square of the nodes,
/// a token's with the nodes, and the fit finds which. Once one of a point's runs has finished,
/// its other runs are expected to cost what the finished ones did on average.
#[derive(Clone, Debug)]
pub struct Work {
    points: Vec<PointWork>,
    seeds: u64,
    events_done: u64,
    runs_done: u64,
}

#[derive(Clone, Debug)]
struct PointWork {
    group: usize,
    prior: f64,
    runs: u64,
    events: u64,
}

impl Work {
    /// Points as (group, prior) in any order, each to be run `seeds` times.
    pub fn new(points: impl IntoIterator<Item = (usize, f64)>, seeds: u64) -> Work {
        Work {
            points: points
                .into_iter()
                .map(|(group, prior)| PointWork {
                    group,
                    prior: prior.max(1.0),
                    runs: 0,
                    events: 0,
                })
                .collect(),
            seeds,
            events_done: 0,
            runs_done: 0,
        }
    }

    /// One run of `point` finished after `events` events.
    pub fn record(&mut self, point: usize, events: u64) {
        let p = &mut self.points[point];
        p.runs += 1;
        p.events += events;
        self.events_done += events;
        self.runs_done += 1;
    }

    /// Events processed by the finished runs.
    pub fn events_done(&self) -> u64 {
        self.events_done
    }

    /// Runs finished, and runs in all.
    pub fn runs(&self) -> (u64, u64) {
        (self.runs_done, self.points.len() as u64 * self.seeds)
    }

    /// The events of every run, finished or not: the finished runs' own, plus a guess for each
    /// run to come. Before any run has finished, the guess is the prior itself (so only the
    /// proportions mean anything).
    pub fn expected_total(&self) -> u64 {
        let fits: Vec<Option<(f64, f64)>> = (0..=self.groups())
            .map(|g| self.fit(|p| p.group == g))
            .collect();
        let overall = self.fit(|_| true);
        let to_come: f64 = self
            .points
            .iter()
            .map(|p| {
                let left = self.seeds.saturating_sub(p.runs) as f64;
                let each = if p.runs > 0 {
                    p.events as f64 / p.runs as f64
                } else {
                    let (a, b) = fits[p.group].or(overall).unwrap_or((1.0, 1.0));
                    a * p.prior.powf(b)
                };
                left * each
            })
            .sum();
        self.events_done + to_come.round() as u64
    }

    fn groups(&self) -> usize {
        self.points.iter().map(|p| p.group).max().unwrap_or(0)
    }

    /// `(a, b)` of `events = a * prior^b` over the finished points that `which` selects; `b` is
    /// 1 when their priors are all alike, and kept within 0.5..=3.
    fn fit(&self, which: impl Fn(&PointWork) -> bool) -> Option<(f64, f64)> {
        let xy: Vec<(f64, f64)> = self
            .points
            .iter()
            .filter(|p| p.runs > 0 && which(p))
            .map(|p| {
                (
                    p.prior.ln(),
                    (p.events as f64 / p.runs as f64).max(1.0).ln(),
                )
            })
            .collect();
        if xy.is_empty() {
            return None;
        }
        let n = xy.len() as f64;
        let (mx, my) = (
            xy.iter().map(|p| p.0).sum::<f64>() / n,
            xy.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let var: f64 = xy.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let cov: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let b = if var > 1e-12 {
            (cov / var).clamp(0.5, 3.0)
        } else {
            1.0
        };
        Some(((my - b * mx).exp(), b))
    }
}

impl Progress {
    /// A bar measuring work in events: "{doing} [====] 42% of the work (12/40 runs, 1.2M events,
    /// 850k events/s), 3s elapsed, ETA 7s".
    pub fn work(quiet: bool, doing: &str) -> Progress {
        let progress = Progress::new(
            quiet,
            0,
            &format!(
                "{{spinner}} {doing} {{bar:40}} {{percent}}% of the work ({{msg}}), {{elapsed}} elapsed, ETA {{eta}}"
            ),
        );
        if let Some(bar) = progress.bar() {
            bar.set_message("starting");
        }
        progress
    }

    /// Shows `work`: the bar at the finished runs' events out of the expected total, the runs
    /// and the events per second since `started`.
    pub fn show_work(&self, work: &Work, started: std::time::Instant) {
        if let Some(bar) = &self.0 {
            let (done, runs) = work.runs();
            let events = work.events_done();
            let rate = events as f64 / started.elapsed().as_secs_f64().max(1e-3);
            bar.set_length(work.expected_total().max(1));
            bar.set_position(events);
            bar.set_message(format!(
                "{done}/{runs} runs, {} events, {} events/s",
                short(events as f64),
                short(rate)
            ));
        }
    }
}

/// 1234 as "1.2k", 5600000 as "5.6M".
fn short(n: f64) -> String {
    if n >= 1e6 {
        format!("{:.1}M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_every_run_finished_the_total_is_the_events_processed() {
        let mut work = Work::new([(0, 10.0), (0, 20.0), (1, 10.0)], 2);
        for (point, events) in [(0, 100), (2, 7), (1, 400), (0, 120), (2, 9), (1, 380)] {
            work.record(point, events);
        }
        assert_eq!(work.runs(), (6, 6));
        assert_eq!(work.events_done(), 1016);
        assert_eq!(work.expected_total(), 1016);
    }

    #[test]
    fn a_points_other_seeds_are_expected_to_cost_what_its_finished_runs_did() {
        let mut work = Work::new([(0, 10.0), (1, 10.0)], 3);
        work.record(0, 100);
        work.record(1, 50);
        work.record(1, 70);
        // Point 0: 100 done + 2 x 100 to come; point 1: 120 done + 1 x 60 to come.
        assert_eq!(work.expected_total(), 100 + 200 + 120 + 60);
    }

    #[test]
    fn an_unrun_point_is_guessed_from_the_power_law_of_its_algorithm() {
        // A broadcast algorithm: events = 3 * (nodes x requests)^2; a token one: 5 * prior.
        let priors = [20.0, 40.0, 80.0, 160.0];
        let mut work = Work::new(
            priors
                .iter()
                .map(|&p| (0, p))
                .chain(priors.iter().map(|&p| (1, p))),
            1,
        );
        for (i, p) in priors.iter().enumerate().take(2) {
            work.record(i, (3.0 * p * p) as u64);
            work.record(4 + i, (5.0 * p) as u64);
        }
        let exact: f64 = priors.iter().map(|p| 3.0 * p * p + 5.0 * p).sum();
        let expected = work.expected_total() as f64;
        assert!(
            (expected - exact).abs() / exact < 1e-6,
            "{expected} vs {exact}"
        );
        // The runs counted as runs would have said half the work was done; it is 1/17 of it.
        let share = work.events_done() as f64 / expected;
        assert!(share < 0.07, "{share}");
    }

    #[test]
    fn before_any_run_the_priors_set_the_proportions() {
        let work = Work::new([(0, 10.0), (0, 30.0)], 2);
        assert_eq!(work.expected_total(), 80);
        assert_eq!(work.runs(), (0, 4));
    }
}
