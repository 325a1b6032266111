//! The Admin service (admin.proto): status, membership, snapshots.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use tonic::{Request, Response, Status};

use super::{Api, Credentials, Need};
use crate::clock::ClockReport;
use crate::config::Member;
use crate::raft::NodeId;
use crate::raft::ProposeError;
use crate::raft::RaftAdmin;
use crate::state::snapshot::SnapshotDir;
use crate::status;
use crate::storage::disk::DiskReport;
use pb::Access;

/// Reads where the node's memory is (the node assembles it from the
/// storage layers, which this service does not touch).
pub type MemoryProbe = Arc<dyn Fn() -> pb::Memory + Send + Sync>;

pub struct AdminService {
    api: Arc<Api>,
    raft: RaftAdmin,
    id: NodeId,
    addr: String,
    log_syncs: Arc<AtomicU64>,
    memory: MemoryProbe,
    /// Where backups are built before they are streamed.
    snapshots: Arc<SnapshotDir>,
}

impl AdminService {
    pub fn new(
        api: Arc<Api>,
        raft: RaftAdmin,
        id: NodeId,
        addr: String,
        log_syncs: Arc<AtomicU64>,
        memory: MemoryProbe,
        snapshots: Arc<SnapshotDir>,
    ) -> Self {
        Self {
            api,
            raft,
            id,
            addr,
            log_syncs,
            memory,
            snapshots,
        }
    }

    /// Checks the caller may do `need`.
    async fn authorize<T>(&self, request: &Request<T>, need: &Need<'_>) -> Result<(), Status> {
        self.api.decide(&Credentials::of(request), need).await.map(|_| ())
    }

    /// Membership changes must run on the leader; elsewhere answer with the
    /// leader's address so the caller can go there.
    fn require_leader(&self) -> Result<(), Status> {
        let view = self.api.proposer.leader_view();
        if view.is_leader() {
            Ok(())
        } else {
            Err(ProposeError::NotLeader(view.leader).into())
        }
    }
}

fn ring_key(k: ipb::KeyRecord, include_secret: bool) -> pb::RingKey {
    pb::RingKey {
        id: k.id,
        state: if k.state == ipb::KeyState::KeyPrimary as i32 {
            "primary"
        } else {
            "active"
        }
        .into(),
        created_ms: k.created_ms,
        secret: if include_secret { k.secret } else { Vec::new() },
    }
}

impl AdminService {
    /// Where the memory is, watch delivery's part included.
    fn memory_now(&self) -> pb::Memory {
        let watches = &self.api.watches;
        let recent = self.api.state.recent();
        pb::Memory {
            watch: (recent.bytes() + watches.used()) as u64,
            watch_budget: (recent.limit() + watches.limit()) as u64,
            watchers: watches.watchers() as u64,
            watchers_cut: watches.cut_count(),
            ..(self.memory)()
        }
    }

    /// Applies a key ring change and answers with the ring after it.
    async fn change_ring(
        &self,
        creds: &Credentials,
        ns: String,
        write_id: Option<pb::WriteId>,
        op: ipb::command::Op,
        what: &str,
    ) -> Result<Response<pb::KeyringResponse>, Status> {
        let need = Need::namespace(&ns, Access::Admin);
        let res = self.api.apply_as(creds, need, write_id, op).await?;
        tracing::info!(namespace = %ns, key = %res.id, "{what}");
        let keys = self.ring(ns, false).await?;
        Ok(Response::new(pb::KeyringResponse {
            keys,
            key_id: res.id,
            revision: res.revision,
        }))
    }

    async fn ring(&self, ns: String, include_secrets: bool) -> Result<Vec<pb::RingKey>, Status> {
        let state = self.api.state.clone();
        let keys = super::blocking(move || state.keyring(&ns)).await?;
        Ok(keys.into_iter().map(|k| ring_key(k, include_secrets)).collect())
    }
}

fn clock_status(r: &ClockReport) -> pb::ClockStatus {
    pb::ClockStatus {
        offset_ms: r.offset_ms,
        max_offset_ms: r.max_offset_ms,
        trusted: r.error.is_none(),
        error: r.error.as_ref().map(ToString::to_string).unwrap_or_default(),
        peers: r
            .peers
            .iter()
            .map(|p| pb::PeerClock {
                id: p.id,
                offset_ms: p.offset_ms,
                rtt_ms: p.rtt_ms,
                age_ms: p.age_ms,
            })
            .collect(),
    }
}

