//! `powercut_fs`: a FUSE file system that loses power, for the power-loss
//! tests (docs/chaos.md, "Power loss"). The model is LazyFS's (the file
//! system Jepsen uses), written again here on the `fuser` crate because
//! LazyFS ships in no package registry this project builds from.
//!
//! - It passes through to a backing directory. Written file data stays in
//!   this process's memory (whole 4 KiB pages per file, with the file's
//!   size as the application sees it) until the application calls `fsync`
//!   or `fdatasync` on that file: then the file's pages are written to the
//!   backing file, which is synced. Closing a file makes nothing durable.
//!   Reads and `stat` see the cached data over the backing file.
//! - A change to a directory (create, mkdir, rename, link, unlink, rmdir,
//!   symlink) is done at once, but a cut undoes it unless the application
//!   synced the directory since (`fsync` of the directory; for a rename,
//!   of either one): the missing directory fsync is caught (`journal`),
//!   where LazyFS keeps every such change. Mounted with
//!   `--journaled-names` ([`Names::Journaled`]), a sync of anything makes
//!   every name change before it durable, as ext4's and XFS' journals do. Other metadata passes through
//!   and is kept: chmod, truncation (ftruncate and `O_TRUNC`) and
//!   fallocate (plain or `FALLOC_FL_KEEP_SIZE`; other modes are refused
//!   with EOPNOTSUPP).
//! - `SIGUSR1` cuts the power: every unsynced write is dropped, and every
//!   call fails with EIO until the file system is unmounted. `SIGUSR2`
//!   arms a cut at the next write to a table (`*.sst`), manifest
//!   (`MANIFEST-*`) or snapshot (`*.snap`) file, so that the power goes
//!   while one is half written, not only the WAL. The backing
//!   directory then holds exactly what was synced; mounting it again (a
//!   new process, with nothing cached in it or in the kernel) is the
//!   machine starting again.
//! - The kernel keeps no answer (entry and attribute timeouts are zero, no
//!   writeback cache), so every write reaches this process at once.
//! - `statfs` reports the backing file system's space; mounted with
//!   `--no-size` ([`Size::Unknown`]) it reports none at all, as LazyFS and
//!   FUSE file systems without a `statfs` of their own do.
//!
//! The harness side (mounting, cutting, unmounting) is [`mount`].

mod attr;
mod cache;
mod data;
mod dirs;
mod fs;
mod handles;
mod journal;
pub mod mount;
mod names;
mod nodes;
mod pages;
mod power;

use std::path::Path;
use std::sync::Arc;

pub use journal::Names;
pub use power::{ARMED, CUT_DONE};

/// What the file system says of its size (`statfs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Size {
    /// The backing directory's file system's blocks and files.
    #[default]
    Backing,
    /// None at all: every count 0 (blocks, free, available, files), only a
    /// block size of 512 and names of up to 255 bytes, as libfuse answers
    /// for a file system with no `statfs` of its own (LazyFS).
    Unknown,
}

/// Mounts the file system over `backing` at `mountpoint` and serves it
/// until it is unmounted; `names` says when a name change is durable,
/// `size` what `statfs` reports. Call it before starting any thread (it blocks
/// `SIGUSR1` and `SIGUSR2` for every thread but its own waiter).
pub fn serve(backing: &Path, mountpoint: &Path, names: Names, size: Size) -> std::io::Result<()> {
    let cache = Arc::new(cache::Cache::new(journal::Journal::open(backing, names)?));
    power::cut_on_signals(cache.clone())?;
    let fs = fs::PowercutFs::new(backing, cache, size)?;
    let mut config = fuser::Config::default();
    config.mount_options = vec![
        fuser::MountOption::FSName(format!("powercut:{}", backing.display())),
        fuser::MountOption::Subtype("powercut".into()),
        fuser::MountOption::DefaultPermissions,
    ];
    config.n_threads = Some(4);
    fuser::mount(fs, mountpoint, &config)
}
