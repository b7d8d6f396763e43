//! Leader-election algorithms, one file each, and two combinators that add failure handling
//! around them without touching their rules:
//!
//! - [`RingLink`] (ring_link.rs) carries a ring algorithm's messages to the successor and skips
//!   crashed successors, with an acknowledgement and the timeout T, as the notes require ("if
//!   the successor is down, the process skips to the next available running process").
//! - [`Detector`] (detector.rs) watches the coordinator with heartbeats and a timeout and gives
//!   the wrapped algorithm its `Start` input when the coordinator falls silent
//!   (`detect = "timeout"` in a scenario).
//!
//! The registry runs the ring algorithms inside a [`RingLink`]; the simulator adds the
//! [`Detector`] when a scenario asks for it.

pub mod bully;
pub mod chang_roberts;
pub mod detector;
mod id_list;
mod members;
pub mod peterson;
pub mod ring;
pub mod ring_active_list;
pub mod ring_link;

#[cfg(test)]
pub(crate) mod testkit;

pub use bully::Bully;
pub use chang_roberts::ChangRoberts;
pub use detector::Detector;
pub use peterson::Peterson;
pub use ring::Ring;
pub use ring_active_list::RingActiveList;
pub use ring_link::RingLink;

use distsync_core::{Ctx, EffectOf, Process, Rules};

/// Runs one handler of `inner` (a process wrapped by a combinator) with a context of its own,
/// and returns the effects it recorded, for the combinator to translate into its own.
/// `scratch` is reused between calls so that wrapping costs no allocation per event. The rules
/// the inner handler names ([`Ctx::rule`]) are named on `ctx` too.
pub(crate) fn nested<A: Process, P: Process + ?Sized>(
    ctx: &mut Ctx<'_, P>,
    inner: &mut A,
    scratch: &mut Vec<EffectOf<A>>,
    handler: impl FnOnce(&mut A, &mut Ctx<'_, A>),
) -> Vec<EffectOf<A>> {
    let (effects, rules) = nested_apart(ctx, inner, scratch, handler);
    // The rules the wrapped algorithm applied are the rules of this call.
    for &rule in rules.as_slice() {
        ctx.rule(rule);
    }
    effects
}

/// [`nested`], but the rules the inner handler names are returned instead of named on `ctx`:
/// for a combinator whose own file numbers its rules differently (Berkeley's election of the
/// master), so that the inner file's labels are not read as its own.
pub(crate) fn nested_apart<A: Process, P: Process + ?Sized>(
    ctx: &mut Ctx<'_, P>,
    inner: &mut A,
    scratch: &mut Vec<EffectOf<A>>,
    handler: impl FnOnce(&mut A, &mut Ctx<'_, A>),
) -> (Vec<EffectOf<A>>, Rules) {
    let mut effects = std::mem::take(scratch);
    effects.clear();
    let (id, peers, now, recovered) = (ctx.id(), ctx.peers(), ctx.now(), ctx.recovered());
    let position = ctx.position();
    let keeps_rules = ctx.keeps_rules();
    let mut inner_ctx = Ctx::new(id, peers, now, recovered, ctx.rng(), &mut effects);
    if !keeps_rules {
        // Nothing reads them (a batch run): naming them was 2% of a ring election's
        // instructions.
        inner_ctx = inner_ctx.without_rules();
    }
    if let Some(p) = position {
        inner_ctx = inner_ctx.at_position(p);
    }
    handler(inner, &mut inner_ctx);
    let rules = inner_ctx.rules();
    (effects, rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::election::ChangRoberts;
    use distsync_core::election::Input;
    use distsync_core::{Algorithm, NodeId, Params, Peers, Time};
    use rand_core::SeedableRng;

    /// A wrapped algorithm names its rules in a context of its own: kept when the runtime
    /// keeps the outer context's (a stepped session shows them), not otherwise (a batch run).
    #[test]
    fn a_wrapped_handler_keeps_its_rules_only_where_the_runtime_reads_them() {
        let peers = Peers::range(3);
        let inner = ChangRoberts::new(NodeId(1), &peers, &Params::default());
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(1);
        for keep in [true, false] {
            let mut outer: Vec<EffectOf<ChangRoberts>> = Vec::new();
            let ctx = Ctx::<ChangRoberts>::new(
                NodeId(1),
                &peers,
                Time::ZERO,
                false,
                &mut rng,
                &mut outer,
            );
            let mut ctx = if keep { ctx } else { ctx.without_rules() };
            let mut inner_fresh = inner.clone();
            let (effects, rules) =
                nested_apart(&mut ctx, &mut inner_fresh, &mut Vec::new(), |a, c| {
                    a.on_input(Input::Start, c)
                });
            assert_eq!(effects.len(), 2, "{effects:?}"); // T' and the election message
            assert_eq!(rules.as_slice(), if keep { &["2", "3"][..] } else { &[] });
        }
    }
}
