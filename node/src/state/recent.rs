//! The recent changes live watchers follow: the events of the latest
//! applied batches, kept in memory up to a byte budget (and a number of
//! batches), oldest dropped first. A watcher reads from here what it has
//! not delivered yet; one that fell behind what is kept (or learns that a
//! snapshot replaced the state) reads the history on disk instead
//! ([`state::history`](crate::state::history)).
//!
//! Nothing here is held for a watcher: a watcher that reads nothing pins
//! no batch, so the memory of live delivery is this budget whatever the
//! watchers do (what each watcher queues for its client is bounded apart,
//! in [`api::watch`](crate::api::watch)).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::history::Event;

/// Most batches kept, however small.
pub const MAX_BATCHES: usize = 1024;

/// The bytes an event holds in memory, about.
pub fn event_bytes(e: &Event) -> usize {
    e.key.len() + e.record.value.len() + e.record.owner.len() + 64
}

/// One applied batch's changes.
#[derive(Debug, Clone)]
pub struct Batch {
    pub revision: u64,
    pub events: Arc<[Event]>,
    bytes: usize,
}

/// What a watcher at some position finds.
#[derive(Debug)]
pub enum Since {
    /// The first batch with changes at or after the position (deliver it,
    /// then ask again from after it).
    Next(Batch),
    /// No changes at or after the position: everything is applied through
    /// this revision (move past it, and wait for the next batch).
    UpToDate { through: u64 },
    /// Changes the watcher needs are no longer here, or the state was
    /// replaced (a snapshot): read the history.
    Gone,
}

#[derive(Debug)]
struct Kept {
    batches: VecDeque<Batch>,
    bytes: usize,
    /// Every change at or after this revision is in `batches` (those
    /// before it were dropped, or predate this node's start or a snapshot).
    complete_from: u64,
    /// The revision applied last.
    through: u64,
    /// Bumped when a snapshot replaces the state.
    generation: u64,
}

/// See the module docs.
pub struct Recent {
    limit_bytes: usize,
    kept: Mutex<Kept>,
    /// The revision applied last, to wake watchers.
    tick: watch::Sender<u64>,
}

impl Recent {
    /// Keeps at most `limit_bytes` of changes, from `applied` on.
    pub fn new(limit_bytes: usize, applied: u64) -> Self {
        Self {
            limit_bytes,
            kept: Mutex::new(Kept {
                batches: VecDeque::new(),
                bytes: 0,
                complete_from: applied.saturating_add(1),
                through: applied,
                generation: 0,
            }),
            tick: watch::channel(applied).0,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps a batch applied through `revision` (its changes may be none),
    /// dropping the oldest beyond the budget, and wakes the watchers. With
    /// no watcher nothing is kept: one that comes later reads what came
    /// before it from the history.
    pub fn publish(&self, revision: u64, events: Vec<Event>) {
        let watched = self.tick.receiver_count() > 0;
        {
            let mut k = self.lock();
            k.through = revision;
            if !watched {
                k.batches.clear();
                k.bytes = 0;
                k.complete_from = revision.saturating_add(1);
            } else if !events.is_empty() {
                let bytes = events.iter().map(event_bytes).sum();
                k.bytes += bytes;
                k.batches.push_back(Batch {
                    revision,
                    events: events.into(),
                    bytes,
                });
            }
            while k.bytes > self.limit_bytes || k.batches.len() > MAX_BATCHES {
                let Some(old) = k.batches.pop_front() else {
                    break;
                };
                k.bytes -= old.bytes;
                k.complete_from = old.revision + 1;
            }
        }
        self.tick.send_replace(revision);
    }

    /// A snapshot replaced the state at `index`: nothing kept applies.
    pub fn replaced(&self, index: u64) {
        {
            let mut k = self.lock();
            k.batches.clear();
            k.bytes = 0;
            k.complete_from = index.saturating_add(1);
            k.through = index;
            k.generation += 1;
        }
        self.tick.send_replace(index);
    }

    /// The generation now: a watcher notes it before it reads the history,
    /// and finds [`Since::Gone`] if a snapshot came in meanwhile.
    pub fn generation(&self) -> u64 {
        self.lock().generation
    }

    /// What a watcher at `position`, that read the history in `generation`,
    /// is to deliver next. One batch at a time: a watcher holds no more
    /// than the batch it is delivering.
    pub fn since(&self, position: u64, generation: u64) -> Since {
        let k = self.lock();
        if generation != k.generation || position < k.complete_from {
            return Since::Gone;
        }
        let at = k.batches.partition_point(|b| b.revision < position);
        match k.batches.get(at) {
            Some(b) => Since::Next(b.clone()),
            None => Since::UpToDate { through: k.through },
        }
    }

    /// Wakes when a batch is applied (or the state replaced).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.tick.subscribe()
    }

    /// Bytes of changes kept now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Bytes of changes kept at most.
    pub fn limit(&self) -> usize {
        self.limit_bytes
    }
}

#[cfg(test)]
mod tests {
    use handlestore_proto::v1 as pb;

