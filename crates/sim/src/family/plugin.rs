//! The interface of a family's plug-in ([`Plugin`]) and what the core hands it.

use crate::family::claims::{Claims, Outside};
use crate::scenario::{Checked, DelaySpec, EventSpec, Scenario};
use crate::{Built, FamilyRun, SimError};
use distsync_algorithms::registry::{Entry, Family};
use distsync_core::multicast::Order;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::Duration;

/// The common part of a default scenario: the head (name, nodes, seed, horizon) and the
/// network section, written the same way for every family.
pub(crate) struct DefaultParts<'a> {
    /// The algorithm's registry entry.
    pub entry: &'a Entry,
}

impl DefaultParts<'_> {
    /// `algorithm`, `nodes`, `seed` and `until`.
    pub fn head(&self, nodes: u32, until: &str) -> String {
        format!(
            "algorithm = \"{}\"\nnodes = {nodes}\nseed = 1\nuntil = \"{until}\"\n",
            self.entry.name
        )
    }

    /// The `[network]` section with `delay` and the algorithm's FIFO need.
    pub fn network(&self, delay: &str) -> String {
        self.network_fifo(delay, self.entry.needs_fifo)
    }

    /// The `[network]` section with `delay` and `fifo`.
    pub fn network_fifo(&self, delay: &str, fifo: bool) -> String {
        format!("[network]\ndelay = {delay}\nfifo = {fifo}\n")
    }
}

/// What the family's stress generator draws from: the run's size and network.
pub(crate) struct Draw<'a> {
    /// The algorithm's registry entry.
    pub entry: &'a Entry,
    /// The number of processes.
    pub n: u32,
    /// The network's delay.
    pub delay: &'a DelaySpec,
    /// The network's delay bound.
    pub bound: Duration,
    /// A timeout comfortably above the worst round trip.
    pub timeout: Duration,
    /// Multicast orders to monitor beyond those the algorithm promises (`stress --check`).
    pub check: &'a [Order],
}

/// What a family brings to the simulator. Every method has the family's own knowledge; the
/// defaults are what a family without that concern does (no timeout, no warning, ...).
pub(crate) trait Plugin: Sync {
    /// Which family of the registry this is.
    fn family(&self) -> Family;

    /// The family as messages name it when a field or event belongs to it ("leader
    /// election").
    fn title(&self) -> &'static str;

    /// Whether the family's scenarios take `part`, a field or section of the scenario that
    /// belongs to one family or a few (`detect`, `sync_interval`, `multicast`, `app`, ...) or
    /// an event of theirs (`event.elect`, `event.sync`, ...); the others refuse it.
    fn takes(&self, _part: &str) -> bool {
        false
    }

    /// Who in the family reads the algorithm's field `field` (`coordinator`, `holder`,
    /// `answer_timeout`, ...), as the refusal elsewhere names them; `None` if nobody does.
    fn readers(&self, _field: &str) -> Option<&'static str> {
        None
    }

    /// Whether the algorithm `entry` reads the field `field` (see [`Plugin::readers`]); by
    /// default, every algorithm of a family whose readers it names.
    fn reads(&self, _entry: &Entry, field: &str) -> bool {
        self.readers(field).is_some()
    }

    /// A scenario file of `scenarios/` that shows the family, for messages that point to one.
    fn example(&self) -> &'static str;

    /// The runnable default scenario of the algorithm `parts.entry` (TOML).
    fn default_scenario(&self, parts: &DefaultParts) -> String;

    /// The number of processes of `distsync init`'s template for `name`.
    fn template_nodes(&self, _name: &str) -> u32 {
        5
    }

    /// The template's top-level fields of the family, after `until`.
    fn template_fields(&self, _w: &mut String, _name: &str, _last: u32) {}

    /// Appended to the template's comments on `loss` and `duplicate`.
    fn template_lossless_note(&self) -> &'static str {
        ""
    }

    /// The template's sections after `[network]`: workload, application, events.
    fn template_sections(&self, w: &mut String, name: &str, last: u32);

    /// The floor of the default `answer_timeout` for a family that detects crashes by
    /// timeouts; `None` for one that has none.
    fn answer_timeout_floor(&self) -> Option<Duration> {
        None
    }

    /// Warnings about a scenario (with its defaults derived) that runs outside the family's
    /// assumptions, in the order they are printed.
    fn warnings(&self, _scenario: &Scenario) -> Vec<String> {
        Vec::new()
    }

    /// The assumptions of the family's documentation that a scenario (with its defaults
    /// derived) does not meet, each with the properties the docs name at risk; what
    /// [`Plugin::warnings`] warns about, stated so that a stress can tell a failure outside the
    /// assumptions from a bug.
    fn outside(&self, _scenario: &Scenario) -> Vec<Outside> {
        Vec::new()
    }

    /// Draws, for `stress --draw-assumptions`, the family's options its documented
    /// assumptions depend on (an election's failure detector), from `rng`.
    fn stress_assumptions(&self, _rng: &mut Xoshiro256PlusPlus, _scenario: &mut Scenario) {}

    /// What [`Plugin::stress_assumptions`] drew for `scenario`, as the stress summary counts it
    /// ("detector on" / "detector off"); `None` for a family that draws nothing.
    fn drawn(&self, _scenario: &Scenario) -> Option<&'static str> {
        None
    }

    /// Why a batch run of `checked` would do nothing at all: the field to add and what to add.
    fn idle(&self, _checked: &Checked) -> Option<(&'static str, String)> {
        None
    }

    /// The membership sizes the family is stressed with by default.
    fn stress_nodes(&self) -> (u32, u32);

    /// What the algorithm `entry` claims beyond `base` (its registry's FIFO need, nothing
    /// survived).
    fn claims(&self, _entry: &Entry, base: Claims) -> Claims {
        base
    }

    /// Whether `entry` detects crashes by timeouts, so that reliable links over a lossy
    /// network take it outside its assumptions.
    fn times_out(&self, _entry: &Entry) -> bool {
        false
    }

    /// Whether the family's scenarios take multicast orders to check (`stress --check`).
    fn checks_orders(&self) -> bool {
        false
    }

    /// Draws the family's part of a stress scenario: workload, family fields, scripted
    /// events, horizon. Called after the network is drawn and before the faults.
    fn stress_draw(
        &self,
        draw: &Draw,
        rng: &mut Xoshiro256PlusPlus,
        scenario: &mut Scenario,
        events: &mut Vec<EventSpec>,
    );

    /// Runs the algorithm `entry` of the family: finds its type in the registry, makes the
    /// family's harness for it (over reliable links when the scenario asks) and hands both to
    /// [`FamilyRun::run`].
    fn run(&self, entry: &'static Entry, run: FamilyRun<'_>) -> Result<Built, SimError>;

    /// Adjusts a stress scenario once every event is drawn (an election's horizon follows
    /// its last event).
    fn stress_settle(&self, _draw: &Draw, _scenario: &mut Scenario, _events: &[EventSpec]) {}
}
