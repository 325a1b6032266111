//! The column families of the node's RocksDB instance ([`storage::db`](crate::storage::db)
//! opens it with them): their names and what each holds, the ones a
//! snapshot carries, and finding one by name.

use rocksdb::DB;

/// Raft log entries: index (u64 big-endian) -> prost `Entry`.
pub const CF_LOG: &str = "raft_log";
/// Raft log metadata: vote, committed, last purged.
pub const CF_LOG_META: &str = "raft_meta";
/// Live data: encoded key (see [`state::keys`](crate::state::keys)) -> prost `Record`.
pub const CF_KV: &str = "kv";
/// Expiry index: expires_at_ms (u64 BE) ++ data key -> empty.
pub const CF_EXPIRY: &str = "expiry";
/// Exactly-once answers, one record per client: client_id (BE) -> prost
/// `ClientAnswers` (see `state::answers`).
pub const CF_ANSWERS: &str = "answers";
/// Age index of those records: stamp_ms (BE) ++ client_id (BE) -> empty.
pub const CF_ANSWERS_AGE: &str = "answers_age";
/// State machine metadata: applied log id, membership, clock, counters.
pub const CF_SM_META: &str = "sm_meta";

/// The watch history: revision (u64 BE) ++ sequence in the revision (u32
/// BE) -> prost `HistoryEvent` (see [`state::history`](crate::state::history)).
pub const CF_HISTORY: &str = "history";

/// The column families that make up the state machine (and so a snapshot;
/// a snapshot names them by position, so new ones go last).
pub const STATE_CFS: [&str; 6] = [CF_KV, CF_EXPIRY, CF_ANSWERS, CF_ANSWERS_AGE, CF_SM_META, CF_HISTORY];

/// Looks up a column family that `open` created. All of them exist for the
/// lifetime of the database, so a miss is a programming error.
pub fn cf<'a>(db: &'a DB, name: &str) -> &'a rocksdb::ColumnFamily {
    db.cf_handle(name)
        .unwrap_or_else(|| panic!("column family {name} is created at open"))
}
