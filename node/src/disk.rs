//! This node's disk: the free space left on its data directory's file
//! system, and how long its log syncs take.
//!
//! A write that fails half-way for want of space (the WAL, a snapshot file)
//! stops the node: after a failed sync nobody can tell what reached the
//! disk. So the node keeps `--min-free-disk-mb` in reserve and, below it,
//! takes no new entries: as leader it refuses writes (`disk_full`, which
//! the clients retry elsewhere) and hands leadership to a member with room
//! (`raft::disk_guard`); as follower it refuses the leader's entries and
//! snapshots, falling behind as a node cut off would, and does not
//! campaign. Reads go on. Once space is freed it takes entries again and
//! catches up. `status`, `/readyz` and the `handlestore_disk_*` metrics say
//! why the node is degraded.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::raft::durability::Durability;

/// How often the free space is measured.
const POLL: Duration = Duration::from_millis(250);

/// A log sync that takes this long on average is a slow disk (etcd warns
/// at a second; its alert, and ours, fire on a p99 over half of one).
pub const SLOW_SYNC: Duration = Duration::from_millis(500);

/// What the disk looks like now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskReport {
    /// Bytes free to this process on the data directory's file system.
    pub free_bytes: u64,
    /// `--min-free-disk-mb`, in bytes (0: no reserve).
    pub min_free_bytes: u64,
    /// Below the reserve: no new entries are taken.
    pub full: bool,
    /// What a log sync took lately.
    pub sync_time: Duration,
}

impl DiskReport {
    /// Log syncs take long enough to slow every write this node counts in.
    pub fn slow(&self) -> bool {
        self.sync_time >= SLOW_SYNC
    }

    /// Why the node takes no entries, for an error or `/readyz`.
    pub fn problem(&self) -> Option<String> {
        self.full.then(|| {
            format!(
                "disk full: {} MiB free on the data directory's file system, under the {} MiB kept in reserve \
                 (--min-free-disk-mb); no new entries are taken until space is freed",
                self.free_bytes >> 20,
                self.min_free_bytes >> 20
            )
        })
    }
}

pub struct Disk {
    dir: PathBuf,
    reserve: u64,
    free: AtomicU64,
    /// Below the reserve; watched by whatever reacts to it.
    full: watch::Sender<bool>,
    durability: Arc<Durability>,
}

impl Disk {
    /// Measures `dir`'s file system once; `watch` keeps measuring.
    pub fn new(dir: PathBuf, reserve_mb: u64, durability: Arc<Durability>) -> Arc<Self> {
        let disk = Arc::new(Self {
            dir,
            reserve: reserve_mb << 20,
            free: AtomicU64::new(u64::MAX),
            full: watch::Sender::new(false),
            durability,
        });
        disk.measure();
        disk
    }

    /// Measures the free space every [`POLL`] while the node runs.
    pub fn watch(self: &Arc<Self>) {
        let disk = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(POLL);
            loop {
                tick.tick().await;
                let Some(disk) = disk.upgrade() else { return };
                disk.measure();
            }
        });
    }

    fn measure(&self) {
        let free = match nix::sys::statvfs::statvfs(&self.dir) {
            Ok(s) => s.blocks_available().saturating_mul(s.fragment_size()),
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), "cannot measure the free disk space: {e}");
                return;
            }
        };
        self.free.store(free, Ordering::Relaxed);
        let r = crate::metrics::recorders();
        r.disk_free_bytes.set(i64::try_from(free).unwrap_or(i64::MAX));
        let was = *self.full.borrow();
        let full = below(free, self.reserve, was);
        if full != was {
            self.full.send_replace(full);
            r.disk_full.set(i64::from(full));
            match self.report().problem() {
                Some(p) => tracing::error!("{p}"),
                None => tracing::warn!(free_mb = free >> 20, "disk space freed: taking entries again"),
            }
        }
    }

    /// Refuses when the disk is below its reserve, saying why.
    pub fn room(&self) -> Result<(), String> {
        match self.report().problem() {
            Some(p) => Err(p),
            None => Ok(()),
        }
    }

    pub fn report(&self) -> DiskReport {
        DiskReport {
            free_bytes: self.free.load(Ordering::Relaxed),
            min_free_bytes: self.reserve,
            full: *self.full.borrow(),
            sync_time: self.durability.sync_time(),
        }
    }

    /// Whether the disk is below its reserve, as it changes.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.full.subscribe()
    }
}

/// Below the reserve; once there, the disk stays full until an eighth of
/// the reserve more is free, so a node does not flap at the line.
fn below(free: u64, reserve: u64, was_full: bool) -> bool {
    let line = if was_full {
        reserve.saturating_add(reserve / 8)
    } else {
        reserve
    };
    free < line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_is_full_below_the_reserve_and_free_again_an_eighth_above_it() {
        assert!(!below(100, 0, false), "no reserve: never full");
        assert!(!below(0, 0, true));
        assert!(below(79, 80, false));
        assert!(!below(80, 80, false));
        assert!(below(85, 80, true), "inside the margin it stays full");
        assert!(!below(90, 80, true));
    }

    #[test]
    fn a_report_names_the_flag_and_the_space_only_when_full() {
        let mut r = DiskReport {
            free_bytes: 3 << 20,
            min_free_bytes: 16 << 20,
            full: false,
            sync_time: Duration::from_millis(600),
        };
        assert_eq!(r.problem(), None);
        assert!(r.slow());
        r.full = true;
        let p = r.problem().expect("full");
        assert!(
            p.contains("3 MiB free") && p.contains("16 MiB") && p.contains("--min-free-disk-mb"),
            "{p}"
        );
    }

    #[tokio::test]
    async fn a_real_directory_is_measured_and_an_impossible_reserve_is_full() {
        let dir = tempfile::tempdir().expect("dir");
        let ok = Disk::new(dir.path().into(), 0, Arc::new(Durability::new(0)));
        assert!(ok.report().free_bytes > 0 && ok.report().free_bytes < u64::MAX);
        assert_eq!(ok.room(), Ok(()));
        let full = Disk::new(dir.path().into(), 1 << 20, Arc::new(Durability::new(0)));
        assert!(full.room().is_err());
        assert!(*full.subscribe().borrow());
    }
}
