//! The node's one RocksDB instance: the Raft log and the state machine live in
//! column families of the same database, so they share one write-ahead log and
//! one fsync covers both.

use std::path::Path;
use std::sync::Arc;

use rocksdb::{ColumnFamilyDescriptor, DB, Options};

pub use crate::storage::families::*;
use crate::storage::format::{self, FormatError};

/// Column families of format version 0, dropped by the migration to 1: one
/// key per remembered answer, replaced by `CF_ANSWERS`. Their answers are
/// not carried over (a write retried across the upgrade may apply twice).
const LEGACY_CFS: [&str; 2] = ["dedup", "dedup_age"];

const ALL_CFS: [&str; 8] = [
    CF_LOG,
    CF_LOG_META,
    CF_KV,
    CF_EXPIRY,
    CF_ANSWERS,
    CF_ANSWERS_AGE,
    CF_SM_META,
    CF_HISTORY,
];

pub use crate::config::{DbConfig, WalRecovery};

/// Opens (or creates) the database under `dir`: refused if it is of a
/// newer stored format than this build's, migrated if of an older one
/// ([`storage::format`](crate::storage::format)).
pub fn open(dir: &Path, config: DbConfig) -> Result<Arc<DB>, FormatError> {
    open_with(dir, config, true)
}

/// Opens the database with no compaction running, for the check of the
/// Raft log at start (`raft::log::log_check`): a compaction reading a damaged
/// block would stop the database before the check could drop it. Close it
/// and [`open`] it again afterwards.
pub fn open_for_check(dir: &Path, config: DbConfig) -> Result<Arc<DB>, FormatError> {
    open_with(dir, config, false)
}

fn open_with(dir: &Path, config: DbConfig, compactions: bool) -> Result<Arc<DB>, FormatError> {
    crate::storage::durable_dir::create(dir).map_err(|source| FormatError::Directory {
        what: dir.display().to_string(),
        source,
    })?;
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    // RocksDB's own info log: keep a few, not an unbounded history.
    opts.set_keep_log_file_num(8);
    opts.increase_parallelism(2);
    // Memtables of all column families together: past this, the largest is
    // flushed.
    opts.set_db_write_buffer_size(config.write_buffer_bytes);
    // Writes stay in RocksDB's WAL buffer until the Raft log's sync thread
    // flushes and syncs it (see raft::log::log_store): one write and one fsync per
    // group of appends, and a crashed process loses exactly the unsynced
    // writes, as a power cut would, so crash tests exercise that case too.
    opts.set_manual_wal_flush(true);
    // Every acknowledged write waits for one WAL fdatasync. Appended to a
    // new WAL file, each sync also has to commit the file's new size (on a
    // journaled file system, a journal commit); written into a file that an
    // earlier WAL already filled, it syncs the data blocks alone. So, by
    // default, the WAL files RocksDB is done with are kept and reused (two: at a
    // switch, the flush of the WAL before is usually done and has freed one),
    // and all column families are flushed together, so that the WAL switches
    // once per flush and every reused file is about a full flush's length.
    // Where nothing is free to reuse (the first flushes of a new node, or
    // flushes falling behind), a WAL grows as before. See
    // docs/dev/performance-notes.md, "Syncs that overwrite". A reused file
    // holds the old WAL's records past the new one's end, so RocksDB reads
    // it back only in point-in-time mode (`WalRecovery`).
    set_wal_recovery(&mut opts, config.wal_recovery);
    opts.set_atomic_flush(true);
    let cache = rocksdb::Cache::new_lru_cache(config.block_cache_bytes);
    let per_cf_buffer = (config.write_buffer_bytes / 2).clamp(1 << 20, 64 << 20);
    let cfs = ALL_CFS.iter().map(|name| {
        let mut cf_opts = cf_options(name, &cache, per_cf_buffer);
        cf_opts.set_disable_auto_compactions(!compactions);
        ColumnFamilyDescriptor::new(*name, cf_opts)
    });
    let existing = DB::list_cf(&opts, dir).unwrap_or_default();
    let what = format!("the data directory {}", dir.display());
    let found = if existing.is_empty() {
        format::CURRENT
    } else {
        stamped_before_open(dir, &existing, &what)?
    };
    format::check(found, &what)?;
    let legacy: Vec<&str> = LEGACY_CFS
        .into_iter()
        .filter(|name| existing.iter().any(|e| e == name))
        .collect();
    let legacy_cfs = legacy
        .iter()
        .map(|name| ColumnFamilyDescriptor::new(*name, Options::default()));
    let mut db = DB::open_cf_descriptors(&opts, dir, cfs.chain(legacy_cfs))?;
    if existing.is_empty() {
        format::stamp(&db)?;
    } else if found < format::CURRENT {
        if found == 0 {
            migrate_from_0(&mut db, &existing, &legacy)?;
        }
        format::stamp(&db)?;
    }
    Ok(Arc::new(db))
}

