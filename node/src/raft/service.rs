//! The node-to-node gRPC service: Raft RPCs into openraft, snapshot
//! streams into a file, forwarded writes into the proposer, read-index, and
//! the clock probe peers measure offsets with.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason::Reason;
use openraft::Snapshot;
use tokio::io::AsyncWriteExt;
use tonic::{Request, Response, Status, Streaming};

use crate::raft::codec;
use crate::raft::error::ProposeError;
use crate::raft::life::boot::RaftNode;
use crate::raft::life::founding::Founding;
use crate::raft::log::abstain::Abstention;
use crate::raft::log::durability::Durability;
use crate::raft::net::identity::Identity;
use crate::raft::net::intake::{self, Intake};
use crate::raft::net::peer_wire::Refusal;
use crate::raft::net::protocol::PeerProtocols;
use crate::raft::writes::proposer::Proposer;
use crate::raft::{Raft, TypeConfig};
use crate::state::snapshot::SnapshotDir;
use crate::storage::disk::Disk;

pub struct RaftService {
    raft: Raft,
    proposer: Arc<Proposer>,
    snapshots: Arc<SnapshotDir>,
    durability: Arc<Durability>,
    founding: Arc<Founding>,
    protocols: Arc<PeerProtocols>,
    identity: Identity,
    disk: Arc<Disk>,
    abstention: Arc<Abstention>,
    stopping: Arc<AtomicBool>,
}

impl RaftService {
    pub fn new(node: &RaftNode, snapshots: Arc<SnapshotDir>) -> Self {
        Self {
            raft: node.raft.clone(),
            proposer: node.proposer.clone(),
            snapshots,
            durability: node.durability.clone(),
            founding: node.founding.clone(),
            protocols: node.protocols.clone(),
            identity: node.identity.clone(),
            disk: node.disk.clone(),
            abstention: node.abstention.clone(),
            stopping: node.stopping.clone(),
        }
    }

    /// Refuses a vote or a leadership transfer (`what`) while this node
    /// sits elections out ([`raft::log::abstain`](crate::raft::log::abstain)).
    fn standing_for(&self, what: &str) -> Result<(), Status> {
        match self.abstention.refusal() {
            Some(why) => Err(Reason::Precondition.status(format!("refusing {what}: {why}"))),
            None => Ok(()),
        }
    }

    /// Whether this node holds a membership (it is in a cluster).
    fn has_membership(&self) -> bool {
        let metrics = self.raft.metrics();
        let m = metrics.borrow();
        m.membership_config.membership().nodes().next().is_some()
    }

    /// Receives a snapshot streamed by the leader into a file, and installs
    /// it.
    async fn receive_snapshot(
        &self,
        request: Request<Streaming<ipb::SnapshotChunk>>,
    ) -> Result<Response<ipb::InstallSnapshotResponse>, Status> {
        // Refused before a byte is written: the leader sends it again
        // once this node has room.
        self.disk.room().map_err(|m| Reason::DiskFull.status(m))?;
        let mut stream = request.into_inner();
        let first = stream
            .next()
            .await
            .ok_or_else(|| Reason::InvalidArgument.status("empty snapshot stream"))??;
        self.identity
            .admit(&first.cluster_id, "a snapshot")
            .map_err(|m| Reason::Precondition.status(m))?;
        let vote = codec::vote_from_pb(first.vote.as_ref()).map_err(malformed)?;
        let meta_pb = first
            .meta
            .ok_or_else(|| Reason::InvalidArgument.status("first snapshot chunk lacks meta"))?;
        let meta = codec::snapshot_meta_from_pb(&meta_pb).map_err(malformed)?;
        let path = self.snapshots.incoming_path(&meta.snapshot_id);
        let received = async {
            let mut file = tokio::fs::File::create(&path).await?;
            file.write_all(&first.data).await?;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(std::io::Error::other)?;
                file.write_all(&chunk.data).await?;
                crate::failpoints::hit(crate::failpoints::SNAPSHOT_RECEIVE_MID);
            }
            file.sync_all().await?;
            Ok::<(), std::io::Error>(())
        }
        .await;
        let received = match received {
            Ok(()) => verified(path.clone())
                .await
                .and_then(|got| as_announced(&got, &meta_pb)),
            Err(e) => Err(format!("receiving snapshot: {e}")),
        };
        if let Err(e) = received {
            let _ = tokio::fs::remove_file(&path).await;
            tracing::warn!(snapshot_id = %meta.snapshot_id, "refused a snapshot: {e}");
            return Err(Reason::SnapshotStream.status(e));
        }
        let file = tokio::fs::File::open(&path)
            .await
            .map_err(|e| Reason::Internal.status(format!("reopening snapshot: {e}")))?;
        let snapshot = Snapshot::<TypeConfig> {
            meta,
            snapshot: Box::new(file),
        };
        let resp = self.raft.install_full_snapshot(vote, snapshot).await.map_err(fatal);
        // Installed snapshots were renamed into place; anything left over
        // (a stale or refused snapshot) is removed.
        let _ = tokio::fs::remove_file(&path).await;
        Ok(Response::new(ipb::InstallSnapshotResponse {
            vote: Some(codec::vote_to_pb(&resp?.vote)),
        }))
    }
}

