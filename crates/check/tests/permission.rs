//! Permission-based algorithms proved safe and deadlock-free on small configurations, non-FIFO.

mod common;

use common::{assert_proved, config};
use distsync_algorithms::mutex::{Central, RicartAgrawala};

#[test]
fn central_two_nodes_one_request_has_the_hand_counted_six_states() {
    // Node 1 coordinates, node 0 competes: idle; REQUEST in flight; GRANT in flight; in the CS;
    // RELEASE in flight; done. Six states in a line, five transitions, one terminal state.
    let o = assert_proved::<Central>("central", &config(2, 1, false));
    assert_eq!(o.stats.states, 6);
    assert_eq!(o.stats.transitions, 5);
    assert_eq!(o.stats.depth, 5);
    assert_eq!(o.stats.terminal_states, 1);
}

#[test]
fn central_is_safe_and_deadlock_free_for_two_and_three_nodes() {
    for (n, r) in [(2, 2), (3, 1), (3, 2)] {
        let o = assert_proved::<Central>("central", &config(n, r, false));
        // Every run ends with every request served: one terminal state, reached by all paths.
        assert_eq!(o.stats.terminal_states, 1);
    }
}

#[test]
fn ricart_agrawala_is_safe_and_deadlock_free_for_two_and_three_nodes() {
    for (n, r) in [(2, 1), (2, 2), (3, 1)] {
        let o = assert_proved::<RicartAgrawala>("ricart-agrawala", &config(n, r, false));
        assert!(o.stats.terminal_states >= 1);
    }
}

/// 516,200 states: the checker, algorithms and core crates are optimized even in test
/// builds (see the workspace Cargo.toml), which keeps this under a minute.
#[test]
fn ricart_agrawala_three_nodes_two_requests() {
    let o = assert_proved::<RicartAgrawala>("ricart-agrawala", &config(3, 2, false));
    assert!(o.stats.states > 100_000);
}
