//! The stepped engine at the size the web page promises to keep responsive: 32 processes and
//! 10,000 events. Measures one step (`Next` and the view the page draws after it) and one step
//! back (a replay of all the choices but the last). Run with
//! `cargo bench -p distsync-sim --bench session`.

use criterion::{criterion_group, criterion_main, Criterion};
use distsync_sim::session::{Choice, Session};
use distsync_sim::Scenario;

fn at_10_000_events() -> Session {
    let scenario = Scenario::from_toml(
        r#"
        algorithm = "ricart-agrawala"
        nodes = 32
        until = "1h"
        [network]
        delay = { uniform = ["500us", "1500us"] }
        [workload]
        kind = "saturated"
        cs = "1ms"
        requests = 100
        "#,
        "bench",
    )
    .expect("valid");
    let mut session = Session::new(&scenario, "bench").expect("valid");
    session.run(10_000, None).expect("runs");
    assert_eq!(session.view().events, 10_000);
    session
}

fn steps(c: &mut Criterion) {
    let mut group = c.benchmark_group("session n=32 at 10,000 events");
    group.sample_size(10);
    group.measurement_time(std::time::Duration::from_secs(2));
    let session = at_10_000_events();
    group.bench_function("step and view", |b| {
        b.iter_batched_ref(
            || {
                let mut s = Session::replay(session.scenario(), "bench", session.choices())
                    .expect("replays");
                s.goto(session.choices().len()).expect("there");
                s
            },
            |s| {
                s.apply(Choice::Next).expect("applies");
                s.view()
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.bench_function("view", |b| b.iter(|| session.view()));
    group.bench_function("back", |b| {
        b.iter_batched_ref(
            || Session::replay(session.scenario(), "bench", session.choices()).expect("replays"),
            |s| s.back().expect("goes back"),
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, steps);
criterion_main!(benches);
