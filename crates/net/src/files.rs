//! Private files written safely, for the cluster directory ([`crate::local`]) and the epoch
//! marks ([`crate::persist`]): a file is opened without following symbolic links
//! (`O_NOFOLLOW`), so a link planted in the directory cannot make the operator write anywhere
//! else; it is written to a new file (mode 0600) renamed into place, so it is never readable by
//! others, not even for an instant, and never half-written; [`sync_files`] makes it durable.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A permission error naming `path` and why it is refused.
pub(crate) fn refuse(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("{}: {why}", path.display()),
    )
}

/// Refuses `path` if it is a symbolic link (whatever it points to).
pub fn no_symlink(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(refuse(
            path,
            "is a symbolic link; refusing to write through it (remove it)",
        )),
        _ => Ok(()),
    }
}

/// A warning when the key file `path` can be read by other users: its mode lets group or
/// others read it and its directory lets them in (a file in a private directory, as `cluster
/// up` makes, is safe whatever its mode). `None` when it is private, or cannot be examined.
pub fn readable_by_others(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let mode = fs::metadata(path).ok()?.mode() & 0o777;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = fs::metadata(parent).ok()?.mode() & 0o777;
    (mode & 0o044 != 0 && dir & 0o011 != 0).then(|| {
        format!(
            "{}: readable by other users (mode {mode:o}, directory {dir:o}), and it holds a key: \
             anyone who reads it holds that key; `chmod 600 {}`",
            path.display(),
            path.display()
        )
    })
}

/// Writes `bytes` to `path` atomically: a new file of mode 0600 (not following links), synced,
/// renamed over `path`, and the directory synced.
pub fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_private_unsynced(path, bytes)?;
    sync_files(&[path.to_path_buf()])
}

/// Like [`write_private`] (a new file of mode 0600 renamed over `path`, so readers see the old
/// or the new contents, never a mix), without waiting for the disk: for files that mean nothing
/// after a reboot (pid files), or that [`sync_files`] makes durable later.
pub fn write_private_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    no_symlink(path)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.tmp.{}", std::process::id()));
    let _ = fs::remove_file(&tmp);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(|e| refuse(&tmp, &e.to_string()))?;
    f.write_all(bytes)?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| refuse(path, &e.to_string()))
}

/// Makes `files` durable: each file, then each directory holding one, fsynced (never following
/// a link).
pub fn sync_files(files: &[PathBuf]) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut dirs: Vec<&Path> = Vec::new();
    for path in files {
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .and_then(|f| f.sync_all())
            .map_err(|e| refuse(path, &format!("cannot sync: {e}")))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    for dir in dirs {
        fs::File::open(dir)
            .and_then(|f| f.sync_all())
            .map_err(|e| refuse(dir, &format!("cannot sync: {e}")))?;
    }
    Ok(())
}
