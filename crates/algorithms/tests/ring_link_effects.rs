//! The ring link lends each wrapped algorithm's handler the thread's one effect list: two
//! links of different algorithms on one thread must each carry out only their own effects.
//! (An integration test: it names two algorithms, which the link's own module does not.)

use distsync_algorithms::election::peterson::Msg;
use distsync_algorithms::election::ring_link::{LinkMsg, RingLink};
use distsync_algorithms::election::{chang_roberts, ChangRoberts, Peterson};
use distsync_core::election::Input;
use distsync_core::testing::Driver;
use distsync_core::{Algorithm, NodeId, Params, Peers};

/// Two ring links of different algorithms on one thread take turns with the thread's
/// effect list (each replaces the other's): each call carries out its own algorithm's
/// effects, and only them.
#[test]
fn ring_links_of_two_algorithms_on_one_thread_each_carry_out_their_own_effects() {
    let peers = Peers::range(4);
    let params = Params::default();
    for _ in 0..2 {
        let mut pet = Driver::new(
            RingLink::<Peterson>::new(NodeId(2), &peers, &params),
            NodeId(2),
            &peers,
        );
        let mut cr = Driver::new(
            RingLink::<ChangRoberts>::new(NodeId(1), &peers, &params),
            NodeId(1),
            &peers,
        );
        pet.start().input(Input::Start);
        assert!(matches!(
            pet.sent()[..],
            [(
                NodeId(3),
                LinkMsg::Data {
                    msg: Msg::Tid { tid: NodeId(2), .. },
                    ..
                }
            )]
        ));
        cr.start().input(Input::Start);
        assert!(matches!(
            cr.sent()[..],
            [(
                NodeId(2),
                LinkMsg::Data {
                    msg: chang_roberts::Msg::Election { uid: NodeId(1), .. },
                    ..
                }
            )]
        ));
        // The participant starts nothing again: the list lent to it comes back empty.
        cr.input(Input::Start);
        assert!(cr.effects().is_empty());
        pet.input(Input::Start);
        assert!(pet.effects().is_empty());
    }
}
