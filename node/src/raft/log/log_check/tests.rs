//! A real RocksDB with a log of 300 entries in three table files (1-100,
//! 101-200, 201-300), the middle one damaged on disk (bytes of its data
//! block overwritten), checked with the state machine's applied index
//! below and above the damage.

use std::path::Path;
use std::sync::Arc;

use openraft::{CommittedLeaderId, EntryPayload};

use super::*;
use crate::raft::Entry;
use crate::raft::codec::entry_to_wire;
use crate::storage::db::{CF_SM_META, DbConfig};

const TERM: u64 = 3;

fn log_id(index: u64) -> LogId {
    LogId::new(CommittedLeaderId::new(TERM, 1), index)
}

fn open(dir: &Path) -> Arc<DB> {
    db::open(dir, DbConfig::default()).expect("open")
}

/// Writes entries 1..=300 (one table file per hundred), the applied
/// index and a vote in `TERM`; damages the table holding 101-200.
fn damaged_log(dir: &Path, applied: u64) {
    let db = open(dir);
    for first in [1u64, 101, 201] {
        for index in first..first + 100 {
            let entry = Entry {
                log_id: log_id(index),
                payload: EntryPayload::Blank,
            };
            let raw = entry_to_wire(&entry).encode_to_vec();
            db.put_cf(db::cf(&db, CF_LOG), key(index), raw).expect("put");
        }
        db.flush_cf(db::cf(&db, CF_LOG)).expect("flush");
    }
    let at = log_id_to_pb(&log_id(applied)).encode_to_vec();
    db.put_cf(db::cf(&db, CF_SM_META), crate::state::meta::APPLIED, at)
        .expect("applied");
    let vote = crate::raft::codec::vote_to_pb(&crate::raft::Vote::new(TERM, 1)).encode_to_vec();
    db.put_cf(db::cf(&db, CF_LOG_META), b"vote", vote).expect("vote");
    db.flush_wal(true).expect("sync");
    let middle = db
        .live_files()
        .expect("live files")
        .into_iter()
        .find(|f| f.column_family_name == CF_LOG && f.start_key.as_deref() == Some(&key(101)[..]))
        .expect("the table holding 101-200");
    drop(db);
    let path = dir.join(middle.name.trim_start_matches('/'));
    let mut bytes = std::fs::read(&path).expect("read table");
    bytes[20..40].fill(0xA5);
    std::fs::write(&path, bytes).expect("damage table");
}

fn entries(db: &DB) -> Vec<u64> {
    db.iterator_cf(db::cf(db, CF_LOG), rocksdb::IteratorMode::Start)
        .map(|item| {
            let (k, v) = item.expect("every entry readable after the repair");
            let index = u64::from_be_bytes(k.as_ref().try_into().expect("8 bytes"));
            assert_eq!(decode_entry(&v).expect("decodes").log_id.index, index);
            index
        })
        .collect()
}

fn purged(db: &DB) -> Option<u64> {
    let raw = db.get_cf(db::cf(db, CF_LOG_META), KEY_PURGED).expect("meta")?;
    Some(ipb::LogId::decode(raw.as_slice()).expect("log id").index)
}

fn checked(dir: &Path) -> (Option<Repaired>, Arc<DB>) {
    let mut db = db::open_for_check(dir, DbConfig::default()).expect("open for the check");
    let repaired = check(Arc::get_mut(&mut db).expect("not shared")).expect("check");
    drop(db);
    (repaired, open(dir))
}

#[test]
fn damage_below_the_applied_index_is_purged_behind_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    damaged_log(dir.path(), 250);
    let scan = scan(&open(dir.path()), Some(250));
    // Every entry of the damaged block, and perhaps a few others whose
    // lookup a table's bloom filter sends to that block (unreadable too).
    assert!((101..=200).all(|i| scan.damaged.contains(&i)), "{:?}", scan.damaged);
    assert!(scan.damaged.iter().all(|&i| i <= 200), "{:?}", scan.damaged);
    assert_eq!(scan.last, Some(300));
    assert_eq!(
        scan.kept.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        (251..=300).collect::<Vec<_>>()
    );

    let (repaired, db) = checked(dir.path());
    let repaired = repaired.expect("repaired");
    assert_eq!(
        (repaired.purged_to, repaired.cut_at, repaired.abstain_until),
        (Some(250), None, None)
    );
    assert_eq!(entries(&db), (251..=300).collect::<Vec<_>>());
    assert_eq!(purged(&db), Some(250));
    assert_eq!(
        log_store::read_repair(&db).expect("meta"),
        None,
        "nothing unapplied was lost"
    );
    drop(db);
    assert_eq!(checked(dir.path()).0, None, "the log is whole now");
}

#[test]
fn damage_above_the_applied_index_cuts_the_log_and_leaves_a_mark_to_reach() {
    let dir = tempfile::tempdir().expect("tempdir");
    damaged_log(dir.path(), 150);
    let (repaired, db) = checked(dir.path());
    let repaired = repaired.expect("repaired");
    assert_eq!(repaired.purged_to, Some(150));
    assert_eq!(repaired.cut_at, Some(151), "the first damaged entry not applied");
    assert_eq!(
        repaired.abstain_until,
        Some((TERM, 300)),
        "the vote's term and the last index held"
    );
    assert_eq!(
        entries(&db),
        Vec::<u64>::new(),
        "151 is lost, and everything after it goes"
    );
    assert_eq!(purged(&db), Some(150));
    assert_eq!(log_store::read_repair(&db).expect("meta"), Some((TERM, 300)));
}

#[test]
fn a_whole_log_is_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    for index in 1..=10u64 {
        let entry = Entry {
            log_id: log_id(index),
            payload: EntryPayload::Blank,
        };
        db.put_cf(db::cf(&db, CF_LOG), key(index), entry_to_wire(&entry).encode_to_vec())
            .expect("put");
    }
    drop(db);
    assert_eq!(checked(dir.path()).0, None);
    // A value that is not an entry (or not the entry its key names) is
    // damage too, though its block is whole.
    let db = open(dir.path());
    db.put_cf(db::cf(&db, CF_LOG), key(11), b"not an entry").expect("put");
    drop(db);
    let (repaired, db) = checked(dir.path());
    assert_eq!(repaired.map(|r| r.damaged), Some(vec![11]));
    assert_eq!(entries(&db), (1..=10).collect::<Vec<_>>());
}
