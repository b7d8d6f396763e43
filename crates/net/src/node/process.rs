//! What a node asks of, and tells, the process it runs in: the descriptor limit raised at start,
//! and an admin's restart request (`distsync cluster restart`) for `distsync node` to act on once
//! the node has stopped.

use distsync_core::NodeId;
use tracing::debug;

/// Raises the soft limit on open descriptors to the hard one where the system allows, so
/// that connections (bounded per address before they authenticate, `peer`) reach the limit the
/// administrator set rather than the default soft one (often 1,024).
pub(super) fn raise_descriptor_limit(id: NodeId) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 || lim.rlim_cur >= lim.rlim_max {
            return;
        }
        let was = lim.rlim_cur;
        lim.rlim_cur = lim.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
            debug!(node = %id, from = was, to = lim.rlim_max, "descriptor limit raised");
        }
    }
}

/// Set when an admin asked the node that ran in this process to restart (`Shutdown { restart:
/// true }`): once [`run`](super::run) returns, the process is to execute itself again.
pub(super) static RESTART: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether the node that ran in this process stopped because an admin asked it to restart
/// (`distsync cluster restart`): `distsync node` then executes itself again, in place.
pub fn restart_requested() -> bool {
    RESTART.load(std::sync::atomic::Ordering::SeqCst)
}
