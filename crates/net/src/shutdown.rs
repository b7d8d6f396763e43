//! Clean stop: a node stops on SIGTERM or ctrl-c (SIGINT); its connections close, so its peers
//! see it leave and its clients' locks are released by the view change that follows.

use tokio::signal::unix::{signal, SignalKind};

/// Completes when the process receives SIGTERM or SIGINT.
pub async fn signalled() {
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
            }
        }
        // No signal handling available: only ctrl-c through tokio's portable path.
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
