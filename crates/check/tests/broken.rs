//! The checker catches broken algorithms: each property has an algorithm made to break it.

use distsync_check::{check, Config, Property, Verdict};
use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, Params, Peers, Process};
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum Msg {
    Hello,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        "Hello"
    }
}

/// How the broken algorithm misbehaves.
trait Flaw: Clone + std::fmt::Debug + std::hash::Hash + Send + Sync + 'static {
    /// Bounce a message back and forth for ever instead of answering.
    const BOUNCE: bool = false;
    /// Enter at once on Request, asking nobody.
    const GREEDY: bool;
    /// Output Enter twice.
    const STUTTER: bool;
}

#[derive(Clone, Debug, Hash)]
struct Greedy;
impl Flaw for Greedy {
    const GREEDY: bool = true;
    const STUTTER: bool = false;
}

#[derive(Clone, Debug, Hash)]
struct Mute;
impl Flaw for Mute {
    const GREEDY: bool = false;
    const STUTTER: bool = false;
}

#[derive(Clone, Debug, Hash)]
struct Bounce;
impl Flaw for Bounce {
    const BOUNCE: bool = true;
    const GREEDY: bool = false;
    const STUTTER: bool = false;
}

#[derive(Clone, Debug, Hash)]
struct Stutter;
impl Flaw for Stutter {
    const GREEDY: bool = true;
    const STUTTER: bool = true;
}

#[derive(Clone, Debug, Hash)]
struct Broken<F> {
    in_cs: bool,
    flaw: PhantomData<F>,
}

impl<F: Flaw> Algorithm for Broken<F> {
    fn new(_: NodeId, _: &Peers, _: &Params) -> Self {
        Broken {
            in_cs: false,
            flaw: PhantomData,
        }
    }
}

impl<F: Flaw> MutualExclusion for Broken<F> {
    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
}

impl<F: Flaw> Process for Broken<F> {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, _: &mut Ctx<'_, Self>) {}

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            Input::Request if F::GREEDY => {
                self.in_cs = true;
                ctx.output(Output::Enter);
                if F::STUTTER {
                    ctx.output(Output::Enter);
                }
            }
            // A request nobody answers.
            Input::Request => ctx.broadcast(Msg::Hello),
            Input::Release => {
                self.in_cs = false;
                ctx.output(Output::Exit);
            }
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        if F::BOUNCE {
            ctx.send(from, msg);
        }
    }
}

fn violated<F: Flaw>(nodes: usize) -> (Property, usize, String) {
    let c = Config {
        nodes,
        requests: 1,
        fifo: false,
        ..Config::default()
    };
    match check::<Broken<F>>(&c, &mut |_| {}).unwrap().verdict {
        Verdict::Violated(cex) => (cex.property, cex.trace.len(), cex.detail),
        other => panic!("no violation: {other:?}"),
    }
}

#[test]
fn entering_without_asking_breaks_mutual_exclusion_in_two_steps() {
    let (p, len, detail) = violated::<Greedy>(2);
    assert_eq!((p, len), (Property::MutualExclusion, 2));
    assert!(detail.contains("0 and 1"), "{detail}");
    // With one node, entering at once is correct.
    let c = Config {
        nodes: 1,
        requests: 2,
        ..Config::default()
    };
    let o = check::<Broken<Greedy>>(&c, &mut |_| {}).unwrap();
    assert!(matches!(o.verdict, Verdict::Proved));
}

#[test]
fn a_request_nobody_answers_is_a_deadlock_once_the_messages_are_gone() {
    let (p, len, _) = violated::<Mute>(2);
    // Request at 0, deliver Hello 0->1, and node 1 still has its request to make: the
    // shortest terminal state needs both requests and both deliveries.
    assert_eq!((p, len), (Property::Deadlock, 4));
}

#[test]
fn a_double_enter_breaks_the_output_contract() {
    let (p, len, detail) = violated::<Stutter>(1);
    assert_eq!((p, len), (Property::OutputContract, 1));
    assert!(detail.contains("Enter"), "{detail}");
}

#[test]
fn a_request_bounced_for_ever_breaks_progress_not_deadlock() {
    // The Hello messages never stop, so no state is terminal and deadlock cannot be seen; but
    // already from the initial state no continuation serves every request.
    let (p, len, detail) = violated::<Bounce>(2);
    assert_eq!((p, len), (Property::Progress, 0));
    assert!(detail.contains("never granted"), "{detail}");
    // Under a bound nothing is concluded about progress.
    let c = Config {
        nodes: 2,
        requests: 1,
        fifo: false,
        bounds: distsync_check::Bounds {
            max_states: 3,
            max_depth: 100,
            max_memory: None,
        },
        ..Config::default()
    };
    let o = check::<Broken<Bounce>>(&c, &mut |_| {}).unwrap();
    assert!(matches!(o.verdict, Verdict::HoldsWithinBound));
}
