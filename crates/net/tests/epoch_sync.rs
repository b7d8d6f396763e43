//! A node opens its epoch mark with `EpochStore::open_syncing`: a new mark file is there at once
//! (mark 0, both slots) while its syncs run in a thread, and a raise waits for them, so what it
//! stores is what `open` would have stored.

use distsync_core::NodeId;
use distsync_net::persist::{epoch_path, EpochStore};
use std::fs;

/// A fresh directory, removed when the returned guard drops (also when the test fails).
fn temp_dir(tag: &str) -> tempfile::TempDir {
    tempfile::TempDir::with_prefix(format!("ds-epoch-sync-{tag}-")).unwrap()
}

#[test]
fn a_new_mark_is_there_at_once_and_raises_after_its_sync_are_kept() {
    let tmp = temp_dir("new");
    let dir = tmp.path().to_path_buf();
    let mut s = EpochStore::open_syncing(&dir, NodeId(7)).unwrap();
    assert_eq!(s.stored(), 0);
    // Written before `open_syncing` returns: another reader finds the mark 0, in the
    // fixed-size form (two records, 52 bytes).
    assert_eq!(fs::metadata(epoch_path(&dir, NodeId(7))).unwrap().len(), 52);
    assert_eq!(EpochStore::open(&dir, NodeId(7)).unwrap().stored(), 0);
    s.raise(3 << 10 | 7).unwrap();
    assert_eq!(s.stored(), 3 << 10 | 7);
    assert_eq!(
        EpochStore::open(&dir, NodeId(7)).unwrap().stored(),
        3 << 10 | 7
    );
    // Waiting again, after the raise waited, is immediate and fine.
    s.wait_synced().unwrap();
    s.raise(5 << 10 | 7).unwrap();
    let again = EpochStore::open_syncing(&dir, NodeId(7)).unwrap();
    assert_eq!(again.stored(), 5 << 10 | 7, "an existing mark is read back");
    tmp.close().unwrap();
}

#[test]
fn a_mark_in_the_earlier_form_is_rewritten_and_kept_by_open_syncing_too() {
    let tmp = temp_dir("old");
    let dir = tmp.path().to_path_buf();
    fs::write(epoch_path(&dir, NodeId(2)), "epoch 3074\n").unwrap();
    let mut s = EpochStore::open_syncing(&dir, NodeId(2)).unwrap();
    assert_eq!(s.stored(), 3074);
    assert_eq!(fs::metadata(epoch_path(&dir, NodeId(2))).unwrap().len(), 52);
    s.raise(4098).unwrap();
    assert_eq!(EpochStore::open(&dir, NodeId(2)).unwrap().stored(), 4098);
    tmp.close().unwrap();
}
