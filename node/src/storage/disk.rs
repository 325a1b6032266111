//! This node's disk: the free space left on its data directory's file
//! system, and how long its log syncs take.
//!
//! A write that fails half-way for want of space (the WAL, a snapshot file)
//! stops the node: after a failed sync nobody can tell what reached the
//! disk. So the node keeps `--min-free-disk-mb` in reserve and, below it,
//! takes no client writes: as leader it refuses them (`disk_full`, which
//! the clients retry elsewhere) and hands leadership to a member with room
//! when the others can commit without it (`raft::life::disk_guard`); as follower
//! it refuses the leader's client entries and snapshots, falling behind as
//! a node cut off would, while it still hears its leader and takes the
//! entries Raft itself needs (`raft::net::intake`), down to half the reserve.
//! Reads go on. Once space is freed it takes entries again and catches up.
//! `status`, `/readyz` and the `handlestore_disk_*` metrics say why the
//! node is degraded.
//!
//! Some file systems report no size at all: `statfs` says 0 blocks in all
//! and 0 available (LazyFS, FUSE file systems without a `statfs` of their
//! own, some CSI volumes). That is a size unknown, not a full disk: the
//! node takes writes there, with no guard (a write that fails for want of
//! space stops it), and says so once in its log, in `status` and in
//! `handlestore_disk_size_known` ([`measured`] has the rules).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
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
    /// Bytes free to this process on the data directory's file system (0
    /// while its size is unknown).
    pub free_bytes: u64,
    /// `--min-free-disk-mb`, in bytes (0: no reserve).
    pub min_free_bytes: u64,
    /// Once full, what must be free to take writes again (`Reserve`).
    pub resume_free_bytes: u64,
    /// Below the reserve: no client writes are taken.
    pub full: bool,
    /// What a log sync took lately.
    pub sync_time: Duration,
    /// The file system reports no size: its free space is not measured and
    /// the node is never full on its account ([`measured`]).
    pub size_unknown: bool,
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

/// What a file system says of its space (`statvfs`), in its own units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Statfs {
    pub total_blocks: u64,
    pub available_blocks: u64,
    pub fragment_size: u64,
    pub block_size: u64,
}

impl Statfs {
    fn of(s: &nix::sys::statvfs::Statvfs) -> Self {
        Self {
            total_blocks: s.blocks(),
            available_blocks: s.blocks_available(),
            fragment_size: s.fragment_size(),
            block_size: s.block_size(),
        }
    }
}

/// The bytes free to this process that `s` measures, or `None` when the
/// file system reports no size: guard on what can be measured.
///
/// - A size (total blocks) reported: the available blocks are the free
///   space, 0 among them (an ordinary full disk reports its size and none
///   available).
/// - No size but some blocks available: those are the free space (an odd
///   report, but all there is to guard on; a wrong one can only make the
///   node refuse writes, saying how much it found free).
/// - Neither (LazyFS, a FUSE file system without a `statfs` of its own,
///   some CSI volumes), or no block size: unknown, never full; unless the
///   file system reported its space before (`reported_before`), when it is
///   trusted with a zero: it is out of space.
pub fn measured(s: Statfs, reported_before: bool) -> Option<u64> {
    // glibc gives the block size where a file system reports no fragment
    // size; a raw 0 from elsewhere is taken the same way.
    let unit = if s.fragment_size > 0 {
        s.fragment_size
    } else {
        s.block_size
    };
    let sizeless = (s.total_blocks == 0 && s.available_blocks == 0) || unit == 0;
    if sizeless && !reported_before {
        return None;
    }
    Some(s.available_blocks.saturating_mul(unit))
}

/// Whether the data directory's file system reports its size (`Disk::size`).
const NOT_MEASURED: u8 = 0;
const SIZE_UNKNOWN: u8 = 1;
const SIZE_KNOWN: u8 = 2;

/// What a log sync took lately: the Raft log's durability tracks it
/// (`raft::log::durability`); the disk's report carries it.
pub trait SyncTime: Send + Sync {
    fn sync_time(&self) -> Duration;
}

