//! The Raft log, read whole at start. RocksDB checks every block it reads
//! against the block's checksum, so a block damaged on the disk (a bit
//! flipped, a sector lost) makes the entries in it unreadable instead of
//! wrong; left there, the first read of them stops Raft, and the node with
//! it, at every start again. So before Raft starts the node reads its
//! whole log, and where part of it is damaged, writes the log again
//! without the damage:
//!
//! - entries at or below the applied index are in the state machine
//!   already. The log is purged up to the applied entry, and the node
//!   builds a snapshot of its state (`node::open_storage`), which a
//!   follower that needs those entries gets instead;
//! - entries above it cannot be rebuilt here, and this node may have been
//!   one of the majority that committed them. The log is cut at the first
//!   damaged one, and the node abstains from elections ([`raft::log::abstain`](crate::raft::log::abstain))
//!   until it has applied an entry at or past (its vote's term, the last
//!   index it held): by then the leader has sent the lost entries again.
//!
//! RocksDB cannot drop one block, and a compaction reading the damaged
//! block would stop the database, so the log's column family is dropped
//! whole and the entries kept are written to a new one.

use handlestore_proto::internal::v1 as ipb;
use prost::Message;
use rocksdb::{DB, Options, WriteBatch, WriteOptions};

use crate::raft::codec::{log_id_from_pb, log_id_to_pb};
use crate::raft::log::log_store::{self, KEY_COMMITTED, KEY_PURGED, KEY_REPAIR, decode_entry};
use crate::raft::{LogId, StorageError};
use crate::storage::db::{self, CF_LOG, CF_LOG_META};

/// What a read of the whole log found.
#[derive(Debug, Default, PartialEq)]
pub struct Scan {
    /// The state machine's applied index, as the scan was given it.
    pub applied: Option<u64>,
    /// The indexes whose entries could not be read or decoded.
    pub damaged: Vec<u64>,
    /// The last index the log holds, damaged or not.
    pub last: Option<u64>,
    /// The readable entries not applied (raw), in order, up to the first
    /// damaged one among them.
    pub kept: Vec<(u64, Vec<u8>)>,
}

/// What a repair did, for the node's log and for what it does next.
#[derive(Debug, PartialEq)]
pub struct Repaired {
    pub damaged: Vec<u64>,
    /// The log now begins after the applied entry: the node builds a
    /// snapshot of its state for followers that need the purged entries.
    pub purged_to: Option<u64>,
    /// The log was cut here (entries above the applied index lost): the
    /// node abstains until it has applied at or past `abstain_until`.
    pub cut_at: Option<u64>,
    pub abstain_until: Option<(u64, u64)>,
}

fn key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

fn readable(index: u64, raw: &[u8]) -> bool {
    decode_entry(raw).is_ok_and(|e| e.log_id.index == index)
}

/// Reads the log whole, from its first stored entry, keeping the readable
/// entries above `applied` until the first damaged one among them. A
/// damaged block ends RocksDB's iterator; the entries from there are read
/// one by one until one is readable (the iterator goes on from it) or the
/// log's table files hold no more (the end). "Damaged" means what the
/// node cannot read: a lookup of an entry in a whole block may still
/// fail, where a table's bloom filter sends it to the damaged block too.
pub fn scan(db: &DB, applied: Option<u64>) -> Scan {
    let cf = db::cf(db, CF_LOG);
    let mut scan = Scan {
        applied,
        ..Scan::default()
    };
    let mut it = db.raw_iterator_cf(cf);
    it.seek_to_first();
    // The next index to read, once known; where the iterator was last sent.
    let (mut next, mut resumed_at) = (None, None);
    loop {
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            let index = k.try_into().map(u64::from_be_bytes).unwrap_or(u64::MAX);
            scan.note(index, readable(index, v).then_some(v));
            next = index.checked_add(1);
            it.next();
        }
        if it.status().is_ok() {
            return scan;
        }
        // Damage is in a table file: nothing is stored past the last key
        // the tables hold (what the memtables hold the iterator reads).
        let end = last_table_key(db);
        let mut probe = next.unwrap_or_else(|| first_index(db));
        loop {
            match db.get_cf(cf, key(probe)) {
                Ok(None) if end.is_none_or(|e| probe > e) => return scan,
                // Deleted (a purge or a truncation not yet compacted away).
                Ok(None) => {}
                Ok(Some(v)) if readable(probe, &v) => {
                    if resumed_at != Some(probe) {
                        it.seek(key(probe));
                        (next, resumed_at) = (Some(probe), Some(probe));
                        break;
                    }
                    // The iterator failed where it was sent (a seek reads
                    // every overlapping table's block at that key): read
                    // on one by one.
                    scan.note(probe, Some(&v));
                }
                _ => scan.note(probe, None),
            }
            probe += 1;
        }
    }
}

