//! What a node keeps on disk so that fencing tokens never go backwards, whatever restarts: the
//! highest view epoch it has seen (its *epoch high-water mark*), in `DIR/node-N.epoch` next to
//! the cluster file.
//!
//! A token is `max(highest token seen, epoch << 32) + 1`, so every token of a view is above
//! every token of an earlier view. After a restart a node has forgotten the tokens, but not the
//! mark: the first view it helps form is numbered above it, and a node whose mark is higher
//! answers a Prepare with `Stale`, so the leader starts again above that. The mark is written
//! and synced before the node answers a Prepare or commits a view, so before any grant of that
//! view can happen anywhere.
//!
//! The file holds two slots, each one fixed-size record `epoch NNNNNNNNNN CCCCCCCC` and a
//! newline (the mark in ten digits, then a checksum of what precedes it in hex); the mark is the
//! higher of the records whose checksum matches. [`EpochStore::open`] makes sure the file exists
//! in that form and is durable (written as a new file, mode 0600, `O_NOFOLLOW`, `O_EXCL`,
//! synced, renamed into place, the directory synced); from then on a raise overwrites the slot
//! that does not hold the mark, in place, and syncs the data only (`fdatasync`): the file keeps
//! its size and blocks, so no metadata has to reach the disk, and the sync does not wait for
//! the file system's journal (and, on a busy disk, for what other programs wrote: 1-113 ms
//! here, once 1.96 s, against 0.2-15 ms). A crash in the middle of a raise can tear only the
//! slot being written: its checksum rejects it and the other slot still holds the mark before
//! the raise, which is the highest the node acted on (a raise is acted on only after its
//! sync). A node opens its mark with [`EpochStore::open_syncing`]: a new file's syncs run beside
//! the node's start, and its first raise waits for them. A file with no valid record is an error naming it: the node never starts with a mark
//! lower than one it acted on. A file in the earlier form (`epoch N`) is read and rewritten.

use distsync_core::NodeId;
use sha2::{Digest, Sha256};
use std::fs;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// For tests of slow disks: every sync of a mark waits this many milliseconds first (unset in
/// production). The node's loop waits for the sync, as it would for a slow disk.
pub const FSYNC_DELAY_ENV: &str = "DISTSYNC_TEST_FSYNC_DELAY_MS";

/// For tests of full disks (unset in production): `ID` makes node ID fail every write of its
/// mark with `ENOSPC`, as a full disk would; `ID:PATH` only while the file PATH exists, so that
/// a test fills the disk by making PATH and frees it by removing PATH. (A real full disk cannot
/// stand in here on every file system: the mark's slots are overwritten in place, which needs
/// no new block on ext4 or tmpfs, but does on a copy-on-write one such as btrfs or ZFS.)
pub const FULL_DISK_ENV: &str = "DISTSYNC_TEST_FULL_DISK_NODE";

/// When [`FULL_DISK_ENV`] makes node `id`'s disk full: always, or while a file exists.
#[derive(Debug)]
enum Full {
    Always,
    While(PathBuf),
}

impl Full {
    /// What [`FULL_DISK_ENV`] says of node `id`.
    fn of(id: NodeId) -> Option<Full> {
        let v = std::env::var(FULL_DISK_ENV).ok()?;
        let (node, path) = match v.trim().split_once(':') {
            Some((node, path)) => (node, Some(PathBuf::from(path))),
            None => (v.trim(), None),
        };
        (node == id.0.to_string()).then(|| path.map_or(Full::Always, Full::While))
    }

    /// Whether the disk is full now.
    fn now(&self) -> bool {
        match self {
            Full::Always => true,
            Full::While(path) => path.exists(),
        }
    }
}

/// The delay [`FSYNC_DELAY_ENV`] asks for, if any.
fn fsync_delay() -> Option<Duration> {
    let ms = std::env::var(FSYNC_DELAY_ENV).ok()?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ms))
}

/// The file holding node `id`'s epoch high-water mark in `dir`.
pub fn epoch_path(dir: &Path, id: NodeId) -> PathBuf {
    dir.join(format!("node-{id}.epoch"))
}

/// The record for mark `epoch`: `epoch NNNNNNNNNN CCCCCCCC\n`, always 26 bytes.
fn record(epoch: u32) -> String {
    let body = format!("epoch {epoch:010}");
    format!("{body} {}\n", checksum(&body))
}

