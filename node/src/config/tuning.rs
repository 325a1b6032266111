//! Every tunable of a node, once: the flag of `handlestore node` is the
//! field (`--write-timeout` is `write_timeout`), its default is one
//! constant of [`defaults`], used by the flag and by `Tuning::default()`
//! alike, and [`Tuning::validate`] is the one place that says which values
//! are refused. docs/operations.md's flag table is checked against the
//! command's own arguments (`cli::node` tests).

use std::time::Duration;

/// The default of each flag.
pub mod defaults {
    use std::time::Duration;

    /// `--listen`: the client port.
    pub const LISTEN: &str = "127.0.0.1:7401";
    pub const MAX_VALUE_BYTES: usize = handlestore_proto::limits::MAX_VALUE_BYTES;
    pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
    pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
    pub const HEARTBEAT: Duration = Duration::from_millis(100);
    pub const ELECTION_TIMEOUT: Duration = Duration::from_millis(800);
    pub const SNAPSHOT_ENTRIES: u64 = 20_000;
    pub const KEEP_ENTRIES: u64 = 5_000;
    pub const SWEEP_INTERVAL: Duration = Duration::from_millis(250);
    pub const DEDUP_WINDOW: Duration = Duration::from_secs(600);
    pub const DEDUP_MAX_ENTRIES: u64 = 1_000_000;
    pub const MAX_BATCH_COMMANDS: usize = 512;
    pub const WATCH_HISTORY: u64 = 100_000;
    /// A quarter of the caches' defaults together.
    pub const WATCH_MEMORY_MB: u64 = 32;
    pub const BLOCK_CACHE_MB: u64 = 64;
    pub const WRITE_BUFFER_MB: u64 = 64;
    pub const MALLOC_TRIM_INTERVAL: Duration = Duration::from_secs(10);
    /// 0: chosen from the cores (`cli::node::scheduler`).
    pub const WORKER_THREADS: u16 = 0;
    pub const MAX_CLOCK_OFFSET: Duration = Duration::from_millis(500);
    pub const HANDOVER_ON_STOP: bool = true;
    pub const READ_LEASE: bool = true;
    pub const SLOW_REQUEST_THRESHOLD: Duration = Duration::from_secs(1);
    pub const MAX_CONCURRENT_CALLS: usize = 1024;
    /// A quarter of a small node's memory; 60 requests of the largest
    /// size (4 MiB batches).
    pub const MAX_REQUEST_MEMORY_MB: u64 = 256;
    /// Room for a memtable flush (--write-buffer-mb) and a snapshot's
    /// first chunks past the moment the node stops taking entries.
    pub const MIN_FREE_DISK_MB: u64 = 256;
    pub const WAL_RECOVERY: super::WalRecovery = super::WalRecovery::PointInTime;
}