/// The first index the log may hold: after the purged entry, or 0.
fn first_index(db: &DB) -> u64 {
    let purged = log_store::read_log_id(db, KEY_PURGED).ok().flatten();
    purged.map_or(0, |p| p.index + 1)
}

/// The largest index in the log's table files.
fn last_table_key(db: &DB) -> Option<u64> {
    let files = db.live_files().ok()?;
    files
        .iter()
        .filter(|f| f.column_family_name == CF_LOG)
        .filter_map(|f| f.end_key.as_deref()?.try_into().ok().map(u64::from_be_bytes))
        .max()
}

impl Scan {
    fn unapplied(&self, index: u64) -> bool {
        self.applied.is_none_or(|a| index > a)
    }

    fn note(&mut self, index: u64, entry: Option<&[u8]>) {
        self.last = Some(index);
        let cut = self.damaged.iter().any(|&d| self.unapplied(d));
        match entry {
            None => self.damaged.push(index),
            Some(raw) if self.unapplied(index) && !cut => self.kept.push((index, raw.to_vec())),
            Some(_) => {}
        }
    }
}

/// Reads the log and, if part of it is damaged, writes it again without
/// the damage (see the module comment). `db` must not be shared yet (the
/// column family is dropped); open it again afterwards, so that the new
/// column family gets its options.
pub fn check(db: &mut DB) -> Result<Option<Repaired>, anyhow::Error> {
    let applied = crate::state::read_meta::<ipb::LogId>(db, crate::state::meta::APPLIED)?
        .map(|pb| log_id_from_pb(&pb))
        .transpose()?;
    let scan = scan(db, applied.map(|a| a.index));
    if scan.damaged.is_empty() {
        return Ok(None);
    }
    let repaired = plan(&scan, log_store::read_vote_term(db)?);
    tracing::error!("{repaired}");
    rewrite(db, &scan, applied, &repaired)?;
    Ok(Some(repaired))
}

impl std::fmt::Display for Repaired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (first, last) = (self.damaged.first(), self.damaged.last());
        write!(
            f,
            "the Raft log is damaged on disk: {} entries between {} and {} cannot be read \
             (their blocks fail RocksDB's checksums); writing the log again without them: ",
            self.damaged.len(),
            first.unwrap_or(&0),
            last.unwrap_or(&0),
        )?;
        if let Some(applied) = self.purged_to {
            write!(f, "purged up to the applied entry {applied}, behind a new snapshot")?;
        }
        match (self.cut_at, self.abstain_until) {
            (Some(cut), Some((term, index))) => write!(
                f,
                "; cut at {cut} (not applied here: the leader sends it again), and no part in \
                 elections until an entry at or past term {term}, index {index} is applied"
            ),
            _ => write!(f, "; nothing unapplied was lost"),
        }
    }
}

/// What to do about the damage `scan` found, this node having voted in
/// `term`.
pub fn plan(scan: &Scan, term: u64) -> Repaired {
    let cut_at = scan.damaged.iter().copied().find(|&d| scan.unapplied(d));
    Repaired {
        damaged: scan.damaged.clone(),
        purged_to: scan.applied,
        cut_at,
        abstain_until: cut_at.map(|_| (term, scan.last.unwrap_or(0))),
    }
}

fn rewrite(db: &mut DB, scan: &Scan, applied: Option<LogId>, repaired: &Repaired) -> Result<(), StorageError> {
    let io = |e: rocksdb::Error| StorageError::from(openraft::StorageIOError::write_logs(&e));
    db.drop_cf(CF_LOG).map_err(io)?;
    db.create_cf(CF_LOG, &Options::default()).map_err(io)?;
    let mut batch = WriteBatch::default();
    for (index, raw) in &scan.kept {
        batch.put_cf(db::cf(db, CF_LOG), key(*index), raw);
    }
    let meta = db::cf(db, CF_LOG_META);
    if let Some(applied) = applied {
        // The purge point, and the commit point no further than what the
        // log and the state machine still hold (openraft applies up to it
        // at start).
        let at = log_id_to_pb(&applied).encode_to_vec();
        batch.put_cf(meta, KEY_PURGED, &at);
        batch.put_cf(meta, KEY_COMMITTED, &at);
    } else {
        batch.delete_cf(meta, KEY_COMMITTED);
    }
    if let Some((term, index)) = repaired.abstain_until {
        batch.put_cf(meta, KEY_REPAIR, log_store::encode_repair(term, index));
    }
    let mut opts = WriteOptions::default();
    opts.set_sync(true);
    db.write_opt(batch, &opts).map_err(io)
}

#[cfg(test)]
mod tests;