/// The first four bytes of the SHA-256 of `body`, in hex.
fn checksum(body: &str) -> String {
    Sha256::digest(body.as_bytes())[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The mark in a file's text, and the slot holding it (`None` for a file in the earlier
/// `epoch N` form); `None` if the text holds no mark.
fn parse(bytes: &[u8]) -> Option<(u32, Option<usize>)> {
    if bytes.len() == SLOTS * RECORD_LEN {
        // The higher valid slot: a torn one fails its checksum.
        return (0..SLOTS)
            .filter_map(|k| {
                let slot = std::str::from_utf8(&bytes[k * RECORD_LEN..(k + 1) * RECORD_LEN]);
                parse_record(slot.ok()?).map(|n| (n, Some(k)))
            })
            .max();
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let n = text.trim().strip_prefix("epoch ")?.parse::<u32>().ok()?;
    Some((n, None))
}

/// The mark in one slot's record, if its checksum matches.
fn parse_record(record: &str) -> Option<u32> {
    let (body, sum) = record.strip_suffix('\n')?.rsplit_once(' ')?;
    let n = body.strip_prefix("epoch ")?.parse::<u32>().ok()?;
    (checksum(body) == sum).then_some(n)
}

/// The length of a [`record`].
const RECORD_LEN: usize = 26;

/// Records in the file: a raise writes the one that does not hold the mark.
const SLOTS: usize = 2;

/// A node's epoch high-water mark on disk.
#[derive(Debug)]
pub struct EpochStore {
    path: PathBuf,
    file: fs::File,
    stored: u32,
    /// The slot holding `stored`.
    slot: usize,
    /// The sync of a file just written, still running ([`EpochStore::open_syncing`]).
    syncing: Option<std::thread::JoinHandle<io::Result<()>>>,
    /// Injected: every sync waits this long first ([`FSYNC_DELAY_ENV`]).
    delay: Option<Duration>,
    /// Injected: writes fail with `ENOSPC` ([`FULL_DISK_ENV`]).
    full: Option<Full>,
}

impl EpochStore {
    /// Opens node `id`'s mark in `dir` (0 when there is none yet), making sure the file holds it
    /// in the fixed-size form and is durable. A file that exists but does not hold a mark is an
    /// error naming it (the node must not start with a mark it cannot trust).
    pub fn open(dir: &Path, id: NodeId) -> io::Result<EpochStore> {
        let mut store = Self::open_syncing(dir, id)?;
        store.wait_synced()?;
        Ok(store)
    }

    /// [`EpochStore::open`], without waiting for the disk when it writes the file (a new node,
    /// or a mark in the earlier form): that sync runs in a thread, and the first
    /// [`EpochStore::raise`] waits for it, so every mark a node acts on is durable as with
    /// `open`. A node starts at once instead of after two syncs (file and directory: 2 to 10 ms
    /// each, with ten nodes syncing at once), and the sync is long done when the node first
    /// raises its mark, at its first view change. A sync that fails fails that raise.
    pub fn open_syncing(dir: &Path, id: NodeId) -> io::Result<EpochStore> {
        let path = epoch_path(dir, id);
        let invalid = |why: String| io::Error::new(io::ErrorKind::InvalidData, why);
        let (stored, slot) = match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => (0, None),
            Err(e) => return Err(e),
            Ok(m) if m.file_type().is_symlink() => {
                return Err(invalid(format!(
                    "{}: is a symbolic link; refusing to follow it",
                    path.display()
                )))
            }
            Ok(_) => {
                let bytes = fs::read(&path)?;
                parse(&bytes).ok_or_else(|| {
                    invalid(format!(
                        "{}: expected `epoch N`, or two records of it with checksums of which one at least matches, found {:?}",
                        path.display(),
                        String::from_utf8_lossy(&bytes).trim()
                    ))
                })?
            }
        };
        if slot.is_none() {
            // Missing, or in the earlier form: write both slots as a new file, durably, so
            // that every raise after this one overwrites one of them in place.
            crate::files::write_private_unsynced(&path, record(stored).repeat(SLOTS).as_bytes())?;
        }
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)?;
        let syncing = slot.is_none().then(|| {
            let path = path.clone();
            std::thread::spawn(move || crate::files::sync_files(&[path]))
        });
        let full = Full::of(id);
        Ok(EpochStore {
            path,
            file,
            stored,
            slot: slot.unwrap_or(0),
            syncing,
            delay: fsync_delay(),
            full,
        })
    }

    /// Waits until the file [`EpochStore::open_syncing`] wrote is durable (at once if it wrote
    /// none, or this was waited for already).
    pub fn wait_synced(&mut self) -> io::Result<()> {
        match self.syncing.take() {
            None => Ok(()),
            Some(sync) => sync
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the thread syncing the mark panicked")))
                .map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("{}: cannot make it durable: {e}", self.path.display()),
                    )
                }),
        }
    }

    /// The mark as last stored.
    pub fn stored(&self) -> u32 {
        self.stored
    }

    /// The file the mark is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Raises the mark to `epoch` (no-op if it is not higher), durably: the slot not holding
    /// the mark overwritten in place and its data synced.
    pub fn raise(&mut self, epoch: u32) -> io::Result<()> {
        if epoch <= self.stored {
            return Ok(());
        }
        self.wait_synced()?;
        let slot = (self.slot + 1) % SLOTS;
        self.write_slot(slot, epoch)?;
        self.stored = epoch;
        self.slot = slot;
        Ok(())
    }

    /// Lowers the mark to `epoch` (no-op if it is not lower), durably: both slots rewritten, the
    /// one not holding the mark first, so that a crash in between leaves the old mark (the
    /// higher slot wins), never a torn lower one. Only for a mark known to be forged or corrupt
    /// (see `node::epochs`): a mark otherwise only rises.
    pub fn lower(&mut self, epoch: u32) -> io::Result<()> {
        if epoch >= self.stored {
            return Ok(());
        }
        self.wait_synced()?;
        for slot in [(self.slot + 1) % SLOTS, self.slot] {
            self.write_slot(slot, epoch)?;
        }
        self.stored = epoch;
        Ok(())
    }

    /// Writes mark `epoch` in slot `slot` and syncs its data; an error names the file.
    fn write_slot(&mut self, slot: usize, epoch: u32) -> io::Result<()> {
        let named = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!(
                    "{}: cannot write epoch mark {epoch}: {e}",
                    self.path.display()
                ),
            )
        };
        if self.full.as_ref().is_some_and(Full::now) {
            return Err(named(io::Error::from_raw_os_error(libc::ENOSPC)));
        }
        let at = (slot * RECORD_LEN) as u64;
        self.file
            .write_all_at(record(epoch).as_bytes(), at)
            .map_err(named)?;
        if let Some(delay) = self.delay {
            std::thread::sleep(delay);
        }
        self.file.sync_data().map_err(named)
    }

    /// Makes every later write fail as on a full disk (`ENOSPC`), for the tests of what a node
    /// does when it cannot store its mark: the mark's file keeps what it held.
    #[cfg(test)]
    pub(crate) fn fail_writes(&mut self) {
        self.wait_synced().expect("the mark's file is durable");
        self.file = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full opens");
    }

    /// Undoes [`EpochStore::fail_writes`]: space has returned.
    #[cfg(test)]
    pub(crate) fn heal_writes(&mut self) {
        self.file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .expect("the mark's file opens");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mark_survives_reopening_and_only_rises() {
        let tmp = tempfile::TempDir::with_prefix("distsync-persist-").unwrap();
        let dir = tmp.path().to_path_buf();
        let mut s = EpochStore::open(&dir, NodeId(3)).unwrap();
        assert_eq!(s.stored(), 0);
        s.raise(5 << 10 | 3).unwrap();
        s.raise(2 << 10).unwrap();
        let s = EpochStore::open(&dir, NodeId(3)).unwrap();
        assert_eq!(s.stored(), 5 << 10 | 3);
        fs::write(epoch_path(&dir, NodeId(4)), "garbage").unwrap();
        let e = EpochStore::open(&dir, NodeId(4)).unwrap_err().to_string();
        assert!(e.contains("node-4.epoch") && e.contains("epoch N"), "{e}");
        tmp.close().unwrap();
    }

    /// A mark known to be bad is lowered in both slots, so reopening reads the lower one; a
    /// raise after it works as before.
    #[test]
    fn a_lowered_mark_is_what_reopening_reads() {
        let tmp = tempfile::TempDir::with_prefix("distsync-persist-").unwrap();
        let dir = tmp.path().to_path_buf();
        let mut s = EpochStore::open(&dir, NodeId(1)).unwrap();
        s.raise(3 << 10).unwrap();
        s.raise(u32::MAX).unwrap();
        s.lower(7 << 10 | 2).unwrap();
        assert_eq!(s.stored(), 7 << 10 | 2);
        let mut s = EpochStore::open(&dir, NodeId(1)).unwrap();
        assert_eq!(s.stored(), 7 << 10 | 2);
        s.raise(8 << 10 | 2).unwrap();
        assert_eq!(
            EpochStore::open(&dir, NodeId(1)).unwrap().stored(),
            8 << 10 | 2
        );
        tmp.close().unwrap();
    }

    /// Raises overwrite one slot in place, the one not holding the mark, by turns (no new
    /// file, so no metadata to sync).
    #[test]
    fn raises_overwrite_the_other_slot_in_place() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::TempDir::with_prefix("distsync-persist-in-").unwrap();
        let dir = tmp.path().to_path_buf();
        let path = epoch_path(&dir, NodeId(1));
        let mut s = EpochStore::open(&dir, NodeId(1)).unwrap();
        let inode = fs::metadata(&path).unwrap().ino();
        assert_eq!(fs::read_to_string(&path).unwrap(), record(0).repeat(2));
        let mut slots = [record(0), record(0)];
        for (i, e) in [1033, 2057, u32::MAX].into_iter().enumerate() {
            s.raise(e).unwrap();
            slots[(i + 1) % 2] = record(e);
            assert_eq!(fs::read_to_string(&path).unwrap(), slots.concat());
            assert_eq!(fs::metadata(&path).unwrap().ino(), inode, "the same file");
            assert_eq!(EpochStore::open(&dir, NodeId(1)).unwrap().stored(), e);
        }
        tmp.close().unwrap();
    }

    /// A mark in the earlier form (`epoch N`) is kept and rewritten in the fixed-size form.
    #[test]
    fn a_mark_in_the_earlier_form_is_read_and_rewritten() {
        let tmp = tempfile::TempDir::with_prefix("distsync-persist-old-").unwrap();
        let dir = tmp.path().to_path_buf();
        let path = epoch_path(&dir, NodeId(2));
        fs::write(&path, "epoch 3074\n").unwrap();
        let mut s = EpochStore::open(&dir, NodeId(2)).unwrap();
        assert_eq!(s.stored(), 3074);
        assert_eq!(fs::read_to_string(&path).unwrap(), record(3074).repeat(2));
        s.raise(4098).unwrap();
        assert_eq!(EpochStore::open(&dir, NodeId(2)).unwrap().stored(), 4098);
        tmp.close().unwrap();
    }

    /// A raise torn by a crash (the slot it wrote part old, part new: here 1998 and 2000 mixed
    /// into 1000) fails its checksum, and the mark is the other slot's, the last one acted on;
    /// the next raise writes the torn slot again. With both slots torn the node refuses to
    /// start rather than start with a lower mark.
    #[test]
    fn a_torn_slot_leaves_the_mark_before_the_raise() {
        let tmp = tempfile::TempDir::with_prefix("distsync-persist-torn-").unwrap();
        let dir = tmp.path().to_path_buf();
        let path = epoch_path(&dir, NodeId(5));
        let (old, new) = (record(1998), record(2000));
        let torn = format!("{}{}", &old[..13], &new[13..]);
        assert!(torn.starts_with("epoch 0000001000 "), "{torn}");
        fs::write(&path, format!("{}{torn}", record(1999))).unwrap();
        let mut s = EpochStore::open(&dir, NodeId(5)).unwrap();
        assert_eq!(s.stored(), 1999);
        s.raise(2000).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{}{}", record(1999), record(2000))
        );
        assert_eq!(EpochStore::open(&dir, NodeId(5)).unwrap().stored(), 2000);
        fs::write(&path, format!("{torn}{torn}")).unwrap();
        let e = EpochStore::open(&dir, NodeId(5)).unwrap_err().to_string();
        assert!(e.contains("node-5.epoch") && e.contains("checksum"), "{e}");
        fs::write(&path, [0xff_u8; 2 * RECORD_LEN]).unwrap();
        let e = EpochStore::open(&dir, NodeId(5)).unwrap_err().to_string();
        assert!(e.contains("node-5.epoch") && e.contains("checksum"), "{e}");
        tmp.close().unwrap();
    }
}