/// Reads a received snapshot file whole: one that is cut or damaged is
/// refused (the leader sends it again), never handed to Raft to install.
async fn verified(path: std::path::PathBuf) -> Result<ipb::SnapshotMeta, String> {
    let checked = tokio::task::spawn_blocking(move || crate::state::snapshot::verify(&path)).await;
    match checked {
        Ok(Ok(meta)) => Ok(meta),
        Ok(Err(e)) => Err(format!("received snapshot is damaged: {e}")),
        Err(e) => Err(format!("checking the received snapshot: {e}")),
    }
}

/// A received snapshot must hold the state the stream announced: a leader
/// whose next snapshot took the place of the one it was about to send
/// sends the new file under the old metadata, and installing it would stop
/// Raft here for good ("installed snapshot does not match its metadata";
/// found by the crash tests). Refused, the leader sends it again.
fn as_announced(got: &ipb::SnapshotMeta, announced: &ipb::SnapshotMeta) -> Result<(), String> {
    if got.last_log_id == announced.last_log_id && got.last_membership == announced.last_membership {
        return Ok(());
    }
    Err(format!(
        "received snapshot {} holds the state up to {:?}, not the {:?} it was sent as",
        announced.snapshot_id,
        got.last_log_id.as_ref().map(|l| l.index),
        announced.last_log_id.as_ref().map(|l| l.index)
    ))
}

/// Takes one AppendEntries from the leader, over gRPC.
pub async fn append_entries(
    raft: &Raft,
    identity: &Identity,
    durability: &Durability,
    disk: &Disk,
    request: ipb::AppendEntriesRequest,
) -> Result<ipb::AppendEntriesResponse, Refusal> {
    let resp = append_entries_unsynced(raft, identity, disk, request).await?;
    // The leader may count this answer towards a quorum, so it leaves only
    // when every append made so far is on disk.
    durability.wait_synced(durability.written()).await;
    Ok(resp)
}

/// Takes one AppendEntries from the leader. openraft answers once the
/// entries are in the log store, before they are synced (see
/// [`raft::log::durability`](crate::raft::log::durability)): the caller holds the answer until they are.
pub async fn append_entries_unsynced(
    raft: &Raft,
    identity: &Identity,
    disk: &Disk,
    request: ipb::AppendEntriesRequest,
) -> Result<ipb::AppendEntriesResponse, Refusal> {
    // Unavailable: the leader backs off from this node instead of retrying
    // at once.
    identity
        .admit(&request.cluster_id, "an AppendEntries")
        .map_err(Refusal::Unavailable)?;
    let req = codec::append_request_from_pb(request).map_err(|e| Refusal::Invalid(e.to_string()))?;
    // While the disk is full, what it may not take is cut off; the rest
    // goes to Raft, so the node keeps its leader (`raft::net::intake`).
    let (req, trimmed) = match intake::trim(req, Intake::of(&disk.report())) {
        Ok(req) => (req, None),
        Err(t) => (t.request, Some(t.matching)),
    };
    let resp = raft
        .append_entries(req)
        .await
        .map_err(|e| Refusal::Unavailable(format!("raft is not running: {e}")))?;
    let resp = match trimmed {
        Some(matching) => intake::answer(resp, matching),
        None => resp,
    };
    Ok(codec::append_response_to_pb(&resp))
}

fn malformed(e: codec::Malformed) -> Status {
    Reason::InvalidArgument.status(e.to_string())
}

fn fatal(e: impl std::fmt::Display) -> Status {
    ProposeError::Stopped(e.to_string()).into()
}

