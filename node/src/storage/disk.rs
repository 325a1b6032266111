//! This node's disk: the free space left on its data directory's file
//! system, and how long its log syncs take.
//!
//! A write that fails half-way for want of space (the WAL, a snapshot file)
//! stops the node: after a failed sync nobody can tell what reached the
//! disk. So the node keeps `--min-free-disk-mb` in reserve and, below it,
//! takes no client writes: as leader it refuses them (`disk_full`, which
//! the clients retry elsewhere) and hands leadership to a member with room
//! when the others can commit without it (`raft::disk_guard`); as follower
//! it refuses the leader's client entries and snapshots, falling behind as
//! a node cut off would, while it still hears its leader and takes the
//! entries Raft itself needs (`raft::intake`), down to half the reserve.
//! Reads go on. Once space is freed it takes entries again and catches up.
//! `status`, `/readyz` and the `handlestore_disk_*` metrics say why the
//! node is degraded.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

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
    /// Once full, what must be free to take writes again (`Reserve`).
    pub resume_free_bytes: u64,
    /// Below the reserve: no client writes are taken.
    pub full: bool,
    /// What a log sync took lately.
    pub sync_time: Duration,
}

impl DiskReport {
    /// Log syncs take long enough to slow every write this node counts in.
    pub fn slow(&self) -> bool {
        self.sync_time >= SLOW_SYNC
    }

    /// Below half the reserve: not even the entries Raft itself needs (a
    /// new leader's first, a membership change) are taken; the other half
    /// is kept for them.
    pub fn exhausted(&self) -> bool {
        self.full && self.free_bytes < self.min_free_bytes / 2
    }

    /// Why the node takes no entries, for an error or `/readyz`.
    pub fn problem(&self) -> Option<String> {
        self.full.then(|| {
            format!(
                "disk full: {} MiB free on the data directory's file system, {} the {} MiB kept in reserve \
                 (--min-free-disk-mb); no writes are taken until {} MiB are free",
                self.free_bytes >> 20,
                if self.free_bytes < self.min_free_bytes {
                    "under"
                } else {
                    "since it fell under"
                },
                self.min_free_bytes >> 20,
                self.resume_free_bytes >> 20
            )
        })
    }
}

/// The space a node keeps free (`--min-free-disk-mb`), and how much more
/// it needs free to take writes again once under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserve {
    pub min_free: u64,
    pub resume_gap: u64,
}

impl Reserve {
    /// `min_free_mb` kept free. Once under it the node stops writing, and
    /// RocksDB then frees on its own what it no longer needs: the log files
    /// of memtables it flushes (up to the memtable budget,
    /// `--write-buffer-mb`) and tables compacted away, the Raft log purged
    /// behind a snapshot among them (measured: 70 MiB within a second with
    /// the default 64 MiB budget, docs/operations.md "A full or slow
    /// disk"). Taking writes again on that alone refilled the disk within
    /// seconds, so the gap is twice the memtable budget, and at least an
    /// eighth of the reserve: only space freed from outside brings the node
    /// back.
    pub fn new(min_free_mb: u64, write_buffer_mb: u64) -> Self {
        Self {
            min_free: min_free_mb << 20,
            resume_gap: (min_free_mb / 8).max(write_buffer_mb * 2) << 20,
        }
    }
}

/// What a log sync took lately: the Raft log's durability tracks it
/// (`raft::log::durability`); the disk's report carries it.
pub trait SyncTime: Send + Sync {
    fn sync_time(&self) -> Duration;
}

pub struct Disk {
    dir: PathBuf,
    reserve: Reserve,
    free: AtomicU64,
    /// Below the reserve; watched by whatever reacts to it.
    full: watch::Sender<bool>,
    syncs: Arc<dyn SyncTime>,
}

impl Disk {
    /// Measures `dir`'s file system once; `watch` keeps measuring.
    pub fn new(dir: PathBuf, reserve: Reserve, syncs: Arc<dyn SyncTime>) -> Arc<Self> {
        let disk = Arc::new(Self {
            dir,
            reserve,
            free: AtomicU64::new(u64::MAX),
            full: watch::Sender::new(false),
            syncs,
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
        let r = crate::observe::metrics::recorders();
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
            min_free_bytes: self.reserve.min_free,
            resume_free_bytes: self.reserve.min_free.saturating_add(self.reserve.resume_gap),
            full: *self.full.borrow(),
            sync_time: self.syncs.sync_time(),
        }
    }

    /// Whether the disk is below its reserve, as it changes.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.full.subscribe()
    }
}

/// Below the reserve; once there, the disk stays full until the reserve's
/// gap more is free, so a node does not flap at the line ([`Reserve::new`]).
fn below(free: u64, reserve: Reserve, was_full: bool) -> bool {
    let line = if was_full {
        reserve.min_free.saturating_add(reserve.resume_gap)
    } else {
        reserve.min_free
    };
    free < line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disk_is_full_below_the_reserve_and_free_again_past_its_gap() {
        let none = Reserve::new(0, 0);
        assert!(!below(100, none, false), "no reserve: never full");
        assert!(!below(0, none, true));
        let r = Reserve {
            min_free: 80,
            resume_gap: 10,
        };
        assert!(below(79, r, false));
        assert!(!below(80, r, false));
        assert!(below(85, r, true), "inside the gap it stays full");
        assert!(!below(90, r, true));
    }

    #[test]
    fn the_gap_is_what_rocksdb_frees_by_itself_at_least_an_eighth_of_the_reserve() {
        let mib = |r: Reserve| (r.min_free >> 20, r.resume_gap >> 20);
        assert_eq!(mib(Reserve::new(256, 64)), (256, 128), "the defaults");
        assert_eq!(mib(Reserve::new(4096, 64)), (4096, 512));
        assert_eq!(mib(Reserve::new(0, 64)), (0, 128));
    }

    #[test]
    fn a_report_names_the_flag_and_the_space_only_when_full() {
        let mut r = DiskReport {
            free_bytes: 3 << 20,
            min_free_bytes: 16 << 20,
            resume_free_bytes: 48 << 20,
            full: false,
            sync_time: Duration::from_millis(600),
        };
        assert_eq!(r.problem(), None);
        assert!(r.slow());
        r.full = true;
        let p = r.problem().expect("full");
        assert!(
            p.contains("3 MiB free") && p.contains("under the 16 MiB") && p.contains("--min-free-disk-mb"),
            "{p}"
        );
        assert!(p.contains("until 48 MiB are free"), "{p}");
        r.free_bytes = 20 << 20;
        let p = r.problem().expect("still full");
        assert!(p.contains("since it fell under the 16 MiB"), "{p}");
    }

    /// A log that has not synced yet.
    pub struct NoSyncs;

    impl SyncTime for NoSyncs {
        fn sync_time(&self) -> Duration {
            Duration::ZERO
        }
    }

    #[tokio::test]
    async fn a_real_directory_is_measured_and_an_impossible_reserve_is_full() {
        let dir = tempfile::tempdir().expect("dir");
        let ok = Disk::new(dir.path().into(), Reserve::new(0, 0), Arc::new(NoSyncs));
        assert!(ok.report().free_bytes > 0 && ok.report().free_bytes < u64::MAX);
        assert_eq!(ok.room(), Ok(()));
        let full = Disk::new(dir.path().into(), Reserve::new(1 << 20, 0), Arc::new(NoSyncs));
        assert!(full.room().is_err());
        assert!(*full.subscribe().borrow());
    }
}
