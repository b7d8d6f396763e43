//! A node under systemd: readiness and shutdown notifications (`sd_notify(3)`, through the
//! `sd-notify` crate) and socket activation (`sd_listen_fds(3)`, through the `listenfd` crate).
//!
//! - With `NOTIFY_SOCKET` in its environment (a unit of `Type=notify`), a node sends `READY=1`
//!   once it accepts connections and `STOPPING=1` when it begins to shut down, each with a
//!   `STATUS=` line; without it, nothing is sent.
//! - With `LISTEN_FDS` and `LISTEN_PID` naming this process (a `.socket` unit), the node takes
//!   the first passed descriptor, which must be a listening TCP socket on its port of the
//!   cluster file, instead of binding its address itself. systemd then holds the port while the
//!   node restarts, and connections made meanwhile wait in the socket's backlog.
//!
//! The unit files are in `contrib/systemd/`; docs/net.md shows how to install them.

use std::net::TcpListener;

/// Sends `READY=1` and `STATUS=status` to the service manager, if one asked for notifications.
pub fn notify_ready(status: &str) {
    notify(&[
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(status),
    ]);
}

/// Sends `STOPPING=1` and `STATUS=status` to the service manager, if one asked for notifications.
pub fn notify_stopping(status: &str) {
    notify(&[
        sd_notify::NotifyState::Stopping,
        sd_notify::NotifyState::Status(status),
    ]);
}

fn notify(states: &[sd_notify::NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!("cannot notify the service manager (NOTIFY_SOCKET): {e}");
    }
}

/// The listening TCP socket the service manager passed (socket activation), if it passed one
/// to this process. An error says why a passed descriptor cannot be used (not a TCP listening
/// socket, or on another port than `port`, where the node's peers and clients would not find
/// it): the node then refuses to start rather than listen where nobody looks.
pub fn take_activated(port: u16) -> Result<Option<TcpListener>, String> {
    let mut fds = listenfd::ListenFd::from_env();
    if fds.len() == 0 {
        return Ok(None);
    }
    let listener = fds
        .take_tcp_listener(0)
        .map_err(|e| {
            format!(
                "the socket passed by the service manager (LISTEN_FDS) is not a TCP listener: {e}"
            )
        })?
        .ok_or("the socket passed by the service manager (LISTEN_FDS) was taken already")?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("the socket passed by the service manager (LISTEN_FDS): {e}"))?;
    if local.port() != port {
        return Err(format!(
            "the socket passed by the service manager (LISTEN_FDS) listens on {local}, but the \
             cluster file gives this node port {port}: make the .socket unit's ListenStream= \
             that port"
        ));
    }
    Ok(Some(listener))
}
