//! What a node keeps on disk so that fencing tokens never go backwards, whatever restarts: the
//! highest view epoch it has seen (its *epoch high-water mark*), in `DIR/node-N.epoch` next to
//! the cluster file.
//!
//! A token is `max(highest token seen, epoch << 32) + 1`, so every token of a view is above
//! every token of an earlier view. After a restart a node has forgotten the tokens, but not the
//! mark: the first view it helps form is numbered above it, and a node whose mark is higher
//! answers a Prepare with `Stale`, so the leader starts again above that. The mark is written
//! and fsynced (file, then directory) before the node answers a Prepare or commits a view, so
//! before any grant of that view can happen anywhere.
//!
//! The file is written as a new file (mode 0600, `O_NOFOLLOW`, `O_EXCL`) then renamed over the
//! old one: a crash leaves either the old or the new mark, never a torn one.

use distsync_core::NodeId;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The file holding node `id`'s epoch high-water mark in `dir`.
pub fn epoch_path(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}.epoch"))
}

/// A node's epoch high-water mark on disk.
#[derive(Debug)]
pub struct EpochStore {
    path: PathBuf,
    dir: PathBuf,
    stored: u32,
}

impl EpochStore {
    /// Opens (reads) node `id`'s mark in `dir`; 0 when there is none yet. A file that exists
    /// but does not hold a mark is an error naming it (the node must not start with a mark it
    /// cannot trust).
    pub fn open(dir: &Path, id: NodeId) -> io::Result<EpochStore> {
        let path = epoch_path(dir, id);
        let stored = match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
            Ok(m) if m.file_type().is_symlink() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "{}: is a symbolic link; refusing to follow it",
                        path.display()
                    ),
                ))
            }
            Ok(_) => {
                let text = fs::read_to_string(&path)?;
                text.trim()
                    .strip_prefix("epoch ")
                    .and_then(|n| n.parse::<u32>().ok())
                    .ok_or_else(|| {
                        io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "{}: expected `epoch N`, found {:?}",
                                path.display(),
                                text.trim()
                            ),
                        )
                    })?
            }
        };
        Ok(EpochStore {
            path,
            dir: dir.to_path_buf(),
            stored,
        })
    }

    /// The mark as last stored.
    pub fn stored(&self) -> u32 {
        self.stored
    }

    /// Raises the mark to `epoch` (no-op if it is not higher), durably: written to a new file,
    /// fsynced, renamed over the old one, and the directory fsynced.
    pub fn raise(&mut self, epoch: u32) -> io::Result<()> {
        if epoch <= self.stored {
            return Ok(());
        }
        let tmp = self
            .path
            .with_extension(format!("epoch.tmp.{}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(format!("epoch {epoch}\n").as_bytes())?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, &self.path)?;
        fs::File::open(&self.dir)?.sync_all()?;
        self.stored = epoch;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_survives_reopening_and_only_rises() {
        let dir = std::env::temp_dir().join(format!("distsync-persist-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let mut s = EpochStore::open(&dir, NodeId(3)).unwrap();
        assert_eq!(s.stored(), 0);
        s.raise(5 << 10 | 3).unwrap();
        s.raise(2 << 10).unwrap();
        let s = EpochStore::open(&dir, NodeId(3)).unwrap();
        assert_eq!(s.stored(), 5 << 10 | 3);
        fs::write(epoch_path(&dir, NodeId(4)), "garbage").unwrap();
        let e = EpochStore::open(&dir, NodeId(4)).unwrap_err().to_string();
        assert!(e.contains("node-4.epoch") && e.contains("epoch N"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
