//! How much one AppendEntries may carry.
//!
//! openraft reads up to `max_payload_entries` (256) entries into one
//! request, and an entry is a batch of writes of up to
//! `max_batch_bytes` (4 MiB): a follower that fell behind while large
//! values were written (it was down, or its disk was full) was sent
//! requests of hundreds of MiB, which no follower takes within the
//! deadline openraft gives one (a heartbeat interval), so the same request
//! was read, sent and timed out again and again, and the follower never
//! caught up (seen: 20 s of timeouts after a full disk was freed, two
//! nodes each believing it led). A request past [`MAX_APPEND_BYTES`] is
//! not sent: openraft is told it is too large, with the number of entries
//! that fit, and sends that many for its next requests (its
//! `PayloadTooLarge` hint).

use openraft::EntryPayload;
use openraft::raft::AppendEntriesRequest;

use crate::raft::TypeConfig;

/// The most entry bytes one AppendEntries carries (one entry always goes,
/// whatever its size).
pub const MAX_APPEND_BYTES: usize = 4 << 20;

/// How many of `request`'s entries fit in `budget` bytes (at least one),
/// if not all do.
pub fn entries_that_fit(request: &AppendEntriesRequest<TypeConfig>, budget: usize) -> Option<u64> {
    let mut bytes = 0usize;
    for (n, entry) in request.entries.iter().enumerate() {
        bytes = bytes.saturating_add(size(&entry.payload));
        if bytes > budget {
            return Some(n.max(1) as u64);
        }
    }
    None
}

fn size(payload: &EntryPayload<TypeConfig>) -> usize {
    match payload {
        EntryPayload::Normal(p) => p.encoded().len(),
        EntryPayload::Blank | EntryPayload::Membership(_) => 64,
    }
}

#[cfg(test)]
mod tests {
    use handlestore_proto::internal::v1 as ipb;
    use openraft::{CommittedLeaderId, LogId, Vote};

    use super::*;
    use crate::raft::Entry;
    use crate::raft::payload::Payload;

    fn entry(index: u64, bytes: usize) -> Entry {
        let proposal = ipb::Proposal {
            commands: vec![ipb::Command {
                op: Some(ipb::command::Op::HandleWrite(ipb::HandleWrite {
                    value: vec![7; bytes],
                    ..Default::default()
                })),
                ..Default::default()
            }],
            ..Default::default()
        };
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(Payload::new(proposal)),
        }
    }

    fn req(sizes: &[usize]) -> AppendEntriesRequest<TypeConfig> {
        AppendEntriesRequest {
            vote: Vote::new_committed(1, 1),
            prev_log_id: None,
            entries: sizes.iter().enumerate().map(|(i, s)| entry(i as u64 + 1, *s)).collect(),
            leader_commit: None,
        }
    }

    #[test]
    fn a_request_within_the_budget_goes_whole() {
        assert_eq!(entries_that_fit(&req(&[1000, 1000]), 10_000), None);
        assert_eq!(entries_that_fit(&req(&[]), 10), None);
    }

    #[test]
    fn a_larger_one_is_cut_to_what_fits_and_never_to_nothing() {
        assert_eq!(entries_that_fit(&req(&[4000, 4000, 4000]), 10_000), Some(2));
        assert_eq!(
            entries_that_fit(&req(&[20_000, 10]), 10_000),
            Some(1),
            "one entry always goes"
        );
    }
}
