//! Liveness under weak fairness: a fair cycle where a request waits for ever is found and
//! printed as a prefix and a loop, even where the possibility check (`progress`) holds; the
//! correct algorithms have none.

use distsync_check::{check, check_named, Config, Property, Transition, Verdict};
use distsync_core::mutex::{Input, MutualExclusion, Output};
use distsync_core::{Algorithm, Ctx, Message, NoTimer, NodeId, Params, Peers, Process};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
enum Msg {
    Ping,
    Pong,
    Req,
    Retry,
    Grant,
}

impl Message for Msg {
    fn kind(&self) -> &'static str {
        match self {
            Msg::Ping => "Ping",
            Msg::Pong => "Pong",
            Msg::Req => "Req",
            Msg::Retry => "Retry",
            Msg::Grant => "Grant",
        }
    }
}

/// Node 1 serves node 0, but only while it is not busy; a ping-pong with node 0 toggles busy
/// for ever, and a request that arrives while busy is sent back to be retried. Some schedule
/// always delivers the request while busy: every message is delivered (weakly fair) and node 0
/// starves, though from every state it could still be served.
#[derive(Clone, Debug, Hash)]
struct Picky {
    id: u32,
    busy: bool,
    in_cs: bool,
}

impl Algorithm for Picky {
    fn new(id: NodeId, _: &Peers, _: &Params) -> Self {
        Picky {
            id: id.0,
            busy: false,
            in_cs: false,
        }
    }
}

impl MutualExclusion for Picky {
    fn in_critical_section(&self) -> bool {
        self.in_cs
    }
    fn competitors(_: &Peers, _: &Params) -> Vec<NodeId> {
        vec![NodeId(0)]
    }
}

impl Process for Picky {
    type Msg = Msg;
    type Input = Input;
    type Output = Output;
    type Timer = NoTimer;

    fn on_start(&mut self, ctx: &mut Ctx<'_, Self>) {
        if self.id == 1 {
            ctx.send(NodeId(0), Msg::Ping);
        }
    }

    fn on_input(&mut self, input: Input, ctx: &mut Ctx<'_, Self>) {
        match input {
            Input::Request => ctx.send(NodeId(1), Msg::Req),
            Input::Release => {
                self.in_cs = false;
                ctx.output(Output::Exit);
            }
        }
    }

    fn on_message(&mut self, from: NodeId, msg: Msg, ctx: &mut Ctx<'_, Self>) {
        match msg {
            Msg::Ping => ctx.send(from, Msg::Pong),
            Msg::Pong => {
                self.busy = !self.busy;
                ctx.send(from, Msg::Ping);
            }
            Msg::Req if self.busy => ctx.send(from, Msg::Retry),
            Msg::Req => ctx.send(from, Msg::Grant),
            Msg::Retry => ctx.send(from, Msg::Req),
            Msg::Grant => {
                self.in_cs = true;
                ctx.output(Output::Enter);
            }
        }
    }
}

fn cfg(liveness: bool) -> Config {
    Config {
        nodes: 2,
        requests: 1,
        fifo: false,
        liveness,
        ..Config::default()
    }
}

#[test]
fn a_starving_schedule_is_a_fair_lasso_while_progress_holds() {
    // The possibility check alone proves it: node 0 can always still be served.
    let o = check::<Picky>(&cfg(false), &mut |_| {}).unwrap();
    assert!(matches!(o.verdict, Verdict::Proved));
    // Under weak fairness it can starve.
    let o = check::<Picky>(&cfg(true), &mut |_| {}).unwrap();
    let Verdict::Violated(cex) = o.verdict else {
        panic!("no fair cycle found");
    };
    for s in &cex.steps {
        eprintln!("{s}");
    }
    assert_eq!(cex.property, Property::Liveness);
    assert!(cex.detail.contains("node 0"), "{}", cex.detail);
    let start = cex.loop_start.expect("a lasso");
    let cycle = &cex.trace[start..];
    assert!(!cycle.is_empty());
    // The loop delivers the request while node 1 is busy, and its retry: both are taken.
    let delivers = |m: Msg| {
        cycle
            .iter()
            .any(|t| matches!(t, Transition::Deliver { msg, .. } if *msg == m))
    };
    assert!(delivers(Msg::Req) && delivers(Msg::Retry), "{cycle:?}");
    assert!(!delivers(Msg::Grant));
}

#[test]
fn correct_algorithms_have_no_fair_starvation() {
    for (name, nodes, fifo) in [
        ("ricart-agrawala", 3, false),
        ("token-ring", 3, false),
        ("lamport-mutex", 2, true),
        ("raymond", 3, false),
        ("chang-roberts", 3, true),
        ("bully", 3, true),
    ] {
        let c = Config {
            nodes,
            requests: 1,
            fifo,
            liveness: true,
            ..Config::default()
        };
        let o = check_named(name, &c, &mut |_| {}).unwrap();
        assert!(o.proved, "{name}: {:?}", o.violation.map(|v| v.detail));
    }
}
