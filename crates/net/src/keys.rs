//! The keys a node holds, and their rotation without a restart (`distsync cluster rekey`).
//!
//! A node starts with the node key and the client key of its cluster file, or with the ones it
//! stored beside its epoch mark (`node-N.keys`) when a rotation replaced them since. An admin
//! sends the new keys and a window (`Rekey`, an admin request over an encrypted link proved with
//! the current node key); the node stores them (synced) before it answers, and from then on:
//! - it accepts a connection proved with the new key of its role, and, until the window has
//!   run out, with the old one too ([`crate::connection::respond_any`]), so clients and nodes
//!   still holding the old files keep working while the new ones are handed out;
//! - after the window, only the new keys: an old client file is refused
//!   ("client does not know the cluster secret");
//! - its own links to the other nodes dial with the old node key while the window runs (the
//!   others may not have the new one yet, and all accept the old one), with the new one after.
//!
//! The node stores the replaced keys and the window's end (on the wall clock) with the new ones,
//! so that a node restarted within the window still accepts the old keys until its end. A second
//! rotation replaces the first's window: the keys it replaces are the first's new ones.
//!
//! Links already up stay up (their keys were agreed at their handshake). A node that was down
//! during the rotation still holds the old keys: after the window the others refuse it until it
//! is given the new cluster file.

use crate::config::{Cluster, MIN_SECRET_LEN};
use distsync_core::NodeId;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::time::Instant;

/// A node's keys, shared by its connection tasks.
pub type KeyRing = Arc<RwLock<Keys>>;

/// The keys a node accepts and dials with.
#[derive(Clone, Debug)]
pub struct Keys {
    node: Vec<u8>,
    client: Vec<u8>,
    /// The keys replaced by the last rotation, and until when they are still accepted.
    previous: Option<(Vec<u8>, Vec<u8>, Instant)>,
}

impl Keys {
    /// The keys of `cluster`'s file.
    pub fn of(cluster: &Cluster) -> Keys {
        Keys {
            node: cluster.secret().to_vec(),
            client: cluster.client_secret().to_vec(),
            previous: None,
        }
    }

    /// A ring holding the keys of `cluster`'s file.
    pub fn ring(cluster: &Cluster) -> KeyRing {
        Arc::new(RwLock::new(Keys::of(cluster)))
    }

    /// The node keys and the client keys accepted now: the current ones, and the previous
    /// ones while their window runs.
    pub fn accepted(&self, now: Instant) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let mut node = vec![self.node.clone()];
        let mut client = vec![self.client.clone()];
        if let Some((n, c, until)) = &self.previous {
            if now < *until {
                node.push(n.clone());
                client.push(c.clone());
            }
        }
        (node, client)
    }

    /// The node key to dial another node with now: the previous one while its window runs
    /// (every node accepts it then), else the current one.
    pub fn dial(&self, now: Instant) -> Vec<u8> {
        match &self.previous {
            Some((n, _, until)) if now < *until => n.clone(),
            _ => self.node.clone(),
        }
    }

    /// Replaces the keys by `node` and `client`, the current ones accepted for `window` more.
    pub fn rotate(&mut self, node: &[u8], client: &[u8], window: Duration) {
        let old = (
            std::mem::replace(&mut self.node, node.to_vec()),
            std::mem::replace(&mut self.client, client.to_vec()),
        );
        self.previous = Some((old.0, old.1, Instant::now() + window));
    }

    /// Accepts `previous`'s keys too until its window (restored from the keys file of a node
    /// restarted while a rotation's window ran).
    pub fn restore(&mut self, previous: Previous) {
        let left = Duration::from_millis(previous.until_ms.saturating_sub(unix_ms()));
        if !left.is_zero() {
            self.previous = Some((
                previous.secret.into_bytes(),
                previous.client_secret.into_bytes(),
                Instant::now() + left,
            ));
        }
    }
}

/// The keys a rotation replaced, as stored, and until when (milliseconds since the Unix epoch,
/// so that a node restarted within the window still accepts them) they are accepted.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Previous {
    secret: String,
    client_secret: String,
    until_ms: u64,
}