/// WAL reuse and the recovery mode that goes with it (`WalRecovery`).
fn set_wal_recovery(opts: &mut Options, mode: WalRecovery) {
    match mode {
        WalRecovery::PointInTime => {
            opts.set_recycle_log_file_num(2);
            opts.set_wal_recovery_mode(rocksdb::DBRecoveryMode::PointInTime);
        }
        WalRecovery::Strict => {
            opts.set_recycle_log_file_num(0);
            opts.set_wal_recovery_mode(rocksdb::DBRecoveryMode::TolerateCorruptedTailRecords);
        }
    }
}

/// The stored format version of an existing database, read before this
/// build writes anything to it (read-only, all its column families).
fn stamped_before_open(dir: &Path, existing: &[String], what: &str) -> Result<u32, FormatError> {
    if !existing.iter().any(|c| c == CF_LOG_META) {
        return Ok(0);
    }
    let db = DB::open_cf_for_read_only(&Options::default(), dir, existing, false)?;
    format::stamped(&db, what)
}

/// Format 0 (unversioned) to 1: per-answer column families dropped; a
/// missing watch history starts at the applied revision ([`state::history`](crate::state::history)).
fn migrate_from_0(db: &mut DB, existing: &[String], legacy: &[&str]) -> Result<(), FormatError> {
    tracing::warn!(
        "the data directory is of stored format 0 ({}): migrating it to {}",
        format::described(0),
        format::CURRENT
    );
    for name in legacy {
        tracing::warn!(
            "dropping column family {name:?} of format 0 (exactly-once answers are kept per client now; \
             those it held are not carried over)"
        );
        db.drop_cf(name)?;
    }
    if !existing.iter().any(|c| c == CF_HISTORY) {
        tracing::warn!("format 0 kept no watch history: watches can start from the current revision on");
    }
    Ok(())
}

/// The options of one column family: its blocks in the shared `cache`, its
/// memtable at most `write_buffer` bytes.
fn cf_options(name: &str, cache: &rocksdb::Cache, write_buffer: usize) -> Options {
    let mut table = rocksdb::BlockBasedOptions::default();
    table.set_block_cache(cache);
    // Index and filter blocks are charged to the cache too, so they do not
    // grow outside it as the number of keys does.
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    table.set_bloom_filter(10.0, false);
    // Index and filter split into partitions of about a data block under a
    // small pinned top level, so a point lookup reads a few KiB of them.
    // A whole-file filter grows with the keys of the file (10 bits each:
    // 1.2 MiB for a million small handles, which one 64 MiB file holds)
    // and outgrows a shard of the cache (capacity / 64): it is then dropped
    // as soon as it is used, and every lookup read it again in full, with
    // the file's index. Measured on a million handles compacted into one
    // file: 80-600 us per lookup, against 1.5-8 us partitioned.
    table.set_index_type(rocksdb::BlockBasedIndexType::TwoLevelIndexSearch);
    table.set_partition_filters(true);
    table.set_metadata_block_size(4096);
    table.set_pin_top_level_index_and_filter(true);
    let mut opts = Options::default();
    opts.set_block_based_table_factory(&table);
    opts.set_write_buffer_size(write_buffer);
    if name == CF_KV {
        opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
        // Every write looks up its key first, and a minted handle is never
        // there yet: a bloom filter over the memtable answers that without
        // walking the skip list.
        opts.set_memtable_prefix_bloom_ratio(0.1);
        opts.set_memtable_whole_key_filtering(true);
    }
    opts
}

/// What RocksDB holds in memory right now, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUse {
    /// Memtables of every column family, active, immutable and pinned.
    pub memtables: u64,
    /// The shared block cache in use (data, index and filter blocks).
    pub block_cache: u64,
    /// The part of the block cache pinned right now.
    pub block_cache_pinned: u64,
    /// Table readers outside the block cache.
    pub table_readers: u64,
}