fn disk_status(r: &DiskReport) -> pb::DiskStatus {
    let problem = match (r.problem(), r.slow()) {
        (Some(p), _) => p,
        (None, true) => format!(
            "slow disk: a log sync takes {} ms lately; every write this node is counted in waits for it",
            r.sync_time.as_millis()
        ),
        (None, false) => String::new(),
    };
    pb::DiskStatus {
        free_bytes: r.free_bytes,
        min_free_bytes: r.min_free_bytes,
        full: r.full,
        sync_ms: r.sync_time.as_secs_f64() * 1000.0,
        slow: r.slow(),
        problem,
        size_unknown: r.size_unknown,
    }
}

#[tonic::async_trait]
impl pb::admin_server::Admin for AdminService {
    async fn status(&self, request: Request<pb::StatusRequest>) -> Result<Response<pb::StatusResponse>, Status> {
        let d = self
            .api
            .decide(&Credentials::of(&request), &Need::Authenticated)
            .await?;
        // Tenants' names and usage, for root only.
        let namespaces = if d.allows(&Need::Root) {
            super::auth::service::namespaces(&self.api, d.view())?
        } else {
            Vec::new()
        };
        let view = self.api.proposer.leader_view();
        let r = self.raft.status();
        Ok(Response::new(pb::StatusResponse {
            node_id: self.id,
            addr: self.addr.clone(),
            state: r.state.into(),
            leader_id: view.leader.as_ref().map(|l| l.id).unwrap_or(0),
            leader_addr: view.leader.as_ref().map(|l| l.addr.clone()).unwrap_or_default(),
            term: r.term,
            last_log_index: r.last_log_index,
            applied_index: r.applied_index,
            snapshot_index: r.snapshot_index,
            purged_index: r.purged_index,
            members: self.raft.members(),
            millis_since_quorum_ack: r.millis_since_quorum_ack,
            version: env!("CARGO_PKG_VERSION").into(),
            log_syncs: self.log_syncs.load(Ordering::Relaxed),
            memory: Some(self.memory_now()),
            forwarded_writes: self.api.proposer.forwarded_writes(),
            clock: Some(clock_status(&self.api.proposer.clock().report())),
            namespaces,
            protocol_version: crate::raft::PROTOCOL_VERSION,
            peer_protocols: self.raft.peer_protocols(),
            cluster_id: self.api.state.cluster_id().to_string(),
            disk: Some(disk_status(&self.api.proposer.disk().report())),
        }))
    }

    async fn add_learner(
        &self,
        request: Request<pb::AddLearnerRequest>,
    ) -> Result<Response<pb::MembershipResponse>, Status> {
        self.authorize(&request, &Need::Root).await?;
        let r = request.into_inner();
        if r.id == 0 {
            return Err(status::invalid("node id 0 is reserved"));
        }
        crate::config::check_addr(&r.addr).map_err(status::invalid)?;
        if !r.peer_addr.is_empty() {
            crate::config::check_addr(&r.peer_addr).map_err(status::invalid)?;
        }
        self.require_leader()?;
        let member = Member::new(r.addr, r.peer_addr);
        tracing::info!(node = r.id, addr = %member, "adding learner");
        let log_index = self
            .raft
            .add_learner(r.id, member, r.blocking)
            .await
            .map_err(Status::from)?;
        tracing::info!(node = r.id, "added learner");
        Ok(Response::new(pb::MembershipResponse {
            members: self.raft.members(),
            log_index,
        }))
    }