impl Keys {
    /// The current keys, to be accepted for `window` from now once replaced (as stored).
    pub fn replaced(&self, window: Duration) -> Previous {
        Previous {
            secret: String::from_utf8_lossy(&self.node).into_owned(),
            client_secret: String::from_utf8_lossy(&self.client).into_owned(),
            until_ms: unix_ms()
                .saturating_add(u64::try_from(window.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

/// The wall clock, in milliseconds since the Unix epoch.
fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The file holding the keys node `id` was last given, in `dir` (beside its epoch mark).
pub fn keys_path(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}.keys"))
}

/// A stored pair of keys.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeysFile {
    secret: String,
    client_secret: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    previous: Option<Previous>,
}

/// Checks a new pair of keys: each at least [`MIN_SECRET_LEN`] characters, and two different
/// keys (a client key equal to the node key would let a client act as a node).
pub fn check(secret: &str, client_secret: &str) -> Result<(), String> {
    if secret.len() < MIN_SECRET_LEN || client_secret.len() < MIN_SECRET_LEN {
        return Err(format!(
            "a key must be at least {MIN_SECRET_LEN} characters"
        ));
    }
    if secret == client_secret {
        return Err("the node key and the client key must differ".into());
    }
    Ok(())
}

/// `cluster` with the keys node `id` stored in its state directory, if it stored any, and the
/// keys they replaced with their window.
pub fn stored(mut cluster: Cluster, id: NodeId) -> Result<(Cluster, Option<Previous>), String> {
    let Some(dir) = cluster.state_dir.clone() else {
        return Ok((cluster, None));
    };
    let path = keys_path(&dir, id);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((cluster, None)),
        Err(e) => return Err(format!("cannot read its keys {}: {e}", path.display())),
    };
    let file: KeysFile = toml::from_str(&text)
        .map_err(|e| format!("{}: not a keys file: {}", path.display(), e.message()))?;
    check(&file.secret, &file.client_secret).map_err(|e| format!("{}: {e}", path.display()))?;
    cluster.file.secret = file.secret;
    cluster.file.client_secret = Some(file.client_secret);
    Ok((cluster, file.previous))
}

/// Stores the keys node `id` was given, and the ones they replace with their window, in `dir`
/// (a private file, synced).
pub fn store(
    dir: &Path,
    id: NodeId,
    secret: &str,
    client_secret: &str,
    previous: Previous,
) -> std::io::Result<()> {
    let text = toml::to_string(&KeysFile {
        secret: secret.to_string(),
        client_secret: client_secret.to_string(),
        previous: Some(previous),
    })
    .map_err(std::io::Error::other)?;
    crate::files::write_private(&keys_path(dir, id), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The old keys are accepted, and dialed with, only while the window runs.
    #[tokio::test(start_paused = true)]
    async fn the_old_keys_hold_for_the_window_only() {
        let mut k = Keys {
            node: b"old node key 0123".to_vec(),
            client: b"old client key 0123".to_vec(),
            previous: None,
        };
        k.rotate(
            b"new node key 0123",
            b"new client key 0123",
            Duration::from_secs(5),
        );
        let now = Instant::now();
        let (node, client) = k.accepted(now);
        assert_eq!(
            node,
            vec![b"new node key 0123".to_vec(), b"old node key 0123".to_vec()]
        );
        assert_eq!(client.len(), 2);
        assert_eq!(k.dial(now), b"old node key 0123");
        let later = now + Duration::from_secs(5);
        let (node, client) = k.accepted(later);
        assert_eq!(node, vec![b"new node key 0123".to_vec()]);
        assert_eq!(client, vec![b"new client key 0123".to_vec()]);
        assert_eq!(k.dial(later), b"new node key 0123");
    }

    /// A node restarted within a rotation's window (its keys file read again) still accepts the
    /// keys the rotation replaced, until the window's end on the wall clock; not after.
    #[tokio::test]
    async fn a_restart_within_the_window_keeps_accepting_the_old_keys() {
        let tmp = tempfile::TempDir::with_prefix("distsync-keys-").unwrap();
        let text = "mutex = \"ricart-agrawala\"\nelection = \"bully\"\n\
                    secret = \"old node key 0123\"\nclient_secret = \"old client key 0123\"\n\
                    [[node]]\nid = 0\naddr = \"127.0.0.1:7000\"\n";
        let mut c = Cluster::from_toml(text, "test.toml").unwrap();
        c.state_dir = Some(tmp.path().to_path_buf());
        let old = Keys::of(&c);
        for (window, kept) in [(Duration::from_secs(60), true), (Duration::ZERO, false)] {
            store(
                tmp.path(),
                NodeId(0),
                "new node key 0123",
                "new client key 0123",
                old.replaced(window),
            )
            .unwrap();
            let (loaded, previous) = stored(c.clone(), NodeId(0)).unwrap();
            assert_eq!(loaded.secret(), b"new node key 0123");
            assert_eq!(loaded.client_secret(), b"new client key 0123");
            let mut k = Keys::of(&loaded);
            k.restore(previous.unwrap());
            let (node, client) = k.accepted(Instant::now());
            assert_eq!(node.contains(&b"old node key 0123".to_vec()), kept);
            assert_eq!(client.contains(&b"old client key 0123".to_vec()), kept);
            assert!(node.contains(&b"new node key 0123".to_vec()));
        }
        assert!(check("short", "new client key 0123").is_err());
        assert!(check("same key 0123456789", "same key 0123456789").is_err());
    }
}
