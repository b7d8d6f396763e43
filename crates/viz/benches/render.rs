//! Rendering a synthetic trace of one million events: SVG, Perfetto JSON, ShiViz log, and reading
//! the trace's text.
//!
//! `cargo bench -p distsync-viz --bench render`

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use distsync_viz::svg::{render, SvgOptions};
use distsync_viz::trace::Trace;
use distsync_viz::{perfetto, shiviz};
use std::time::Duration;

mod synthetic;
use synthetic::synthetic;

const EVENTS: usize = 1_000_000;

fn benches(c: &mut Criterion) {
    let text = synthetic(EVENTS);
    let trace = Trace::parse(&text, "synthetic").expect("the synthetic trace parses");
    let n = trace.events.len() as u64;
    eprintln!(
        "synthetic trace: {n} events, {} MB of JSON lines",
        text.len() / 1_000_000
    );
    let mut g = c.benchmark_group("one_million_events");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(30))
        .warm_up_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(n));
    g.bench_function("parse", |b| {
        b.iter(|| Trace::parse(&text, "synthetic").unwrap())
    });
    g.bench_function("svg", |b| {
        b.iter_batched(
            || (),
            |_| render(&trace, &SvgOptions::default()).unwrap(),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("perfetto", |b| b.iter(|| perfetto::render(&trace)));
    g.bench_function("shiviz", |b| b.iter(|| shiviz::render(&trace)));
    g.finish();
}

criterion_group!(render_benches, benches);
criterion_main!(render_benches);
