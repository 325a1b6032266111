//! The peer protocol's version: what nodes speak to each other (the Raft
//! wire, the Raft gRPC service, the clock probe). Every clock probe carries
//! it both ways, every 500 ms, so each node knows what each peer speaks. A
//! peer this node cannot talk to, because it says another version or does
//! not serve the peer service at all (a build from before the service's
//! rename answers UNIMPLEMENTED), is logged and shown in `status` with the
//! reason, instead of failing silently.
//!
//! Version 1 is the protocol of builds from 2026-11-27 on; builds between
//! then and 2026-11-29 speak it without saying so (they send 0). Version 2
//! (2026-11-29) adds the cluster's name to Raft requests and the command
//! that sets it ([`raft::net::identity`](crate::raft::net::identity)); it speaks with 1, and a cluster is named
//! once every member speaks 2.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::raft::NodeId;

/// The version this build speaks.
pub const VERSION: u32 = 2;

/// How often a problem that lasts is logged again.
const WARN_EVERY: Duration = Duration::from_secs(300);

/// Why this node cannot talk to a peer that says `theirs`, if it cannot.
pub fn problem(peer: NodeId, theirs: u32) -> Option<String> {
    match theirs {
        0 | 1 | VERSION => None,
        v => Some(format!(
            "node {peer} speaks peer protocol {v}, this node {VERSION}: they cannot replicate to each \
             other; run builds that speak the same version"
        )),
    }
}

/// What a peer said of its protocol, as this node last heard it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerProtocol {
    pub id: NodeId,
    /// The version it said (0: it said none); unknown until heard.
    pub version: Option<u32>,
    /// Why this node cannot talk to it, if it cannot.
    pub problem: Option<String>,
}

#[derive(Default)]
struct Seen {
    peer: PeerProtocol,
    warned: Option<Instant>,
}

/// Every peer's protocol, from the clock probes this node sends and takes.
#[derive(Default)]
pub struct PeerProtocols {
    peers: Mutex<BTreeMap<NodeId, Seen>>,
}

impl PeerProtocols {
    /// A peer said it speaks `version` (in a probe or its answer).
    pub fn heard(&self, id: NodeId, version: u32) {
        self.note(id, Some(version), problem(id, version));
    }

    /// A probe of the peer failed with `code` and `message`: UNIMPLEMENTED
    /// means it serves no peer service this node knows.
    pub fn failed(&self, id: NodeId, code: tonic::Code, message: &str) {
        if code == tonic::Code::Unimplemented {
            let why = format!(
                "node {id} does not serve this node's peer service ({message}): it runs a build that speaks \
                 another peer protocol; run builds that speak the same version"
            );
            self.note(id, None, Some(why));
        }
    }

    /// Every peer heard of, by id.
    pub fn report(&self) -> Vec<PeerProtocol> {
        let peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        peers.values().map(|s| s.peer.clone()).collect()
    }

    fn note(&self, id: NodeId, version: Option<u32>, problem: Option<String>) {
        let mut peers = self.peers.lock().unwrap_or_else(|e| e.into_inner());
        let seen = peers.entry(id).or_default();
        let changed = seen.peer.problem != problem;
        match &problem {
            Some(p) if changed || seen.warned.is_none_or(|t| t.elapsed() >= WARN_EVERY) => {
                tracing::warn!(peer = id, "{p}");
                seen.warned = Some(Instant::now());
            }
            None if changed => tracing::info!(peer = id, "node {id} speaks this node's peer protocol again"),
            _ => {}
        }
        seen.peer = PeerProtocol { id, version, problem };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_of_another_version_or_without_the_service_is_a_problem_until_it_speaks_ours() {
        let p = PeerProtocols::default();
        p.heard(2, VERSION);
        p.heard(3, 0);
        p.heard(4, VERSION + 1);
        p.heard(6, 1);
        p.failed(5, tonic::Code::Unimplemented, "handlestore.internal.v1.Raft");
        p.failed(2, tonic::Code::Unavailable, "connection refused");
        let problems: Vec<(NodeId, bool)> = p.report().iter().map(|x| (x.id, x.problem.is_some())).collect();
        assert_eq!(problems, vec![(2, false), (3, false), (4, true), (5, true), (6, false)]);
        p.heard(4, VERSION);
        assert!(p.report().iter().all(|x| x.id == 5 || x.problem.is_none()));
    }
}
