//! Peer messages the node drops (malformed, out of range, from outside the view, an implausible
//! epoch), logged at a bounded rate: an authenticated peer that sends garbage in a loop must not
//! fill the disk with one line per message. The first [`LINES_PER_WINDOW`] drops of each
//! [`WINDOW`] are logged a line each; the rest are counted and reported in one line when the
//! window ends (at the node's next tick).

use super::Node;
use distsync_core::NodeId;
use std::fmt;
use std::time::Duration;
use tokio::time::Instant;
use tracing::warn;

/// Drops logged a line each per [`WINDOW`].
pub const LINES_PER_WINDOW: u32 = 5;
/// The window of [`LINES_PER_WINDOW`].
pub const WINDOW: Duration = Duration::from_secs(5);

/// The count of a window's drops, and of all since the node started.
#[derive(Default)]
pub(super) struct Dropped {
    /// When the current window began (at its first drop).
    since: Option<Instant>,
    logged: u32,
    suppressed: u64,
    /// Every peer message dropped since the node started.
    pub total: u64,
}

impl Dropped {
    /// Counts a drop at `now`; whether to log it a line.
    fn note(&mut self, now: Instant) -> bool {
        self.total += 1;
        let since = *self.since.get_or_insert(now);
        if now.duration_since(since) >= WINDOW {
            // Not flushed by a tick yet (a paused loop): the old window ends here.
            self.flush(now);
            self.since = Some(now);
        }
        if self.logged < LINES_PER_WINDOW {
            self.logged += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }

    /// Ends the window if it is over, logging the count of the drops it did not log.
    pub(super) fn flush(&mut self, now: Instant) {
        let Some(since) = self.since else { return };
        if now.duration_since(since) < WINDOW {
            return;
        }
        if self.suppressed > 0 {
            warn!(
                "{} more peer messages dropped in the last {:?}",
                self.suppressed, WINDOW
            );
        }
        self.since = None;
        self.logged = 0;
        self.suppressed = 0;
    }
}

impl Node {
    /// Drops a message from peer `from` for `why`, logging it within the rate limit.
    pub(super) fn drop_peer_msg(&mut self, from: NodeId, why: fmt::Arguments<'_>) {
        if self.dropped.note(Instant::now()) {
            warn!(node = %self.id, from = %from, "peer message dropped: {why}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_flood_logs_a_few_lines_per_window_and_counts_the_rest() {
        let mut d = Dropped::default();
        let logged = (0..1000).filter(|_| d.note(Instant::now())).count();
        assert_eq!(logged, LINES_PER_WINDOW as usize);
        assert_eq!(d.suppressed, 1000 - LINES_PER_WINDOW as u64);
        d.flush(Instant::now());
        assert_eq!(
            d.suppressed,
            1000 - LINES_PER_WINDOW as u64,
            "the window is not over"
        );
        tokio::time::advance(WINDOW).await;
        d.flush(Instant::now());
        assert_eq!((d.suppressed, d.logged), (0, 0));
        assert!(d.note(Instant::now()), "a new window logs again");
        assert_eq!(d.total, 1001);
    }
}
