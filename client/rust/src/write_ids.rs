//! Write ids for exactly-once retries: every write of a client carries a
//! `(client_id, seq)` that every retry reuses, and the first of the
//! client's writes still incomplete, which tells the cluster that every
//! lower id is answered or abandoned.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use handlestore_proto::v1 as pb;
use rand::Rng;

/// One client's write ids: its random id, the next sequence number, and
/// the ids in flight.
pub(crate) struct WriteIds {
    client_id: u64,
    next_seq: AtomicU64,
    in_flight: Mutex<BTreeSet<u64>>,
}

impl WriteIds {
    /// Ids under a new random client id.
    pub(crate) fn new() -> Self {
        WriteIds {
            client_id: rand::rng().random_range(1..u64::MAX),
            next_seq: AtomicU64::new(1),
            in_flight: Mutex::new(BTreeSet::new()),
        }
    }

    /// The random id under which these writes are deduplicated.
    pub(crate) fn client_id(&self) -> u64 {
        self.client_id
    }

    /// Allocates a write id. Keep the ticket alive across all retries of
    /// the write.
    pub(crate) fn ticket(self: &Arc<Self>) -> WriteTicket {
        // The id is taken under the lock of the set it joins: taken outside
        // it, a thread could take id n, be preempted, and let another take
        // n + 1 and report n + 1 as its first incomplete write, after which
        // the cluster refuses write n as answered before.
        let (seq, first_incomplete_seq) = {
            let mut set = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
            set.insert(seq);
            (seq, set.first().copied().unwrap_or(seq))
        };
        WriteTicket {
            ids: self.clone(),
            id: pb::WriteId {
                client_id: self.client_id,
                seq,
                first_incomplete_seq,
            },
        }
    }
}

/// A write's identity for exactly-once retries; released when dropped.
pub(crate) struct WriteTicket {
    ids: Arc<WriteIds>,
    pub(crate) id: pb::WriteId,
}

impl Drop for WriteTicket {
    fn drop(&mut self) {
        self.ids
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id.seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write id tells the cluster that every lower id of its client is
    /// answered or abandoned (`first_incomplete_seq`); the cluster then
    /// refuses those ids. So no id may be issued claiming that while a lower
    /// one is still being issued or in flight, however the threads of a
    /// runtime interleave (seen in the bench at 256 writers: a mint refused
    /// as "below the first incomplete write").
    #[test]
    fn a_write_id_never_claims_a_lower_one_still_in_flight_is_done() {
        const THREADS: usize = 4;
        const PER_THREAD: usize = 20_000;
        let ids = Arc::new(WriteIds::new());
        // One clock for every thread: a ticket is stamped after it is issued
        // and before it is released.
        let clock = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (ids, clock) = (ids.clone(), clock.clone());
                std::thread::spawn(move || {
                    let mut seen = Vec::with_capacity(PER_THREAD);
                    for _ in 0..PER_THREAD {
                        let ticket = ids.ticket();
                        let issued = clock.fetch_add(1, Ordering::SeqCst);
                        let (seq, first) = (ticket.id.seq, ticket.id.first_incomplete_seq);
                        let released = clock.fetch_add(1, Ordering::SeqCst);
                        drop(ticket);
                        seen.push((seq, first, issued, released));
                    }
                    seen
                })
            })
            .collect();
        let mut all: Vec<_> = threads.into_iter().flat_map(|t| t.join().expect("thread")).collect();
        all.sort_unstable();
        assert_eq!(all.len(), THREADS * PER_THREAD);
        // released_before[i]: the latest release among ids 1..=i+1.
        let mut released_before = Vec::with_capacity(all.len());
        let mut latest = 0;
        for (i, &(seq, _, _, released)) in all.iter().enumerate() {
            assert_eq!(seq, i as u64 + 1, "ids are issued without gaps");
            latest = latest.max(released);
            released_before.push(latest);
        }
        for &(seq, first, issued, _) in &all {
            assert!(first <= seq, "id {seq} claims itself done ({first})");
            if first > 1 {
                let latest = released_before[first as usize - 2];
                assert!(
                    latest < issued,
                    "id {seq} claimed every id below {first} done while one of them was not yet released"
                );
            }
        }
    }
}