/// Reads RocksDB's own accounting (in-memory counters, no I/O).
pub fn memory_use(db: &DB) -> MemoryUse {
    let int = |cf: &rocksdb::ColumnFamily, name: &str| db.property_int_value_cf(cf, name).ok().flatten().unwrap_or(0);
    let mut m = MemoryUse::default();
    for name in ALL_CFS {
        let handle = cf(db, name);
        m.memtables += int(handle, "rocksdb.size-all-mem-tables");
        m.table_readers += int(handle, "rocksdb.estimate-table-readers-mem");
    }
    // Every column family shares one cache: any of them reports it whole.
    let first = cf(db, ALL_CFS[0]);
    m.block_cache = int(first, "rocksdb.block-cache-usage");
    m.block_cache_pinned = int(first, "rocksdb.block-cache-pinned-usage");
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_of_the_per_answer_layout_opens_without_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let mut opts = Options::default();
            opts.create_if_missing(true);
            opts.create_missing_column_families(true);
            let names = ALL_CFS.iter().chain(LEGACY_CFS.iter()).filter(|n| **n != CF_ANSWERS);
            let old = DB::open_cf(&opts, dir.path(), names).expect("an old-layout database");
            old.put_cf(old.cf_handle("dedup").expect("cf"), b"k", b"v")
                .expect("put");
        }
        let db = open(dir.path(), DbConfig::default()).expect("opens");
        assert!(db.cf_handle("dedup").is_none() && db.cf_handle("dedup_age").is_none());
        assert!(db.cf_handle(CF_ANSWERS).is_some());
        drop(db);
        let cfs = DB::list_cf(&Options::default(), dir.path()).expect("list");
        assert!(!cfs.iter().any(|c| LEGACY_CFS.contains(&c.as_str())), "{cfs:?}");
    }

    #[test]
    fn a_point_lookup_reads_a_partition_of_the_filter_and_index_not_all_of_them() {
        // A million small handles compacted into one file, as a node holds
        // them after a while: the file's whole filter (~1.2 MiB) and index
        // are larger than a shard of the block cache.
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = rocksdb::Cache::new_lru_cache(DbConfig::default().block_cache_bytes);
        let mut opts = cf_options(CF_KV, &cache, 32 << 20);
        opts.create_if_missing(true);
        opts.enable_statistics();
        let db = DB::open(&opts, dir.path()).expect("open");
        let key = |i: u64| {
            let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes();
            format!("default/cart/{}{i:010}", data_encoding::BASE32_NOPAD.encode(&h))
        };
        const KEYS: u64 = 1_000_000;
        for chunk in 0..KEYS / 10_000 {
            let mut batch = rocksdb::WriteBatch::default();
            for i in chunk * 10_000..(chunk + 1) * 10_000 {
                batch.put(key(i), b"{\"items\":[]}");
            }
            db.write(batch).expect("write");
        }
        db.flush().expect("flush");
        db.compact_range::<&[u8], &[u8]>(None, None);
        use rocksdb::statistics::Ticker::{BlockCacheFilterBytesInsert, BlockCacheIndexBytesInsert};
        let read =
            || opts.get_ticker_count(BlockCacheFilterBytesInsert) + opts.get_ticker_count(BlockCacheIndexBytesInsert);
        let before = read();
        const LOOKUPS: u64 = 2_000;
        for i in 0..LOOKUPS {
            // Absent keys, as every mint looks up (and one present key in 100).
            let k = if i % 100 == 0 { key(i * 499) } else { key(KEYS + i) };
            db.get(k).expect("get");
        }
        let per_lookup = (read() - before) / LOOKUPS;
        assert!(
            per_lookup < 64 << 10,
            "each point lookup read {per_lookup} bytes of filter and index into the cache"
        );
    }

    #[test]
    fn memory_use_counts_memtables_and_the_block_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path(), DbConfig::default()).expect("opens");
        let empty = memory_use(&db);
        let kv = cf(&db, CF_KV);
        let value = vec![7u8; 4096];
        for i in 0..512u32 {
            db.put_cf(kv, i.to_be_bytes(), &value).expect("put");
        }
        let written = memory_use(&db);
        assert!(
            written.memtables >= empty.memtables + 512 * 4096,
            "{empty:?} -> {written:?}"
        );
        db.flush_cf(kv).expect("flush");
        for i in 0..512u32 {
            assert!(db.get_pinned_cf(kv, i.to_be_bytes()).expect("get").is_some());
        }
        let read = memory_use(&db);
        assert!(read.memtables < written.memtables, "flushed: {written:?} -> {read:?}");
        assert!(read.block_cache >= 512 * 4096, "read back through the cache: {read:?}");
        assert!(read.block_cache >= read.block_cache_pinned);
    }

    /// The newest WAL file in `dir`: its number and size.
    fn newest_wal(dir: &Path) -> (u64, u64) {
        std::fs::read_dir(dir)
            .expect("read dir")
            .filter_map(|e| {
                let e = e.ok()?;
                let number = e.file_name().to_str()?.strip_suffix(".log")?.parse().ok()?;
                // RocksDB may delete an old one meanwhile.
                Some((number, e.metadata().ok()?.len()))
            })
            .max()
            .expect("a WAL")
    }

    /// 200 synced writes of a log entry each, left in the WAL (no memtable
    /// flush), then bytes in the middle of the WAL overwritten while the
    /// database is closed, as a failing sector would.
    fn damaged_wal(mode: WalRecovery) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = DbConfig {
            wal_recovery: mode,
            ..DbConfig::default()
        };
        let db = open(dir.path(), config).expect("opens");
        for i in 0..200u64 {
            db.put_cf(cf(&db, CF_LOG), i.to_be_bytes(), vec![7u8; 1024])
                .expect("put");
            db.flush_wal(true).expect("sync");
        }
        drop(db);
        let (number, size) = newest_wal(dir.path());
        let path = dir.path().join(format!("{number:06}.log"));
        let mut bytes = std::fs::read(&path).expect("the WAL");
        assert!(size > 150 * 1024, "the entries are in the WAL: {size} bytes");
        let middle = bytes.len() / 2;
        bytes[middle..middle + 64].fill(0xA5);
        std::fs::write(&path, bytes).expect("damage the WAL");
        dir
    }

    #[test]
    fn a_damaged_wal_record_stops_a_strict_open_and_ends_a_point_in_time_replay() {
        let strict = DbConfig {
            wal_recovery: WalRecovery::Strict,
            ..DbConfig::default()
        };
        let dir = damaged_wal(WalRecovery::Strict);
        let e = open(dir.path(), strict).expect_err("a damaged record before the end is refused");
        assert!(
            matches!(&e, FormatError::Rocks(r) if r.kind() == rocksdb::ErrorKind::Corruption),
            "{e}"
        );
        // The same damage, read back in point-in-time mode: the entries
        // before it, none after.
        let dir = damaged_wal(WalRecovery::PointInTime);
        let db = open(dir.path(), DbConfig::default()).expect("opens");
        let kept: Vec<u64> = db
            .iterator_cf(cf(&db, CF_LOG), rocksdb::IteratorMode::Start)
            .map(|kv| u64::from_be_bytes(kv.expect("entry").0.as_ref().try_into().expect("index")))
            .collect();
        assert!(!kept.is_empty() && kept.len() < 200, "{} entries kept", kept.len());
        assert_eq!(kept, (0..kept.len() as u64).collect::<Vec<_>>(), "a prefix");
    }

    #[test]
    fn a_new_wal_is_written_into_an_old_file_so_a_sync_does_not_grow_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let memory = DbConfig {
            block_cache_bytes: 8 << 20,
            write_buffer_bytes: 2 << 20,
            wal_recovery: WalRecovery::PointInTime,
        };
        let db = open(dir.path(), memory).expect("opens");
        let (log, meta) = (cf(&db, CF_LOG), cf(&db, CF_SM_META));
        let entry = vec![7u8; 1024];
        let sync_one = |i: u64, with_entry: bool| {
            let mut batch = rocksdb::WriteBatch::default();
            if with_entry {
                batch.put_cf(log, i.to_be_bytes(), &entry);
            }
            batch.put_cf(meta, b"applied", i.to_be_bytes());
            db.write(batch).expect("write");
            db.flush_wal(true).expect("sync");
        };
        // No flush running or waiting: the WALs they free are reusable.
        let flushed = || {
            let int = |cf: &rocksdb::ColumnFamily, name: &str| db.property_int_value_cf(cf, name).ok().flatten();
            int(log, "rocksdb.num-running-flushes") == Some(0)
                && ALL_CFS
                    .iter()
                    .all(|name| int(cf(&db, name), "rocksdb.mem-table-flush-pending") == Some(0))
        };
        let (mut last, mut switches) = (0, 0);
        // Raft log appends, each synced as the log syncs them. The first
        // WALs are new files; once RocksDB has old ones to reuse, every
        // switch must land in one: a synced append right after the switch
        // leaves the file's size as it was. (Each switch's flush is let
        // finish, as it does on a node whose disk keeps up; on a busy test
        // machine the next WAL could otherwise come before any is free.)
        for i in 0..100_000u64 {
            sync_one(i, true);
            let (number, size) = newest_wal(dir.path());
            if number == last {
                continue;
            }
            last = number;
            switches += 1;
            sync_one(i, false);
            let after = newest_wal(dir.path());
            if switches > 3 {
                assert!(
                    after == (number, size) && size > 64 << 10,
                    "switch {switches}: WAL {number} of {size} bytes became {after:?} with one synced append"
                );
                if switches == 8 {
                    return;
                }
            }
            while !flushed() {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        panic!("the WAL switched only {switches} times");
    }
}