    async fn change_membership(
        &self,
        request: Request<pb::ChangeMembershipRequest>,
    ) -> Result<Response<pb::MembershipResponse>, Status> {
        self.authorize(&request, &Need::Root).await?;
        let r = request.into_inner();
        if r.voters.is_empty() {
            return Err(status::invalid("a cluster needs at least one voter"));
        }
        let known: BTreeSet<NodeId> = self.raft.members().iter().map(|m| m.id).collect();
        if let Some(unknown) = r.voters.iter().find(|v| !known.contains(v)) {
            return Err(status::invalid(format!(
                "node {unknown} is not a member; add it as a learner first"
            )));
        }
        self.require_leader()?;
        let voters: BTreeSet<NodeId> = r.voters.into_iter().collect();
        let log_index = self
            .raft
            .change_membership(voters.clone(), r.retain)
            .await
            .map_err(Status::from)?;
        tracing::info!(?voters, "changed membership");
        Ok(Response::new(pb::MembershipResponse {
            members: self.raft.members(),
            log_index,
        }))
    }

    async fn keyring_list(
        &self,
        request: Request<pb::KeyringListRequest>,
    ) -> Result<Response<pb::KeyringResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let ns = super::validate::namespace(&r.namespace, &self.api.limits)?;
        // Secrets sign and open every replica's request state: their own
        // permission. The ids alone are namespace-wide reads.
        let access = if r.include_secrets {
            Access::Keyring
        } else {
            Access::Read
        };
        let need = Need::namespace(&ns, access);
        let revision = self.api.read_as(&creds, &need, r.read.as_ref()).await?.0.revision;
        let keys = self.ring(ns, r.include_secrets).await?;
        Ok(Response::new(pb::KeyringResponse {
            keys,
            key_id: String::new(),
            revision,
        }))
    }

    async fn keyring_rotate(
        &self,
        request: Request<pb::KeyringRotateRequest>,
    ) -> Result<Response<pb::KeyringResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let ns = super::validate::namespace(&r.namespace, &self.api.limits)?;
        // The secret is drawn here, on the leader, from the OS CSPRNG, and
        // replicated inside the command.
        self.require_leader()?;
        let secret: [u8; 32] = rand::random();
        let op = ipb::command::Op::KeyringRotate(ipb::KeyringRotate {
            namespace: ns.clone(),
            secret: secret.to_vec(),
            create_only: r.create,
        });
        self.change_ring(&creds, ns, r.write_id, op, "key ring rotated").await
    }

    async fn keyring_retire(
        &self,
        request: Request<pb::KeyringRetireRequest>,
    ) -> Result<Response<pb::KeyringResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let ns = super::validate::namespace(&r.namespace, &self.api.limits)?;
        if r.key_id.is_empty() || r.key_id.len() > 64 {
            return Err(status::invalid("key_id must be 1 to 64 characters"));
        }
        let op = ipb::command::Op::KeyringRetire(ipb::KeyringRetire {
            namespace: ns.clone(),
            key_id: r.key_id,
        });
        self.change_ring(&creds, ns, r.write_id, op, "key retired").await
    }

    async fn transfer_leader(
        &self,
        request: Request<pb::TransferLeaderRequest>,
    ) -> Result<Response<pb::TransferLeaderResponse>, Status> {
        self.authorize(&request, &Need::Root).await?;
        let to = Some(request.into_inner().to).filter(|id| *id != 0);
        self.require_leader()?;
        let t = self
            .raft
            .transfer_leader(to, crate::raft::TRANSFER_WITHIN)
            .await
            .map_err(Status::from)?;
        tracing::info!(
            to = t.to,
            term = t.term,
            took_ms = t.took.as_millis() as u64,
            "handed leadership over"
        );
        Ok(Response::new(pb::TransferLeaderResponse {
            leader_id: t.to,
            term: t.term,
            took_ms: t.took.as_millis() as u64,
        }))
    }

    type SnapshotSaveStream = super::backup::SaveStream;

    async fn snapshot_save(
        &self,
        request: Request<pb::SnapshotSaveRequest>,
    ) -> Result<Response<Self::SnapshotSaveStream>, Status> {
        let creds = Credentials::of(&request);
        let stream = super::backup::save(&self.api, self.snapshots.clone(), &creds).await?;
        Ok(Response::new(stream))
    }

    async fn snapshot(&self, request: Request<pb::SnapshotRequest>) -> Result<Response<pb::SnapshotResponse>, Status> {
        self.authorize(&request, &Need::Root).await?;
        let (snapshot_index, purged_index) = self.raft.snapshot(self.api.state.applied_index()).await?;
        Ok(Response::new(pb::SnapshotResponse {
            snapshot_index,
            purged_index,
        }))
    }
}