pub struct Disk {
    dir: PathBuf,
    reserve: Reserve,
    free: AtomicU64,
    /// `NOT_MEASURED`, then `SIZE_UNKNOWN` or `SIZE_KNOWN`; once known, it
    /// stays known ([`measured`]'s `reported_before`).
    size: AtomicU8,
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
            size: AtomicU8::new(NOT_MEASURED),
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
        let s = match nix::sys::statvfs::statvfs(&self.dir) {
            Ok(s) => Statfs::of(&s),
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), "cannot measure the free disk space: {e}");
                return;
            }
        };
        self.update(s);
    }

    /// Takes the file system's report `s`.
    fn update(&self, s: Statfs) {
        let r = crate::observe::metrics::recorders();
        let was = self.size.load(Ordering::Relaxed);
        let Some(free) = measured(s, was == SIZE_KNOWN) else {
            if was == NOT_MEASURED {
                self.size.store(SIZE_UNKNOWN, Ordering::Relaxed);
                self.free.store(0, Ordering::Relaxed);
                r.disk_free_bytes.set(f64::NAN);
                r.disk_size_known.set(0);
                tracing::warn!(
                    dir = %self.dir.display(),
                    "the data directory's file system reports no size (statfs: 0 blocks in all, none available, \
                     as LazyFS, some FUSE and some CSI volumes do): its free space cannot be measured, so the \
                     disk-full guard (--min-free-disk-mb) cannot work here and a write that fails for want of \
                     space stops this node; watch the volume's space by other means"
                );
            }
            return;
        };
        if was != SIZE_KNOWN {
            self.size.store(SIZE_KNOWN, Ordering::Relaxed);
            r.disk_size_known.set(1);
            if was == SIZE_UNKNOWN {
                tracing::info!(
                    free_mb = free >> 20,
                    "the data directory's file system reports its size now: the disk-full guard works"
                );
            }
        }
        self.free.store(free, Ordering::Relaxed);
        r.disk_free_bytes.set(free as f64);
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
            size_unknown: self.size.load(Ordering::Relaxed) == SIZE_UNKNOWN,
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
            size_unknown: false,
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

    fn statfs(total_blocks: u64, available_blocks: u64) -> Statfs {
        Statfs {
            total_blocks,
            available_blocks,
            fragment_size: 4096,
            block_size: 4096,
        }
    }

    #[test]
    fn a_file_system_that_reports_no_size_is_unknown_not_full() {
        // LazyFS, or a FUSE file system without a statfs of its own (what
        // libfuse answers then: all zero but the block size).
        let fuse = Statfs {
            total_blocks: 0,
            available_blocks: 0,
            fragment_size: 0,
            block_size: 512,
        };
        assert_eq!(measured(fuse, false), None);
        assert_eq!(measured(statfs(0, 0), false), None);
        assert_eq!(measured(statfs(100, 10), false), Some(10 * 4096));
        assert_eq!(measured(statfs(100, 0), false), Some(0), "an ordinary full disk");
        assert_eq!(
            measured(statfs(0, 10), false),
            Some(10 * 4096),
            "no size, but space available: guarded on"
        );
        let no_unit = Statfs {
            fragment_size: 0,
            block_size: 0,
            ..statfs(100, 10)
        };
        assert_eq!(measured(no_unit, false), None);
        let bsize_only = Statfs {
            fragment_size: 0,
            ..statfs(100, 10)
        };
        assert_eq!(measured(bsize_only, false), Some(10 * 4096));
        // Once the file system reported its space, a zero is a zero.
        assert_eq!(measured(statfs(0, 0), true), Some(0));
        assert_eq!(measured(fuse, true), Some(0));
    }

    #[tokio::test]
    async fn a_node_on_a_sizeless_file_system_takes_writes_and_says_the_size_is_unknown() {
        let dir = tempfile::tempdir().expect("dir");
        let disk = Disk::new(dir.path().into(), Reserve::new(64, 64), Arc::new(NoSyncs));
        disk.size.store(NOT_MEASURED, Ordering::Relaxed);
        disk.update(statfs(0, 0));
        let r = disk.report();
        assert!(r.size_unknown && !r.full && !r.exhausted(), "{r:?}");
        assert_eq!((r.free_bytes, r.problem()), (0, None));
        assert_eq!(disk.room(), Ok(()));
        disk.update(statfs(0, 0));
        assert!(disk.report().size_unknown, "still unknown");
        // It reports a size, then none again: out of space, not unknown.
        disk.update(statfs(1 << 20, 1 << 20));
        assert!(!disk.report().size_unknown && disk.room().is_ok());
        disk.update(statfs(0, 0));
        let r = disk.report();
        assert!(!r.size_unknown && r.full && r.exhausted(), "{r:?}");
        assert!(disk.room().is_err());
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
