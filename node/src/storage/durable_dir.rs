//! Directories that survive a power cut. A new name in a directory is
//! durable only once that directory is synced (POSIX; a journaled file
//! system may lose it between commits). RocksDB syncs the names it makes
//! inside its own directory, and a snapshot is renamed into place and its
//! directory synced; the directories themselves are the node's to make
//! durable. A node whose `db/` vanished at a power cut would start again
//! with no log and no vote, and could vote twice in one term.

use std::fs::{self, File};
use std::io;
use std::path::Path;

/// Syncs directory `dir`: the names made in it are durable.
pub fn sync(dir: &Path) -> io::Result<()> {
    match File::open(dir)?.sync_all() {
        // A file system that cannot sync a directory keeps its names by
        // other means (or cannot keep them at all): nothing to add.
        Err(e) if e.raw_os_error() == Some(nix::libc::EINVAL) => Ok(()),
        r => r,
    }
}

fn parent(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Makes directory `path` and every missing one above it, each durable
/// before the next is made in it. Where `path` was already there, its
/// parent is synced anyway (an earlier start may have lost power before
/// doing so), if it can be: a parent this process may not read is left
/// as it is, with a warning.
pub fn create(path: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut p = path;
    while !p.exists() {
        missing.push(p);
        match p.parent().filter(|q| !q.as_os_str().is_empty()) {
            Some(q) => p = q,
            None => break,
        }
    }
    for dir in missing.iter().rev() {
        match fs::create_dir(dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            _ => sync(parent(dir))?,
        }
    }
    if missing.is_empty()
        && let Err(e) = sync(parent(path))
    {
        tracing::warn!(
            "could not sync {} (the directory above {}): {e}",
            parent(path).display(),
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_every_missing_directory_and_accepts_one_that_is_there() {
        let root = tempfile::tempdir().expect("tempdir");
        let deep = root.path().join("a/b/c");
        create(&deep).expect("create");
        assert!(deep.is_dir());
        create(&deep).expect("again: it is there");
        let file = root.path().join("a/file");
        fs::write(&file, b"x").expect("write");
        let err = create(&file.join("below")).expect_err("below a file");
        assert_eq!(err.raw_os_error(), Some(nix::libc::ENOTDIR), "{err}");
    }
}
