//! Scratch paths for the tests that write files: each in a fresh directory of its own under the
//! temp dir (`tempfile`), removed with everything in it when the value drops, also when the test
//! fails, so that no run leaves anything behind.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// `name` in a fresh directory named `prefix` and a few random characters; the file or
/// directory itself is not made.
/// It reads as its path (`&Path`, `to_str`, `join`, an argument of `Command::arg` or `fs`).
pub struct Scratch {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

pub fn path(prefix: &str, name: &str) -> Scratch {
    let dir = tempfile::TempDir::with_prefix(prefix).unwrap();
    Scratch {
        path: dir.path().join(name),
        _dir: dir,
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.path.as_os_str()
    }
}
