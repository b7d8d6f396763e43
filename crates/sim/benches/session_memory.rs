//! What a stepping session holds per step, at 10,000, 100,000 and 1,000,000 steps of a
//! 5-process Ricart-Agrawala run (the page's heaviest common case: Run at full speed). Bytes are
//! counted by a counting allocator (live bytes after the steps, less those before the session),
//! not timed. Run with `cargo bench -p distsync-sim --bench session_memory`; docs/web.md has the
//! figures.

use distsync_sim::session::Session;
use distsync_sim::Scenario;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    // `cargo test --benches` runs benches once as tests: keep that quick.
    let quick = std::env::args().any(|a| a == "--test");
    let scenario = Scenario::from_toml(
        r#"
        algorithm = "ricart-agrawala"
        nodes = 5
        until = "100000h"
        [network]
        delay = { uniform = ["500us", "1500us"] }
        [workload]
        kind = "saturated"
        cs = "1ms"
        requests = 100000000
        "#,
        "bench",
    )
    .expect("valid");
    let base = LIVE.load(Ordering::SeqCst);
    let mut session = Session::new(&scenario, "bench").expect("valid");
    let sizes: &[usize] = if quick {
        &[1_000]
    } else {
        &[10_000, 100_000, 1_000_000]
    };
    println!("session n=5 ricart-agrawala, saturated: bytes held per step");
    for &n in sizes {
        let done = session.choices().len();
        session.run((n - done) as u64, None).expect("runs");
        assert_eq!(session.choices().len(), n);
        let held = LIVE.load(Ordering::SeqCst) - base;
        let trace = session.trace_jsonl().len();
        println!(
            "{n:>9} steps: {:>6.0} bytes/step ({:.1} MB held; the trace is {:.0} bytes/step)",
            held as f64 / n as f64,
            held as f64 / 1e6,
            trace as f64 / n as f64
        );
    }
}
