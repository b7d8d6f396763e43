//! Token algorithms proved safe for three nodes, non-FIFO.

mod common;

use common::{assert_proved, config, run};
use distsync_algorithms::mutex::{SinghalToken, SinghalTokenAsRestated, SuzukiKasami, TokenRing};
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

/// Singhal's 1989 token algorithm with its staircase kept: proved at 2 x 2, 3 x 1, 3 x 2 and
/// 4 x 1, non-FIFO (3 x 3, 4,529,110 states, is proved by `distsync check` in about a minute).
#[test]
fn singhal_token_is_safe_and_deadlock_free_up_to_three_nodes_two_requests() {
    for (n, r, states) in [
        (2, 2, None),
        (3, 1, Some(483)),
        (3, 2, Some(49_685)),
        (4, 1, Some(39_083)),
    ] {
        let o = assert_proved::<SinghalToken>("singhal-token", &config(n, r, false));
        assert!(o.stats.terminal_states >= 1);
        if let Some(states) = states {
            assert_eq!(o.stats.states, states, "{n} x {r}");
        }
    }
}

/// Every request is eventually served under fair scheduling (no starvation), at 3 x 2.
#[test]
fn singhal_token_three_nodes_two_requests_is_live() {
    let mut c = config(3, 2, false);
    c.liveness = true;
    assert_proved::<SinghalToken>("singhal-token", &c);
}

/// The rules as the textbook restates them (REQUESTs only to the sites SV marks R) deadlock at
/// 3 x 2: S_2's release copies the token's N over its staircase mark for S_1 while S_1's
/// REQUEST is still on its way to S_0; S_1, served later, keeps the idle token, and S_2's first
/// REQUEST reaches it only then and is discarded as outdated; S_2's next REQUEST reaches only
/// S_0. Mutual exclusion still holds in every state.
#[test]
fn singhal_token_as_restated_deadlocks_at_three_nodes_two_requests() {
    for fifo in [false, true] {
        let o = run::<SinghalTokenAsRestated>("singhal-token", &config(3, 2, fifo));
        match &o.verdict {
            Verdict::Violated(c) => {
                assert_eq!(c.property.to_string(), "deadlock", "{}", c.detail);
                assert_eq!(c.steps.iter().filter(|s| s.number > 0).count(), 19);
            }
            v => panic!("expected the deadlock (fifo {fifo}), got {v:?}"),
        }
    }
    assert_proved::<SinghalTokenAsRestated>("singhal-token", &config(3, 1, false));
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