#[tonic::async_trait]
impl ipb::raft_server::Raft for RaftService {
    async fn append_entries(
        &self,
        request: Request<ipb::AppendEntriesRequest>,
    ) -> Result<Response<ipb::AppendEntriesResponse>, Status> {
        // Leaders send these over the Raft wire (`raft::net::peer_wire`); this is
        // for nodes of earlier versions, which speak only gRPC.
        match append_entries(
            &self.raft,
            &self.identity,
            &self.durability,
            &self.disk,
            request.into_inner(),
        )
        .await
        {
            Ok(resp) => Ok(Response::new(resp)),
            Err(Refusal::Invalid(m)) => Err(Reason::InvalidArgument.status(m)),
            Err(Refusal::Unavailable(m)) => Err(Reason::Shutdown.status(m)),
        }
    }

    async fn vote(&self, request: Request<ipb::VoteRequest>) -> Result<Response<ipb::VoteResponse>, Status> {
        let request = request.into_inner();
        self.identity
            .admit(&request.cluster_id, "a vote request")
            .map_err(|m| Reason::Precondition.status(m))?;
        self.standing_for("a vote")?;
        let req = codec::vote_request_from_pb(request).map_err(malformed)?;
        let resp = self.raft.vote(req).await.map_err(fatal)?;
        Ok(Response::new(codec::vote_response_to_pb(&resp)))
    }

    async fn install_snapshot(
        &self,
        request: Request<Streaming<ipb::SnapshotChunk>>,
    ) -> Result<Response<ipb::InstallSnapshotResponse>, Status> {
        let started = std::time::Instant::now();
        let installed = self.receive_snapshot(request).await;
        let r = crate::observe::metrics::recorders();
        crate::observe::metrics::Recorders::observe(&r.snapshot_receive_seconds, started, installed.is_ok());
        installed
    }

    async fn elect_now(
        &self,
        request: Request<ipb::ElectNowRequest>,
    ) -> Result<Response<ipb::ElectNowResponse>, Status> {
        let req = request.into_inner();
        tracing::info!(
            leader = req.leader_id,
            term = req.term,
            "asked to take over leadership: campaigning"
        );
        // A leader stopping with the rest of the cluster asks the next
        // voter at once rather than wait for this one.
        if self.stopping.load(Ordering::Relaxed) {
            return Err(Reason::Shutdown.status("this node is stopping: it takes no leadership over"));
        }
        self.disk.room().map_err(|m| Reason::DiskFull.status(m))?;
        self.standing_for("leadership")?;
        crate::raft::life::transfer::elect_now(&self.raft, &req)
            .await
            .map_err(|m| Reason::Precondition.status(m))?;
        Ok(Response::new(ipb::ElectNowResponse {}))
    }

    async fn forward(&self, request: Request<ipb::ForwardRequest>) -> Result<Response<ipb::ForwardResponse>, Status> {
        let cmd = request
            .into_inner()
            .command
            .ok_or_else(|| Reason::InvalidArgument.status("forward without a command"))?;
        let keys = crate::state::keys::conflict_keys(&cmd);
        let result = self.proposer.write(cmd, keys, true).await.map_err(Status::from)?;
        Ok(Response::new(ipb::ForwardResponse { result: Some(result) }))
    }

    async fn read_index(
        &self,
        _request: Request<ipb::ReadIndexRequest>,
    ) -> Result<Response<ipb::ReadIndexResponse>, Status> {
        let point = self.proposer.leader_read_point().await.map_err(Status::from)?;
        Ok(Response::new(ipb::ReadIndexResponse {
            index: point.index,
            leader_time_ms: point.time_ms,
        }))
    }

    async fn clock_probe(
        &self,
        request: Request<ipb::ClockProbeRequest>,
    ) -> Result<Response<ipb::ClockProbeResponse>, Status> {
        let asked = request.get_ref();
        self.protocols.heard(asked.from, asked.protocol_version);
        let clock = self.proposer.clock();
        Ok(Response::new(ipb::ClockProbeResponse {
            node_id: clock.id(),
            wall_ms: crate::clock::wall_ms(),
            initial_cluster_digest: self.founding.digest().to_vec(),
            has_membership: self.has_membership(),
            clock_trusted: clock.check().is_ok(),
            protocol_version: crate::raft::net::protocol::VERSION,
            disk_full: self.disk.report().full,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(index: u64) -> ipb::SnapshotMeta {
        ipb::SnapshotMeta {
            snapshot_id: format!("1-{index}"),
            last_log_id: Some(ipb::LogId {
                index,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_snapshot_is_taken_only_as_the_state_it_was_announced_as() {
        assert_eq!(as_announced(&meta(7), &meta(7)), Ok(()));
        let e = as_announced(&meta(9), &meta(7)).expect_err("another state");
        assert!(e.contains("up to Some(9)") && e.contains("Some(7)"), "{e}");
    }
}
