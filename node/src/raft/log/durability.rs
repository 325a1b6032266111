//! What of the local Raft log is on disk, and waiting until it is.
//!
//! The log store tells openraft an append is "flushed" as soon as RocksDB has
//! it in memory (see `log_store`), so the leader sends entries to followers
//! while its own fsync runs (Raft thesis, 10.2.1) instead of after it. Raft's
//! rule is kept where acknowledgements leave a node, which is where it
//! matters:
//!
//! - a follower answers an AppendEntries only once every log write it made
//!   before answering is synced ([`raft::service`](crate::raft::service)); on the Raft wire the
//!   answer is held here ([`Durability::when_synced`]) and written to the
//!   leader's socket by the thread that learns of the sync, so the node's
//!   event loop need not be woken first;
//! - the leader hands a follower's answer to openraft only once every log
//!   write it made before sending the request is synced ([`raft::net::network`](crate::raft::net::network)), so
//!   a follower's "I have it" is only counted when the leader has it too;
//! - nothing is applied (and so answered to a client) before the entries are
//!   synced locally ([`raft::log::state_machine`](crate::raft::log::state_machine)); this is what keeps a one-voter
//!   cluster, where the leader alone is the quorum, honest.
//!
//! So every entry counted towards a quorum is on disk on every node counted.
//!
//! Positions are counted in two ways. Every append gets a sequence number;
//! "sequence `s` is synced" means every append numbered up to `s` is on disk.
//! Network waits use sequence numbers: they always end, whatever truncation
//! does to the log. Applying waits for a log index: "every entry up to index
//! `i` is on disk", which committed entries (never truncated) always reach.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

/// Something to do once appends are on disk (an answer to send).
pub type Held = Box<dyn FnOnce() + Send>;

struct Appends {
    /// The sequence number of the last append.
    written: u64,
    /// Appends not yet known to be synced: (sequence, first index).
    unsynced: VecDeque<(u64, u64)>,
    /// The index of the last entry in the log (0: none).
    last_index: u64,
    /// Held until every append numbered up to theirs is synced; in order of
    /// sequence number.
    held: VecDeque<(u64, Held)>,
}

pub struct Durability {
    appends: Mutex<Appends>,
    /// The highest sequence number known to be synced.
    synced_seq: watch::Sender<u64>,
    /// Every log entry up to this index is on disk.
    durable_index: watch::Sender<u64>,
    /// What a log sync took lately, in µs: a moving average, each sync
    /// weighing a quarter.
    sync_us: AtomicU64,
}

impl Durability {
    /// `last_index`: the last entry of the log as found at start (all of it
    /// on disk: the database syncs its WAL when it opens).
    pub fn new(last_index: u64) -> Self {
        Self {
            appends: Mutex::new(Appends {
                written: 0,
                unsynced: VecDeque::new(),
                last_index,
                held: VecDeque::new(),
            }),
            synced_seq: watch::Sender::new(0),
            durable_index: watch::Sender::new(last_index),
            sync_us: AtomicU64::new(0),
        }
    }

