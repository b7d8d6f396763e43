//! A client's own lease clock on the locks it holds.
//!
//! A node keeps a client's lock until it hears nothing from the client for three heartbeat
//! timeouts, or until a view change that leaves the node out opens — and such a view opens only
//! after the node's own lease on its view has run out (`node::leases`). So a client that knows
//! how long its node's lease runs knows a time before which nobody else can be granted its lock.
//! It asks with every keep-alive (`Renew`, answered by `Lease { ms }`: what is left of the
//! node's lease) and counts that time from when it **sent** the request, never from when the
//! answer arrived, so an answer that waited in a paused node's buffers extends nothing; and it
//! counts only [`DRIFT_NUM`]/[`DRIFT_DEN`] of it, for clocks that run at different rates. When
//! the clock lapses (no answer came in time: the node is paused, cut off or gone, or holds no
//! lease) the client takes the lock for lost: the wrapper stops its command, `lock --stdin`
//! says `lost NAME`, and the Rust guard's `lost()` says why. docs/net.md ("Client-side leases")
//! has the timing argument.

use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// The share of the node's remaining lease a client counts (9/10): clock rates may differ by
/// up to 10 % between the client's machine and the node's before the client could count past
/// the node's lease.
pub const DRIFT_NUM: u32 = 9;
/// See [`DRIFT_NUM`].
pub const DRIFT_DEN: u32 = 10;

/// Renewals sent and not answered yet beyond this many mean the node does not answer; the
/// clock then lapses at its current end and is not extended again.
const MAX_OUTSTANDING: usize = 1024;

/// When the renewals in flight were sent, and until when the lease runs.
#[derive(Debug, Default)]
pub struct LeaseClock {
    sent: VecDeque<Instant>,
    until: Option<Instant>,
    /// The last renewal answered: when it was sent.
    last: Option<Instant>,
    /// Too many renewals went unanswered: no answer extends the clock any more.
    stuck: bool,
}

impl LeaseClock {
    /// A `Renew` goes out now.
    pub fn sent(&mut self, at: Instant) {
        if self.sent.len() >= MAX_OUTSTANDING {
            self.stuck = true;
            self.sent.clear();
        }
        self.sent.push_back(at);
    }

    /// The answer to the oldest renewal in flight (a node answers a connection's requests in
    /// order): the node's lease runs `ms` more milliseconds.
    pub fn answered(&mut self, ms: u64) {
        let Some(at) = self.sent.pop_front() else {
            return;
        };
        if self.stuck || ms == 0 {
            return;
        }
        let counted = Duration::from_millis(ms) * DRIFT_NUM / DRIFT_DEN;
        let until = at + counted;
        self.until = Some(self.until.map_or(until, |u| u.max(until)));
        self.last = Some(at);
    }

    /// Until when the lease runs, if it ever did.
    pub fn until(&self) -> Option<Instant> {
        self.until
    }

    /// Whether the lease has run out (or never ran) at `now`.
    pub fn lapsed(&self, now: Instant) -> bool {
        self.until.is_none_or(|u| now >= u)
    }

    /// Why the lease lapsed, for messages.
    pub fn why(&self, now: Instant) -> String {
        match self.last {
            Some(at) => format!(
                "its lease lapsed: no renewal answered by the node since one sent {} ms ago",
                now.saturating_duration_since(at).as_millis()
            ),
            None => "its lease lapsed: the node answered no renewal with a lease".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_lease_runs_from_the_send_time_and_counts_nine_tenths() {
        let mut c = LeaseClock::default();
        let t0 = Instant::now();
        assert!(c.lapsed(t0), "no lease before an answer");
        c.sent(t0);
        tokio::time::advance(Duration::from_millis(300)).await;
        // The answer waited 300 ms (a paused node): the lease still runs from t0.
        c.answered(1000);
        assert_eq!(c.until(), Some(t0 + Duration::from_millis(900)));
        assert!(!c.lapsed(t0 + Duration::from_millis(899)));
        assert!(c.lapsed(t0 + Duration::from_millis(900)));
        // A node without a lease extends nothing; an earlier end does not shorten it.
        c.sent(Instant::now());
        c.answered(0);
        c.sent(t0);
        c.answered(10);
        assert_eq!(c.until(), Some(t0 + Duration::from_millis(900)));
        assert!(c.why(t0 + Duration::from_secs(2)).contains("2000 ms ago"));
    }
}
