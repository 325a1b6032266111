//! Conversions between openraft's types and their prost messages: the same
//! encoding is used on the wire between nodes and for log entries on disk.

use std::collections::{BTreeMap, BTreeSet};

use handlestore_proto::internal::v1 as ipb;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, VoteRequest, VoteResponse};
use openraft::{EntryPayload, LeaderId};

use crate::config::Member;

use crate::raft::payload::Payload;
use crate::raft::{Entry, LogId, Membership, NodeId, SnapshotMeta, StoredMembership, TypeConfig, Vote};

/// A message from a peer (or from disk) that lacks a required field, or
/// holds one that does not decode.
#[derive(Debug, thiserror::Error)]
#[error("malformed {0}: missing or undecodable")]
pub struct Malformed(pub &'static str);

type Res<T> = Result<T, Malformed>;

pub fn leader_id_to_pb(l: &LeaderId<NodeId>) -> ipb::LeaderId {
    ipb::LeaderId {
        term: l.term,
        node_id: l.node_id,
    }
}

pub fn leader_id_from_pb(l: Option<&ipb::LeaderId>) -> Res<LeaderId<NodeId>> {
    let l = l.ok_or(Malformed("leader_id"))?;
    Ok(LeaderId::new(l.term, l.node_id))
}

pub fn log_id_to_pb(l: &LogId) -> ipb::LogId {
    ipb::LogId {
        leader_id: Some(leader_id_to_pb(&l.leader_id)),
        index: l.index,
    }
}

pub fn log_id_from_pb(l: &ipb::LogId) -> Res<LogId> {
    Ok(LogId::new(leader_id_from_pb(l.leader_id.as_ref())?, l.index))
}

pub fn opt_log_id_to_pb(l: &Option<LogId>) -> Option<ipb::LogId> {
    l.as_ref().map(log_id_to_pb)
}

pub fn opt_log_id_from_pb(l: &Option<ipb::LogId>) -> Res<Option<LogId>> {
    l.as_ref().map(log_id_from_pb).transpose()
}

pub fn vote_to_pb(v: &Vote) -> ipb::Vote {
    ipb::Vote {
        leader_id: Some(leader_id_to_pb(&v.leader_id)),
        committed: v.committed,
    }
}

pub fn vote_from_pb(v: Option<&ipb::Vote>) -> Res<Vote> {
    let v = v.ok_or(Malformed("vote"))?;
    let leader = leader_id_from_pb(v.leader_id.as_ref())?;
    Ok(if v.committed {
        Vote::new_committed(leader.term, leader.node_id)
    } else {
        Vote::new(leader.term, leader.node_id)
    })
}

pub fn membership_to_pb(m: &Membership) -> ipb::Membership {
    ipb::Membership {
        configs: m
            .get_joint_config()
            .iter()
            .map(|c| ipb::NodeSet {
                ids: c.iter().copied().collect(),
            })
            .collect(),
        nodes: m.nodes().map(|(id, n)| (*id, n.addr.clone())).collect(),
        peer_addrs: m
            .nodes()
            .filter(|(_, n)| !n.peer_addr.is_empty())
            .map(|(id, n)| (*id, n.peer_addr.clone()))
            .collect(),
    }
}

pub fn membership_from_pb(m: &ipb::Membership) -> Membership {
    let configs: Vec<BTreeSet<NodeId>> = m.configs.iter().map(|c| c.ids.iter().copied().collect()).collect();
    let nodes: BTreeMap<NodeId, Member> = m
        .nodes
        .iter()
        .map(|(id, addr)| {
            (
                *id,
                Member::new(addr, m.peer_addrs.get(id).cloned().unwrap_or_default()),
            )
        })
        .collect();
    Membership::new(configs, nodes)
}

pub fn stored_membership_to_pb(m: &StoredMembership) -> ipb::StoredMembership {
    ipb::StoredMembership {
        log_id: opt_log_id_to_pb(m.log_id()),
        membership: Some(membership_to_pb(m.membership())),
    }
}

pub fn stored_membership_from_pb(m: &ipb::StoredMembership) -> Res<StoredMembership> {
    let membership = m.membership.as_ref().ok_or(Malformed("membership"))?;
    Ok(StoredMembership::new(
        opt_log_id_from_pb(&m.log_id)?,
        membership_from_pb(membership),
    ))
}

/// An entry for the wire and the log (`WireEntry` in internal/v1/log.proto, encoded
/// exactly as `Entry`): a normal entry's proposal goes as the bytes it was
/// encoded to once (see `payload`), shared, not copied.
pub fn entry_to_wire(e: &Entry) -> ipb::WireEntry {
    use ipb::wire_entry::Payload as P;
    let payload = match &e.payload {
        EntryPayload::Blank => P::Blank(ipb::Blank {}),
        EntryPayload::Normal(p) => P::Normal(p.encoded().clone()),
        EntryPayload::Membership(m) => P::Membership(membership_to_pb(m)),
    };
    ipb::WireEntry {
        log_id: Some(log_id_to_pb(&e.log_id)),
        payload: Some(payload),
    }
}

pub fn entry_from_wire(e: ipb::WireEntry) -> Res<Entry> {
    use ipb::wire_entry::Payload as P;
    let log_id = log_id_from_pb(e.log_id.as_ref().ok_or(Malformed("entry.log_id"))?)?;
    let payload = match e.payload.ok_or(Malformed("entry.payload"))? {
        P::Blank(_) => EntryPayload::Blank,
        P::Normal(bytes) => EntryPayload::Normal(Payload::decode(bytes).map_err(|_| Malformed("entry.normal"))?),
        P::Membership(m) => EntryPayload::Membership(membership_from_pb(&m)),
    };
    Ok(Entry { log_id, payload })
}

pub fn append_request_to_pb(r: &AppendEntriesRequest<TypeConfig>) -> ipb::AppendEntriesRequest {
    ipb::AppendEntriesRequest {
        vote: Some(vote_to_pb(&r.vote)),
        prev_log_id: opt_log_id_to_pb(&r.prev_log_id),
        entries: r.entries.iter().map(entry_to_wire).collect(),
        leader_commit: opt_log_id_to_pb(&r.leader_commit),
        // Set by the sender (raft::net::network), which knows the cluster.
        cluster_id: String::new(),
    }
}

pub fn append_request_from_pb(r: ipb::AppendEntriesRequest) -> Res<AppendEntriesRequest<TypeConfig>> {
    Ok(AppendEntriesRequest {
        vote: vote_from_pb(r.vote.as_ref())?,
        prev_log_id: opt_log_id_from_pb(&r.prev_log_id)?,
        leader_commit: opt_log_id_from_pb(&r.leader_commit)?,
        entries: r.entries.into_iter().map(entry_from_wire).collect::<Res<_>>()?,
    })
}

pub fn append_response_to_pb(r: &AppendEntriesResponse<NodeId>) -> ipb::AppendEntriesResponse {
    use ipb::append_entries_response::Result as R;
    let result = match r {
        AppendEntriesResponse::Success => R::Success(ipb::Blank {}),
        AppendEntriesResponse::PartialSuccess(m) => R::PartialSuccess(ipb::PartialSuccess {
            matching: opt_log_id_to_pb(m),
        }),
        AppendEntriesResponse::Conflict => R::Conflict(ipb::Blank {}),
        AppendEntriesResponse::HigherVote(v) => R::HigherVote(vote_to_pb(v)),
    };
    ipb::AppendEntriesResponse { result: Some(result) }
}

pub fn append_response_from_pb(r: ipb::AppendEntriesResponse) -> Res<AppendEntriesResponse<NodeId>> {
    use ipb::append_entries_response::Result as R;
    Ok(match r.result.ok_or(Malformed("append_entries.result"))? {
        R::Success(_) => AppendEntriesResponse::Success,
        R::PartialSuccess(p) => AppendEntriesResponse::PartialSuccess(opt_log_id_from_pb(&p.matching)?),
        R::Conflict(_) => AppendEntriesResponse::Conflict,
        R::HigherVote(v) => AppendEntriesResponse::HigherVote(vote_from_pb(Some(&v))?),
    })
}

pub fn vote_request_to_pb(r: &VoteRequest<NodeId>) -> ipb::VoteRequest {
    ipb::VoteRequest {
        vote: Some(vote_to_pb(&r.vote)),
        last_log_id: opt_log_id_to_pb(&r.last_log_id),
        cluster_id: String::new(),
    }
}

pub fn vote_request_from_pb(r: ipb::VoteRequest) -> Res<VoteRequest<NodeId>> {
    Ok(VoteRequest {
        vote: vote_from_pb(r.vote.as_ref())?,
        last_log_id: opt_log_id_from_pb(&r.last_log_id)?,
    })
}

pub fn vote_response_to_pb(r: &VoteResponse<NodeId>) -> ipb::VoteResponse {
    ipb::VoteResponse {
        vote: Some(vote_to_pb(&r.vote)),
        vote_granted: r.vote_granted,
        last_log_id: opt_log_id_to_pb(&r.last_log_id),
    }
}

pub fn vote_response_from_pb(r: ipb::VoteResponse) -> Res<VoteResponse<NodeId>> {
    Ok(VoteResponse {
        vote: vote_from_pb(r.vote.as_ref())?,
        vote_granted: r.vote_granted,
        last_log_id: opt_log_id_from_pb(&r.last_log_id)?,
    })
}

pub fn snapshot_meta_to_pb(m: &SnapshotMeta) -> ipb::SnapshotMeta {
    ipb::SnapshotMeta {
        last_log_id: opt_log_id_to_pb(&m.last_log_id),
        last_membership: Some(stored_membership_to_pb(&m.last_membership)),
        snapshot_id: m.snapshot_id.clone(),
        format_version: crate::storage::format::CURRENT,
    }
}

pub fn snapshot_meta_from_pb(m: &ipb::SnapshotMeta) -> Res<SnapshotMeta> {
    Ok(SnapshotMeta {
        last_log_id: opt_log_id_from_pb(&m.last_log_id)?,
        last_membership: match &m.last_membership {
            Some(sm) => stored_membership_from_pb(sm)?,
            None => StoredMembership::default(),
        },
        snapshot_id: m.snapshot_id.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use handlestore_proto::v1 as pb;

    #[test]
    fn entry_round_trip() {
        let lid = LogId::new(LeaderId::new(3, 2), 17);
        let nodes: BTreeMap<NodeId, Member> = [(1, Member::new("a:1", "")), (2, Member::new("b:2", "b:3"))].into();
        let m = Membership::new(vec![[1, 2].into()], nodes);
        for payload in [
            EntryPayload::Blank,
            EntryPayload::Normal(Payload::new(ipb::Proposal {
                stamp_ms: 9,
                commands: vec![ipb::Command::default()],
            })),
            EntryPayload::Membership(m),
        ] {
            let e = Entry { log_id: lid, payload };
            let back = entry_from_wire(entry_to_wire(&e)).expect("decodes");
            assert_eq!(format!("{e:?}"), format!("{back:?}"));
        }
    }

    #[test]
    fn a_wire_entry_is_encoded_exactly_as_the_entry_it_carries() {
        // Logs written as `Entry` read back as `WireEntry`, and nodes that
        // decode `Entry` read what this one sends.
        use prost::Message;
        let proposal = ipb::Proposal {
            stamp_ms: 5,
            commands: vec![ipb::Command {
                write_id: Some(pb::WriteId {
                    client_id: 1,
                    seq: 2,
                    first_incomplete_seq: 2,
                }),
                op: None,
                ..Default::default()
            }],
        };
        let log_id = Some(ipb::LogId {
            leader_id: Some(ipb::LeaderId { term: 2, node_id: 1 }),
            index: 40,
        });
        let old = ipb::Entry {
            log_id,
            payload: Some(ipb::entry::Payload::Normal(proposal.clone())),
        }
        .encode_to_vec();
        let e = Entry {
            log_id: log_id_from_pb(log_id.as_ref().expect("set")).expect("log id"),
            payload: EntryPayload::Normal(Payload::new(proposal.clone())),
        };
        assert_eq!(entry_to_wire(&e).encode_to_vec(), old);
        let back = entry_from_wire(ipb::WireEntry::decode(old.as_slice()).expect("decodes")).expect("entry");
        assert!(matches!(back.payload, EntryPayload::Normal(p) if p.proposal() == &proposal));
        let broken = ipb::WireEntry {
            log_id,
            payload: Some(ipb::wire_entry::Payload::Normal(bytes::Bytes::from_static(&[0xff]))),
        };
        assert!(entry_from_wire(broken).is_err());
    }

    #[test]
    fn votes_round_trip() {
        for v in [Vote::new(5, 1), Vote::new_committed(6, 2)] {
            assert_eq!(vote_from_pb(Some(&vote_to_pb(&v))).expect("decodes"), v);
        }
        assert!(vote_from_pb(None).is_err());
    }
}
