//! The watch history: every change to a handle or a state key, kept by
//! revision in `CF_HISTORY`, written in the same write batch as the change
//! itself (so the two never disagree, and a restart loses nothing), and
//! bounded by revisions: the oldest are dropped with one range delete, no
//! scan. The floor (the oldest revision whose changes are all kept) is an
//! `sm_meta` key. Key-ring entries and anything else that is not a handle
//! or a state key never enter it.
//!
//! After each applied batch the state store also keeps the batch's events
//! in memory for live watchers, within a budget ([`state::recent`](crate::state::recent)).

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use prost::Message;
use rocksdb::{DB, IteratorMode, ReadOptions};

use super::{Record, Result, decode, decode_opt_u64, keys, meta};
use crate::storage::db::{self, CF_HISTORY, CF_SM_META};

/// One change, as the history holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub revision: u64,
    pub kind: pb::EventKind,
    /// The data key ([`state::keys`](crate::state::keys)).
    pub key: Vec<u8>,
    /// Put: the new record. Delete and expire: the removed record, without
    /// its value.
    pub record: Record,
}

/// Whether changes to `key` are recorded (handles and state keys only).
pub fn is_watched(key: &[u8]) -> bool {
    matches!(key.first(), Some(&keys::TAG_HANDLE) | Some(&keys::TAG_STATE))
}

/// The history key of the `seq`-th change of `revision`.
pub fn key(revision: u64, seq: u32) -> [u8; 12] {
    let mut k = [0u8; 12];
    k[..8].copy_from_slice(&revision.to_be_bytes());
    k[8..].copy_from_slice(&seq.to_be_bytes());
    k
}

fn revision_of(k: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(k.get(..8)?.try_into().ok()?))
}

/// What is stored for a change (a removal keeps no value).
pub fn encode(kind: pb::EventKind, key: &[u8], record: &Record) -> Vec<u8> {
    ipb::HistoryEvent {
        kind: kind as i32,
        key: key.to_vec(),
        record: Some(record.clone()),
    }
    .encode_to_vec()
}

/// The record a removal is recorded with: its revisions and owner, no
/// value.
pub fn removed(old: &Record) -> Record {
    Record {
        value: Vec::new(),
        create_revision: old.create_revision,
        mod_revision: old.mod_revision,
        expires_at_ms: old.expires_at_ms,
        owner: old.owner.clone(),
        json: old.json,
    }
}

/// The floor to move to after applying through `last` while keeping
/// `retain` revisions, if it is time to move it: the floor moves in steps
/// of an eighth of `retain`, so the history holds one range tombstone per
/// step rather than one per batch.
pub fn next_floor(floor: u64, last: u64, retain: u64) -> Option<u64> {
    let wanted = last.saturating_add(1).saturating_sub(retain.max(1));
    let step = (retain / 8).max(1);
    (wanted >= floor.saturating_add(step)).then_some(wanted)
}

/// The oldest revision whose changes are all kept.
pub fn floor(db: &DB) -> Result<u64> {
    decode_opt_u64(db.get_cf(db::cf(db, CF_SM_META), meta::HISTORY_FLOOR)?, "history floor")
}

/// Sets the floor past everything applied when none is stored (a new
/// node, a database or a snapshot from before the history existed: what
/// was applied then has no history).
pub fn ensure_floor(db: &DB, applied: u64) -> Result<()> {
    let cf = db::cf(db, CF_SM_META);
    if db.get_cf(cf, meta::HISTORY_FLOOR)?.is_none() {
        db.put_cf(cf, meta::HISTORY_FLOOR, applied.saturating_add(1).to_be_bytes())?;
    }
    Ok(())
}

/// One read of the history.
#[derive(Debug)]
pub enum Page {
    /// The changes from the asked revision on, ending at a revision
    /// boundary; `through` is the revision the read covers up to.
    Events { events: Vec<Event>, through: u64 },
    /// The asked revision is older than the floor.
    Compacted { floor: u64 },
}

/// Reads the history from `from` through `through` (inclusive), at most
/// about `max_bytes` (never splitting a revision), from one consistent
/// view.
pub fn read(db: &DB, from: u64, through: u64, max_bytes: usize) -> Result<Page> {
    let snap = db.snapshot();
    let floor = decode_opt_u64(
        snap.get_cf(db::cf(db, CF_SM_META), meta::HISTORY_FLOOR)?,
        "history floor",
    )?;
    if from < floor {
        return Ok(Page::Compacted { floor });
    }
    let mut opts = ReadOptions::default();
    opts.set_iterate_upper_bound(key(through.saturating_add(1), 0).to_vec());
    opts.fill_cache(false);
    let start = key(from, 0);
    let iter = snap.iterator_cf_opt(
        db::cf(db, CF_HISTORY),
        opts,
        IteratorMode::From(&start, rocksdb::Direction::Forward),
    );
    let mut events = Vec::new();
    let mut bytes = 0usize;
    for item in iter {
        let (k, v) = item?;
        let revision = revision_of(&k).unwrap_or(0);
        if bytes >= max_bytes && events.last().is_some_and(|e: &Event| e.revision != revision) {
            let through = revision - 1;
            return Ok(Page::Events { events, through });
        }
        bytes += v.len();
        events.push(event_of(revision, &v)?);
    }
    Ok(Page::Events { events, through })
}

fn event_of(revision: u64, raw: &[u8]) -> Result<Event> {
    let h: ipb::HistoryEvent = decode(raw, "history")?;
    Ok(Event {
        revision,
        kind: pb::EventKind::try_from(h.kind).unwrap_or(pb::EventKind::Put),
        key: h.key,
        record: h.record.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_keys_sort_by_revision_then_sequence() {
        assert!(key(1, 9) < key(2, 0));
        assert!(key(7, 0) < key(7, 1));
        assert_eq!(revision_of(&key(42, 3)), Some(42));
    }

    #[test]
    fn the_floor_moves_in_steps_and_keeps_what_is_retained() {
        assert_eq!(next_floor(1, 100, 1000), None, "less than retained");
        assert_eq!(next_floor(1, 1000, 1000), None, "exactly retained");
        assert_eq!(next_floor(1, 1100, 1000), None, "less than a step past");
        assert_eq!(next_floor(1, 1125, 1000), Some(126));
        assert_eq!(next_floor(126, 1200, 1000), None);
        assert_eq!(next_floor(5, 10, 1), Some(10), "retain 1 keeps the last revision");
    }

    #[test]
    fn only_handles_and_state_keys_are_watched() {
        assert!(is_watched(&keys::handle_key("ns", "cart", "X")));
        assert!(is_watched(&keys::state_key("ns", "a/b")));
        assert!(!is_watched(&keys::keyring_prefix("ns")));
        assert!(!is_watched(b""));
    }
}