/// A duration as a flag's default shows it ("5s", "800ms").
fn shown(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// The node's tunables, as flags (flattened into `handlestore node`).
#[derive(clap::Args, Debug, Clone, PartialEq, Eq)]
pub struct Tuning {
    /// Largest value accepted, in bytes (1 B to 64 MiB).
    #[arg(long, default_value_t = defaults::MAX_VALUE_BYTES)]
    pub max_value_bytes: usize,
    /// A write not committed within this is refused with UNAVAILABLE.
    #[arg(long, default_value = shown(defaults::WRITE_TIMEOUT), value_parser = humantime::parse_duration)]
    pub write_timeout: Duration,
    /// Longest a read waits for this node to catch up.
    #[arg(long, default_value = shown(defaults::READ_TIMEOUT), value_parser = humantime::parse_duration)]
    pub read_timeout: Duration,
    /// The leader's heartbeat interval; shorter than --election-timeout.
    #[arg(long, default_value = shown(defaults::HEARTBEAT), value_parser = humantime::parse_duration)]
    pub heartbeat: Duration,
    /// Election timeout (the upper bound is twice this).
    #[arg(long, default_value = shown(defaults::ELECTION_TIMEOUT), value_parser = humantime::parse_duration)]
    pub election_timeout: Duration,
    /// Build a snapshot every this many log entries.
    #[arg(long, default_value_t = defaults::SNAPSHOT_ENTRIES)]
    pub snapshot_entries: u64,
    /// Log entries kept behind a snapshot for slow followers.
    #[arg(long, default_value_t = defaults::KEEP_ENTRIES)]
    pub keep_entries: u64,
    /// How often the leader sweeps expired entries (at least 10ms).
    #[arg(long, default_value = shown(defaults::SWEEP_INTERVAL), value_parser = humantime::parse_duration)]
    pub sweep_interval: Duration,
    /// How long answers are remembered for exactly-once retries (at least
    /// 1s).
    #[arg(long, default_value = shown(defaults::DEDUP_WINDOW), value_parser = humantime::parse_duration)]
    pub dedup_window: Duration,
    /// Most clients whose answers are remembered; past it the oldest are
    /// forgotten before the window ends.
    #[arg(long, default_value_t = defaults::DEDUP_MAX_ENTRIES)]
    pub dedup_max_entries: u64,
    /// Most commands the leader puts in one log entry.
    #[arg(long, default_value_t = defaults::MAX_BATCH_COMMANDS)]
    pub max_batch_commands: usize,
    /// Revisions (log entries) of changes kept for watchers: a watch may
    /// start, or resume, this far back. Each change is kept with its value.
    #[arg(long, default_value_t = defaults::WATCH_HISTORY)]
    pub watch_history: u64,
    /// Memory for watch delivery (MiB): a quarter keeps recent changes for
    /// live watchers, the rest holds what watchers' clients have not taken
    /// yet. A watcher whose client takes nothing while its share is full is
    /// cut off (slow_watcher; the client resumes from its revision).
    #[arg(long, default_value_t = defaults::WATCH_MEMORY_MB)]
    pub watch_memory_mb: u64,
    /// RocksDB block cache, shared by all data (MiB). With the write
    /// buffers, this bounds the node's memory whatever the number of keys.
    #[arg(long, default_value_t = defaults::BLOCK_CACHE_MB)]
    pub block_cache_mb: u64,
    /// RocksDB memtables, all together (MiB, at least 2).
    #[arg(long, default_value_t = defaults::WRITE_BUFFER_MB)]
    pub write_buffer_mb: u64,
    /// How often memory RocksDB freed is given back to the OS (glibc's
    /// malloc_trim); 0s never. glibc keeps it for reuse otherwise: tens of
    /// MiB per node under steady writes.
    #[arg(long, default_value = shown(defaults::MALLOC_TRIM_INTERVAL), value_parser = humantime::parse_duration)]
    pub malloc_trim_interval: Duration,
    /// Threads that run the node's network and Raft work. 1 runs all of it
    /// on one event-loop thread; more spreads it over a work-stealing pool.
    /// 0: 1 on a machine with 2 cores or fewer, else one per core. RocksDB's
    /// background work, log syncs, large applies and scans run on threads of
    /// their own either way.
    #[arg(long, default_value_t = defaults::WORKER_THREADS)]
    pub worker_threads: u16,
    /// Farthest this node's clock may be from the cluster's (the median of
    /// the members' clocks, measured every 500ms) for it to lead and to
    /// serve reads that depend on expiry. Beyond it the node says so in its
    /// log and status and refuses those with UNAVAILABLE until its clock is
    /// back within it. At least 10ms.
    #[arg(long, default_value = shown(defaults::MAX_CLOCK_OFFSET), value_parser = humantime::parse_duration)]
    pub max_clock_offset: Duration,
    /// A leader stopped with SIGTERM (or Ctrl-C) first hands leadership to
    /// the most caught-up voter (up to 3s), so writes wait a round trip
    /// instead of an election timeout. false: it stops at once.
    #[arg(long, default_value_t = defaults::HANDOVER_ON_STOP, action = clap::ArgAction::Set)]
    pub handover_on_stop: bool,
    /// The leader serves linearizable reads on a lease, without a quorum
    /// round each, for three quarters of the longest election timeout after
    /// a majority last confirmed it (docs/consistency.md, "Reads on the
    /// leader's lease"). false: every read waits for a quorum round.
    #[arg(long, default_value_t = defaults::READ_LEASE, action = clap::ArgAction::Set)]
    pub read_lease: bool,
    /// A client call whose answer takes this long is logged at warn with
    /// the time each stage took (auth, read index, apply wait, commit,
    /// read); 0s never. Every call is logged at debug.
    #[arg(long, default_value = shown(defaults::SLOW_REQUEST_THRESHOLD), value_parser = humantime::parse_duration)]
    pub slow_request_threshold: Duration,
    /// Client calls this node serves at once (watches and `status` aside);
    /// one more is refused at once with UNAVAILABLE (`overloaded`)
    /// and a retry hint, before its request is read. 1 to 1,000,000.
    #[arg(long, default_value_t = defaults::MAX_CONCURRENT_CALLS)]
    pub max_concurrent_calls: usize,
    /// Request bytes the calls in progress may hold, counted as they
    /// arrive and until each call is answered (watches and `status`
    /// aside). A call whose request would go past it is refused as it
    /// arrives, before it is decoded, with UNAVAILABLE (`overloaded`) and a
    /// retry hint. Never below the largest request a client may send.
    #[arg(long, default_value_t = defaults::MAX_REQUEST_MEMORY_MB)]
    pub max_request_memory_mb: u64,
    /// Free space this node keeps on its data directory's file system.
    /// Below it the node stops taking new entries before a write could
    /// fail half-way: as leader it refuses writes (UNAVAILABLE,
    /// `disk_full`) and hands leadership over, as follower it falls
    /// behind; reads go on, and it catches up once space is freed. 0: no
    /// reserve (a full disk then stops the node).
    #[arg(long, default_value_t = defaults::MIN_FREE_DISK_MB)]
    pub min_free_disk_mb: u64,
    /// How RocksDB reads its write-ahead log back at start. point-in-time:
    /// up to the first damaged record, reusing old log files so a sync
    /// writes data alone. strict: new log files, and a damaged record
    /// before the last one stops the node at start, naming it (replace the
    /// member then); every sync also commits the file's growth.
    #[arg(long, value_enum, default_value_t = defaults::WAL_RECOVERY)]
    pub wal_recovery: WalRecovery,
}

impl Default for Tuning {
    fn default() -> Self {
        use defaults as d;
        Self {
            max_value_bytes: d::MAX_VALUE_BYTES,
            write_timeout: d::WRITE_TIMEOUT,
            read_timeout: d::READ_TIMEOUT,
            heartbeat: d::HEARTBEAT,
            election_timeout: d::ELECTION_TIMEOUT,
            snapshot_entries: d::SNAPSHOT_ENTRIES,
            keep_entries: d::KEEP_ENTRIES,
            sweep_interval: d::SWEEP_INTERVAL,
            dedup_window: d::DEDUP_WINDOW,
            dedup_max_entries: d::DEDUP_MAX_ENTRIES,
            max_batch_commands: d::MAX_BATCH_COMMANDS,
            watch_history: d::WATCH_HISTORY,
            watch_memory_mb: d::WATCH_MEMORY_MB,
            block_cache_mb: d::BLOCK_CACHE_MB,
            write_buffer_mb: d::WRITE_BUFFER_MB,
            malloc_trim_interval: d::MALLOC_TRIM_INTERVAL,
            worker_threads: d::WORKER_THREADS,
            max_clock_offset: d::MAX_CLOCK_OFFSET,
            handover_on_stop: d::HANDOVER_ON_STOP,
            read_lease: d::READ_LEASE,
            slow_request_threshold: d::SLOW_REQUEST_THRESHOLD,
            max_concurrent_calls: d::MAX_CONCURRENT_CALLS,
            max_request_memory_mb: d::MAX_REQUEST_MEMORY_MB,
            min_free_disk_mb: d::MIN_FREE_DISK_MB,
            wal_recovery: d::WAL_RECOVERY,
        }
    }
}

const MS: Duration = Duration::from_millis(1);
const MIB_MAX: u64 = 1 << 20;

/// `value` must lie in `min..=max`, or the flag is refused, saying why.
fn within<T: PartialOrd + std::fmt::Debug>(flag: &str, value: T, min: T, max: T, unit: &str) -> Result<(), String> {
    if value < min || value > max {
        return Err(format!(
            "--{flag} {value:?}{unit} is out of range: {min:?}{unit} to {max:?}{unit}"
        ));
    }
    Ok(())
}

/// A duration flag must be at least `min`.
fn at_least(flag: &str, value: Duration, min: Duration) -> Result<(), String> {
    if value < min {
        return Err(format!(
            "--{flag} {} is below its minimum of {}",
            shown(value),
            shown(min)
        ));
    }
    Ok(())
}

impl Tuning {
    /// Refuses values the node cannot run with, naming the flag and its
    /// range. Nothing is clamped: what was asked is what runs, or nothing.
    pub fn validate(&self) -> Result<(), String> {
        within("max-value-bytes", self.max_value_bytes, 1, 64 << 20, "")?;
        at_least("write-timeout", self.write_timeout, 10 * MS)?;
        at_least("read-timeout", self.read_timeout, 10 * MS)?;
        at_least("heartbeat", self.heartbeat, MS)?;
        if self.heartbeat >= self.election_timeout {
            return Err("--heartbeat must be shorter than --election-timeout".into());
        }
        within("snapshot-entries", self.snapshot_entries, 1, u64::MAX, "")?;
        at_least("sweep-interval", self.sweep_interval, 10 * MS)?;
        at_least("dedup-window", self.dedup_window, Duration::from_secs(1))?;
        within("dedup-max-entries", self.dedup_max_entries, 1, u64::MAX, "")?;
        within("max-batch-commands", self.max_batch_commands, 1, 65_536, "")?;
        within("watch-history", self.watch_history, 1, u64::MAX, "")?;
        within("watch-memory-mb", self.watch_memory_mb, 1, MIB_MAX, " MiB")?;
        within("block-cache-mb", self.block_cache_mb, 1, MIB_MAX, " MiB")?;
        within("write-buffer-mb", self.write_buffer_mb, 2, MIB_MAX, " MiB")?;
        within("worker-threads", self.worker_threads, 0, 1024, "")?;
        at_least("max-clock-offset", self.max_clock_offset, 10 * MS)?;
        within("max-concurrent-calls", self.max_concurrent_calls, 1, 1_000_000, "")?;
        within("max-request-memory-mb", self.max_request_memory_mb, 1, MIB_MAX, " MiB")?;
        within("min-free-disk-mb", self.min_free_disk_mb, 0, MIB_MAX, " MiB")?;
        Ok(())
    }

    /// The threshold of the slow-call log (None: off).
    pub fn slow_requests(&self) -> Option<Duration> {
        (!self.slow_request_threshold.is_zero()).then_some(self.slow_request_threshold)
    }

    /// The upper bound of the randomized election timeout.
    pub fn election_max(&self) -> Duration {
        self.election_timeout * 2
    }

    /// RocksDB's memory.
    pub fn db_config(&self) -> DbConfig {
        DbConfig {
            block_cache_bytes: (self.block_cache_mb as usize) << 20,
            write_buffer_bytes: (self.write_buffer_mb as usize) << 20,
            wal_recovery: self.wal_recovery,
        }
    }

    /// How watch delivery's memory ([`api::watch`](crate::api::watch)) is split: bytes of
    /// recent changes kept for live watchers, bytes all watchers' queues may
    /// hold, and one watcher's share of those (enough for a couple of full
    /// responses).
    pub fn watch_split(&self) -> (usize, usize, usize) {
        let memory = (self.watch_memory_mb as usize) << 20;
        let recent = memory / 4;
        let queues = memory - recent;
        let share = (memory / 8).max(2 * WATCH_PAGE_BYTES).min(queues);
        (recent, queues, share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_slow_request_threshold_turns_the_slow_log_off() {
        let mut t = Tuning::default();
        assert_eq!(t.slow_requests(), Some(Duration::from_secs(1)));
        t.slow_request_threshold = Duration::ZERO;
        assert_eq!(t.slow_requests(), None);
    }

    #[test]
    fn the_defaults_are_valid_and_every_out_of_range_value_is_refused_by_name() {
        assert_eq!(Tuning::default().validate(), Ok(()));
        let refused = |edit: fn(&mut Tuning), flag: &str| {
            let mut t = Tuning::default();
            edit(&mut t);
            let e = t.validate().expect_err(flag);
            assert!(e.contains(flag), "{e}");
        };
        refused(|t| t.max_value_bytes = 0, "--max-value-bytes");
        refused(|t| t.heartbeat = t.election_timeout, "--heartbeat");
        refused(|t| t.snapshot_entries = 0, "--snapshot-entries");
        refused(|t| t.max_concurrent_calls = 0, "--max-concurrent-calls");
        refused(|t| t.max_request_memory_mb = 0, "--max-request-memory-mb");
        refused(|t| t.min_free_disk_mb = MIB_MAX + 1, "--min-free-disk-mb");
        refused(|t| t.sweep_interval = MS, "--sweep-interval");
        refused(|t| t.dedup_window = Duration::ZERO, "--dedup-window");
        refused(|t| t.max_batch_commands = 0, "--max-batch-commands");
        refused(|t| t.watch_history = 0, "--watch-history");
        refused(|t| t.watch_memory_mb = 0, "--watch-memory-mb");
        refused(|t| t.write_buffer_mb = 1, "--write-buffer-mb");
        refused(|t| t.worker_threads = 1025, "--worker-threads");
        refused(|t| t.max_clock_offset = MS, "--max-clock-offset");
    }
}

/// Values a watch reads from the history for one response, at most
/// (whole revisions always go together): [`api::watch`](crate::api::watch) pages by it, and
/// each watcher's share of the queues holds at least two pages.
pub const WATCH_PAGE_BYTES: usize = 1 << 20;

/// How the node's RocksDB runs ([`storage::db`](crate::storage::db) opens it so): how much memory it may hold, whatever the
/// number of keys (one block cache shared by every column family, data,
/// index and filter blocks all in it, and one budget for all memtables),
/// and how it reads its write-ahead log back at start.
#[derive(Debug, Clone, Copy)]
pub struct DbConfig {
    pub block_cache_bytes: usize,
    pub write_buffer_bytes: usize,
    pub wal_recovery: WalRecovery,
}

/// How RocksDB reads its write-ahead log (WAL) back at start, where the
/// entries written since the last memtable flush are (`--wal-recovery`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WalRecovery {
    /// Replay up to the first record that fails its checksum, and keep
    /// reusing old WAL files, so that a sync writes data blocks alone.
    /// A torn record at the end (a power cut mid-write) and a damaged one
    /// in the middle look alike in a reused file: either ends the replay,
    /// and the leader sends this node what it lacks.
    PointInTime,
    /// Write every WAL to a new file, so that only an incomplete record at
    /// the end can be a power cut's: one damaged anywhere before it stops
    /// the node at start, naming the damage, instead of ending the replay
    /// there. Each sync then also commits the file's new size.
    Strict,
}

/// The node's defaults ([`config::defaults`](crate::config::defaults)).
impl Default for DbConfig {
    fn default() -> Self {
        Tuning::default().db_config()
    }
}
