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

/// Sends `RELOADING=1` and `STATUS=status` (a node about to execute itself again in place: the
/// next image sends `READY=1`), if the service manager asked for notifications.
pub fn notify_reloading(status: &str) {
    notify(&[
        sd_notify::NotifyState::Reloading,
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
    // A copy kept for a restart in place (`prepare_reexec`): the node's own listener closes
    // when it stops, and the image executed next takes the socket again as descriptor 3.
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) on a descriptor we own; the copy is ours until exec.
    let copy = unsafe { libc::fcntl(listener.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 4) };
    if copy >= 0 {
        ACTIVATED_COPY.store(copy, std::sync::atomic::Ordering::SeqCst);
    }
    Ok(Some(listener))
}

/// A copy of the socket the service manager passed, for [`prepare_reexec`] (-1: none).
static ACTIVATED_COPY: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Prepares this process to execute `cmd` in its place (a node restarting itself: same pid):
/// the socket the service manager passed becomes descriptor 3 again with `LISTEN_FDS=1` and
/// `LISTEN_PID` this pid, as systemd passed it; without one, the variables are removed. Call
/// it right before `exec`, once the node has stopped (its own descriptors are closed).
pub fn prepare_reexec(cmd: &mut std::process::Command) -> std::io::Result<()> {
    let copy = ACTIVATED_COPY.load(std::sync::atomic::Ordering::SeqCst);
    cmd.env_remove("LISTEN_FDNAMES");
    if copy < 0 {
        cmd.env_remove("LISTEN_FDS").env_remove("LISTEN_PID");
        return Ok(());
    }
    // SAFETY: dup2 onto descriptor 3 (whatever held it is closed; this process is about to be
    // replaced); the new descriptor is not close-on-exec, so the next image inherits it.
    if unsafe { libc::dup2(copy, 3) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    cmd.env("LISTEN_FDS", "1")
        .env("LISTEN_PID", std::process::id().to_string());
    Ok(())
}
