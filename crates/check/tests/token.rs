//! Token algorithms proved safe for three nodes, non-FIFO.

mod common;

use common::{assert_proved, config, run};
use distsync_algorithms::mutex::{SinghalToken, SuzukiKasami, TokenRing};
use distsync_check::Verdict;

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

/// Singhal's 1989 token algorithm, rule by rule: proved at 2 x 2 and 3 x 1 (483 states).
#[test]
fn singhal_token_is_safe_and_deadlock_free_for_three_nodes_one_request() {
    for (n, r) in [(2, 2), (3, 1)] {
        let o = assert_proved::<SinghalToken>("singhal-token", &config(n, r, false));
        assert!(o.stats.terminal_states >= 1);
        if (n, r) == (3, 1) {
            assert_eq!(o.stats.states, 483);
        }
    }
}

/// With two requests per site the published rules deadlock (docs/mutex.md): S_2's release
/// copies the token's stale N over its initial R mark for S_1 while S_1's REQUEST is still on
/// its way to S_0, and S_1 trusts that mark and never asks S_2; once S_1 holds the idle token,
/// S_2's next REQUEST reaches only S_0. Mutual exclusion still holds in every state.
#[test]
fn singhal_token_three_nodes_two_requests_deadlocks_as_published() {
    let o = run::<SinghalToken>("singhal-token", &config(3, 2, false));
    match &o.verdict {
        Verdict::Violated(c) => {
            assert_eq!(c.property.to_string(), "deadlock", "{}", c.detail);
            assert_eq!(c.steps.iter().filter(|s| s.number > 0).count(), 19);
        }
        v => panic!("expected the deadlock, got {v:?}"),
    }
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