    use super::*;

    fn events(revision: u64, value_len: usize) -> Vec<Event> {
        vec![Event {
            revision,
            kind: pb::EventKind::Put,
            key: b"k".to_vec(),
            record: super::super::Record {
                value: vec![0; value_len],
                ..Default::default()
            },
        }]
    }

    /// Everything a watcher at `position` delivers, one batch at a time:
    /// the batches' revisions and the revision it ends up after; None if
    /// it must read the history.
    fn revisions(r: &Recent, mut position: u64, generation: u64) -> Option<(Vec<u64>, u64)> {
        let mut out = Vec::new();
        loop {
            match r.since(position, generation) {
                Since::Next(b) => {
                    out.push(b.revision);
                    position = b.revision + 1;
                }
                Since::UpToDate { through } => return Some((out, through)),
                Since::Gone => return None,
            }
        }
    }

    #[test]
    fn keeps_the_latest_changes_within_the_budget() {
        let r = Recent::new(2_500, 10);
        let _watcher = r.subscribe();
        let g = r.generation();
        r.publish(11, events(11, 1000));
        r.publish(12, vec![]);
        r.publish(13, events(13, 1000));
        assert_eq!(revisions(&r, 11, g), Some((vec![11, 13], 13)));
        assert_eq!(revisions(&r, 12, g), Some((vec![13], 13)));
        assert_eq!(revisions(&r, 14, g), Some((vec![], 13)), "nothing new");
        r.publish(14, events(14, 1000));
        assert!(r.bytes() <= 2_500, "{}", r.bytes());
        assert_eq!(revisions(&r, 11, g), None, "11 was dropped");
        assert_eq!(revisions(&r, 12, g), Some((vec![13, 14], 14)), "12 had no changes");
    }

    #[test]
    fn a_watcher_from_before_the_start_or_a_snapshot_reads_the_history() {
        let r = Recent::new(1 << 20, 10);
        let _watcher = r.subscribe();
        let g = r.generation();
        assert_eq!(revisions(&r, 10, g), None, "before this node's start");
        r.publish(11, events(11, 10));
        r.replaced(20);
        assert_eq!(revisions(&r, 21, g), None, "a snapshot came in");
        assert_eq!(revisions(&r, 21, r.generation()), Some((vec![], 20)));
        assert_eq!(r.bytes(), 0);
    }

    #[test]
    fn nothing_is_kept_without_a_watcher() {
        let r = Recent::new(1 << 20, 0);
        r.publish(1, events(1, 100));
        assert_eq!(r.bytes(), 0);
        let _watcher = r.subscribe();
        assert_eq!(revisions(&r, 1, 0), None, "read it from the history");
        r.publish(2, events(2, 100));
        assert_eq!(revisions(&r, 2, 0), Some((vec![2], 2)));
    }

    #[test]
    fn at_most_so_many_batches() {
        let r = Recent::new(usize::MAX, 0);
        let _watcher = r.subscribe();
        for rev in 1..=(MAX_BATCHES as u64 + 5) {
            r.publish(rev, events(rev, 0));
        }
        assert_eq!(revisions(&r, 5, 0), None);
        assert_eq!(revisions(&r, 6, 0).map(|(b, _)| b.len()), Some(MAX_BATCHES));
    }
}
