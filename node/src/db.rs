//! The node's one RocksDB instance: the Raft log and the state machine live in
//! column families of the same database, so they share one write-ahead log and
//! one fsync covers both.

use std::path::Path;
use std::sync::Arc;

use rocksdb::{ColumnFamilyDescriptor, DB, Options};

/// Raft log entries: index (u64 big-endian) -> prost `Entry`.
pub const CF_LOG: &str = "raft_log";
/// Raft log metadata: vote, committed, last purged.
pub const CF_LOG_META: &str = "raft_meta";
/// Live data: encoded key (see `state::keys`) -> prost `Record`.
pub const CF_KV: &str = "kv";
/// Expiry index: expires_at_ms (u64 BE) ++ data key -> empty.
pub const CF_EXPIRY: &str = "expiry";
/// Exactly-once answers, one record per client: client_id (BE) -> prost
/// `ClientAnswers` (see `state::answers`).
pub const CF_ANSWERS: &str = "answers";
/// Age index of those records: stamp_ms (BE) ++ client_id (BE) -> empty.
pub const CF_ANSWERS_AGE: &str = "answers_age";
/// Column families of earlier versions, dropped when found at open: one key
/// per remembered answer, replaced by `CF_ANSWERS`. Their answers are not
/// carried over (a write retried across the upgrade may apply twice).
const LEGACY_CFS: [&str; 2] = ["dedup", "dedup_age"];
/// State machine metadata: applied log id, membership, clock, counters.
pub const CF_SM_META: &str = "sm_meta";

/// The column families that make up the state machine (and so a snapshot).
pub const STATE_CFS: [&str; 5] = [CF_KV, CF_EXPIRY, CF_ANSWERS, CF_ANSWERS_AGE, CF_SM_META];

const ALL_CFS: [&str; 7] = [
    CF_LOG,
    CF_LOG_META,
    CF_KV,
    CF_EXPIRY,
    CF_ANSWERS,
    CF_ANSWERS_AGE,
    CF_SM_META,
];

/// How much memory RocksDB may hold, whatever the number of keys: one block
/// cache shared by every column family (data, index and filter blocks all
/// live in it), and one budget for all memtables.
#[derive(Debug, Clone, Copy)]
pub struct DbMemory {
    pub block_cache_bytes: usize,
    pub write_buffer_bytes: usize,
}

impl Default for DbMemory {
    fn default() -> Self {
        Self {
            block_cache_bytes: 64 << 20,
            write_buffer_bytes: 64 << 20,
        }
    }
}

/// Opens (or creates) the database under `dir`.
pub fn open(dir: &Path, memory: DbMemory) -> Result<Arc<DB>, rocksdb::Error> {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    // RocksDB's own info log: keep a few, not an unbounded history.
    opts.set_keep_log_file_num(8);
    opts.increase_parallelism(2);
    // Memtables of all column families together: past this, the largest is
    // flushed.
    opts.set_db_write_buffer_size(memory.write_buffer_bytes);
    // Writes stay in RocksDB's WAL buffer until the Raft log's sync thread
    // flushes and syncs it (see raft::log_store): one write and one fsync per
    // group of appends, and a crashed process loses exactly the unsynced
    // writes, as a power cut would, so crash tests exercise that case too.
    opts.set_manual_wal_flush(true);
    let cache = rocksdb::Cache::new_lru_cache(memory.block_cache_bytes);
    let per_cf_buffer = (memory.write_buffer_bytes / 2).clamp(1 << 20, 64 << 20);
    let cfs = ALL_CFS.iter().map(|name| {
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_block_cache(&cache);
        // Index and filter blocks are charged to the cache too, so they do
        // not grow outside it as the number of keys does.
        table.set_cache_index_and_filter_blocks(true);
        table.set_pin_l0_filter_and_index_blocks_in_cache(true);
        table.set_bloom_filter(10.0, false);
        let mut cf_opts = Options::default();
        cf_opts.set_block_based_table_factory(&table);
        cf_opts.set_write_buffer_size(per_cf_buffer);
        if *name == CF_KV {
            cf_opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
            // Every write looks up its key first, and a minted handle is
            // never there yet: a bloom filter over the memtable answers that
            // without walking the skip list.
            cf_opts.set_memtable_prefix_bloom_ratio(0.1);
            cf_opts.set_memtable_whole_key_filtering(true);
        }
        ColumnFamilyDescriptor::new(*name, cf_opts)
    });
    let existing = DB::list_cf(&opts, dir).unwrap_or_default();
    let legacy: Vec<&str> = LEGACY_CFS
        .into_iter()
        .filter(|name| existing.iter().any(|e| e == name))
        .collect();
    let legacy_cfs = legacy
        .iter()
        .map(|name| ColumnFamilyDescriptor::new(*name, Options::default()));
    let mut db = DB::open_cf_descriptors(&opts, dir, cfs.chain(legacy_cfs))?;
    for name in legacy {
        tracing::warn!(
            "dropping column family {name:?} of an earlier version (exactly-once answers are kept per client now)"
        );
        db.drop_cf(name)?;
    }
    Ok(Arc::new(db))
}

/// Looks up a column family that `open` created. All of them exist for the
/// lifetime of the database, so a miss is a programming error.
pub fn cf<'a>(db: &'a DB, name: &str) -> &'a rocksdb::ColumnFamily {
    db.cf_handle(name)
        .unwrap_or_else(|| panic!("column family {name} is created at open"))
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
        let db = open(dir.path(), DbMemory::default()).expect("opens");
        assert!(db.cf_handle("dedup").is_none() && db.cf_handle("dedup_age").is_none());
        assert!(db.cf_handle(CF_ANSWERS).is_some());
        drop(db);
        let cfs = DB::list_cf(&Options::default(), dir.path()).expect("list");
        assert!(!cfs.iter().any(|c| LEGACY_CFS.contains(&c.as_str())), "{cfs:?}");
    }
}