    /// One log sync took `took`.
    pub fn note_sync(&self, took: Duration) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        let _ = self.sync_us.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |avg| {
            Some(if avg == 0 { us } else { avg - avg / 4 + us / 4 })
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Appends> {
        self.appends.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records an append of entries `first..=last`, already written to the
    /// database but not synced. Returns its sequence number.
    pub fn appended(&self, first: u64, last: u64) -> u64 {
        let mut a = self.lock();
        a.written += 1;
        let seq = a.written;
        a.unsynced.push_back((seq, first));
        a.last_index = last;
        seq
    }

    /// The sequence number of the last append so far.
    pub fn written(&self) -> u64 {
        self.lock().written
    }

    /// Every append numbered up to `seq` is on disk. Runs what was held
    /// until then, on the caller's thread.
    pub fn synced(&self, seq: u64) {
        let due = {
            let mut a = self.lock();
            while a.unsynced.front().is_some_and(|&(s, _)| s <= seq) {
                a.unsynced.pop_front();
            }
            self.publish(&a, seq);
            due(&mut a, seq)
        };
        run(due);
    }

    /// The log was truncated from `index` on, with a synced write: whatever
    /// was appended before is on disk (or gone), and the log now ends at
    /// `index - 1`. Runs everything held, on the caller's thread.
    pub fn truncated(&self, index: u64) {
        let due = {
            let mut a = self.lock();
            a.unsynced.clear();
            a.last_index = index.saturating_sub(1);
            let seq = a.written;
            self.publish(&a, seq);
            due(&mut a, seq)
        };
        run(due);
    }

    /// Holds `job` until every append made so far is on disk, then runs it
    /// on the thread that learns so (the log's sync thread, or the one that
    /// truncates). Already on disk: gives `job` back to run at once. A job
    /// held when the node stops is dropped without running.
    pub fn when_synced(&self, job: Held) -> Option<Held> {
        let mut a = self.lock();
        let seq = a.written;
        if *self.synced_seq.borrow() >= seq {
            return Some(job);
        }
        a.held.push_back((seq, job));
        None
    }

    fn publish(&self, a: &Appends, seq: u64) {
        let durable = match a.unsynced.front() {
            Some(&(_, first)) => first.saturating_sub(1),
            None => a.last_index,
        };
        self.synced_seq.send_if_modified(|s| {
            let grew = seq > *s;
            if grew {
                *s = seq;
            }
            grew
        });
        self.durable_index.send_if_modified(|d| {
            let changed = *d != durable;
            *d = durable;
            changed
        });
    }

    /// Waits until every append numbered up to `seq` is on disk.
    pub async fn wait_synced(&self, seq: u64) {
        let mut rx = self.synced_seq.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = rx.wait_for(|s| *s >= seq).await;
    }

    /// Waits until every log entry up to `index` is on disk.
    pub async fn wait_durable(&self, index: u64) {
        let mut rx = self.durable_index.subscribe();
        let _ = rx.wait_for(|d| *d >= index).await;
    }

    /// Waits until the log entries up to `index` are on disk, or every append
    /// numbered up to `seq` is, whichever comes first. For a request built
    /// from this node's log: `index` is its last entry and `seq` the appends
    /// made before it was sent, so either one covers it; the index is usually
    /// there first (a later append need not be synced), the sequence number
    /// always gets there.
    pub async fn wait_covered(&self, index: u64, seq: u64) {
        tokio::select! {
            () = self.wait_durable(index) => {}
            () = self.wait_synced(seq) => {}
        }
    }

    /// Every entry up to this index is on disk.
    #[cfg(test)]
    pub fn durable_index(&self) -> u64 {
        *self.durable_index.borrow()
    }
}

/// Takes the held jobs whose appends are all synced once `seq` is.
fn due(a: &mut Appends, seq: u64) -> Vec<Held> {
    let n = a.held.iter().take_while(|&&(s, _)| s <= seq).count();
    a.held.drain(..n).map(|(_, job)| job).collect()
}

/// Runs jobs outside the lock: they write to sockets.
fn run(jobs: Vec<Held>) {
    for job in jobs {
        job();
    }
}

impl crate::storage::disk::SyncTime for Durability {
    /// What a log sync took lately (zero before the first).
    fn sync_time(&self) -> Duration {
        Duration::from_micros(self.sync_us.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    async fn finishes(f: impl std::future::Future<Output = ()>) -> bool {
        tokio::time::timeout(Duration::from_millis(50), f).await.is_ok()
    }

    #[tokio::test]
    async fn the_durable_prefix_ends_before_the_first_unsynced_append() {
        let d = Durability::new(10);
        assert_eq!(d.durable_index(), 10);
        let a = d.appended(11, 12);
        let b = d.appended(13, 20);
        assert_eq!(d.durable_index(), 10, "nothing synced yet");
        d.synced(a);
        assert_eq!(d.durable_index(), 12);
        assert!(!finishes(d.wait_synced(b)).await);
        assert!(!finishes(d.wait_durable(13)).await);
        d.synced(b);
        assert_eq!(d.durable_index(), 20);
        assert!(finishes(d.wait_synced(b)).await);
        assert!(finishes(d.wait_durable(20)).await);
    }

    #[tokio::test]
    async fn a_sync_covers_every_append_before_it() {
        let d = Durability::new(0);
        let _ = d.appended(1, 1);
        let _ = d.appended(2, 5);
        let c = d.appended(6, 6);
        d.synced(c);
        assert_eq!(d.durable_index(), 6);
        // A late report of an older sync changes nothing.
        d.synced(1);
        assert_eq!(d.durable_index(), 6);
        assert!(finishes(d.wait_synced(c)).await);
    }

    #[tokio::test]
    async fn truncation_rewinds_the_log_end_and_rewritten_entries_wait_for_their_own_sync() {
        let d = Durability::new(0);
        let a = d.appended(1, 10);
        // Entries 6..=10 are replaced: truncation is a synced write.
        d.truncated(6);
        assert_eq!(d.durable_index(), 5);
        assert!(finishes(d.wait_synced(a)).await);
        // The new entry 6 is a different entry: index 6 is not durable until
        // its own append is synced, although an older 6 once was written.
        let b = d.appended(6, 7);
        assert_eq!(d.durable_index(), 5);
        assert!(!finishes(d.wait_durable(6)).await);
        // The sync thread reporting the pre-truncation append is no news.
        d.synced(a);
        assert_eq!(d.durable_index(), 5);
        d.synced(b);
        assert_eq!(d.durable_index(), 7);
    }

    #[tokio::test]
    async fn covered_by_either_the_index_or_the_sequence_number() {
        let d = Durability::new(0);
        let a = d.appended(1, 4);
        let b = d.appended(5, 9);
        // A request for entries up to 4, sent after both appends.
        assert!(!finishes(d.wait_covered(4, b)).await);
        d.synced(a);
        assert!(finishes(d.wait_covered(4, b)).await, "the index is enough");
        // Entries truncated away: the sequence number still ends the wait.
        d.truncated(3);
        assert!(finishes(d.wait_covered(9, b)).await, "the sequence number is enough");
    }

    /// A job that notes `n` in `ran` when it runs.
    fn note(ran: &Arc<Mutex<Vec<u32>>>, n: u32) -> Held {
        let ran = ran.clone();
        Box::new(move || ran.lock().expect("lock").push(n))
    }

    #[test]
    fn held_jobs_run_once_every_append_before_them_is_synced_and_in_order() {
        let d = Durability::new(0);
        let ran = Arc::new(Mutex::new(Vec::new()));
        let taken = |ran: &Arc<Mutex<Vec<u32>>>| std::mem::take(&mut *ran.lock().expect("lock"));

        // Nothing unsynced: the job comes back to be run at once.
        let job = d.when_synced(note(&ran, 0)).expect("nothing to wait for");
        job();
        assert_eq!(taken(&ran), [0]);

        let a = d.appended(1, 1);
        assert!(d.when_synced(note(&ran, 1)).is_none(), "held");
        let b = d.appended(2, 3);
        assert!(d.when_synced(note(&ran, 2)).is_none(), "held");
        assert!(d.when_synced(note(&ran, 3)).is_none(), "held");
        assert!(taken(&ran).is_empty());

        d.synced(a);
        assert_eq!(taken(&ran), [1], "only the job held before the second append");
        d.synced(b);
        assert_eq!(taken(&ran), [2, 3]);
        d.synced(b);
        assert!(taken(&ran).is_empty(), "each job runs once");

        // A sync reported for an append made before the job does not run it.
        let c = d.appended(4, 4);
        let e = d.appended(5, 5);
        assert!(d.when_synced(note(&ran, 4)).is_none());
        d.synced(c);
        assert!(taken(&ran).is_empty());
        d.synced(e);
        assert_eq!(taken(&ran), [4]);
    }

    #[test]
    fn truncation_runs_every_held_job() {
        let d = Durability::new(0);
        let ran = Arc::new(Mutex::new(Vec::new()));
        let _ = d.appended(1, 5);
        assert!(d.when_synced(note(&ran, 1)).is_none());
        let _ = d.appended(6, 6);
        assert!(d.when_synced(note(&ran, 2)).is_none());
        // Truncation is a synced write: what was appended is on disk or gone.
        d.truncated(3);
        assert_eq!(*ran.lock().expect("lock"), [1, 2]);
    }

    #[tokio::test]
    async fn waiters_wake_when_the_sync_lands() {
        let d = Arc::new(Durability::new(0));
        let seq = d.appended(1, 3);
        let waiter = {
            let d = d.clone();
            tokio::spawn(async move {
                d.wait_synced(seq).await;
                d.wait_durable(3).await;
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        d.synced(seq);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .expect("waiter");
    }
}
