//! Token algorithms proved safe for three nodes, non-FIFO.

mod common;

use common::{assert_proved, config};
use distsync_algorithms::mutex::{SuzukiKasami, TokenRing};

#[test]
fn suzuki_kasami_is_safe_and_deadlock_free_for_three_nodes() {
    for (n, r) in [(2, 2), (3, 1)] {
        let o = assert_proved::<SuzukiKasami>("suzuki-kasami", &config(n, r, false));
        assert!(o.stats.terminal_states >= 1);
    }
}

/// 62,103 states: about 10 s in a debug build.
#[test]
fn suzuki_kasami_three_nodes_two_requests() {
    assert_proved::<SuzukiKasami>("suzuki-kasami", &config(3, 2, false));
}

#[test]
fn token_ring_is_safe_for_three_nodes() {
    for r in [1, 2] {
        let o = assert_proved::<TokenRing>("token-ring", &config(3, r, false));
        // The token circulates for ever: no run terminates, so deadlock and completion are
        // vacuous here and only mutual exclusion is proved.
        assert_eq!(o.stats.terminal_states, 0);
    }
}

#[test]
fn what_the_holder_sends_at_start_is_step_zero_of_a_replay() {
    let c = config(3, 1, false);
    let r = distsync_check::replay::<TokenRing>(&c, &[]).unwrap();
    assert_eq!(r.steps.len(), 1);
    assert_eq!(r.steps[0].number, 0);
    assert_eq!(r.steps[0].sent, vec!["Token 0->1".to_string()]);
    assert!(r.violation.is_none());
}
