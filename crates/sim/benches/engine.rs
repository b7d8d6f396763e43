//! Simulator speed in events per second: Ricart-Agrawala with N = 32 under heavy load (the
//! figure the README quotes), and Lamport's algorithm for comparison. Traces are off, as in a
//! sweep. Run with `cargo bench -p distsync-sim --bench engine`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use distsync_sim::bench::mutex_heavy as scenario;
use distsync_sim::{run, RunOptions};

fn events_per_second(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulator");
    group.sample_size(10);
    for (algorithm, n, requests) in [("ricart-agrawala", 32, 100), ("lamport-mutex", 32, 60)] {
        let s = scenario(algorithm, n, requests);
        let events = run(&s, RunOptions::default())
            .expect("runs")
            .events_processed;
        group.throughput(Throughput::Elements(events));
        group.bench_function(format!("{algorithm}/n={n}/heavy ({events} events)"), |b| {
            b.iter(|| run(&s, RunOptions::default()).expect("runs"))
        });
    }
    group.finish();
}

criterion_group!(benches, events_per_second);
criterion_main!(benches);
