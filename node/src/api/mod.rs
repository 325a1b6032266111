//! Client-facing gRPC services: input validation, the read gate, and the
//! mapping of command results to gRPC statuses. Writes go to `raft`
//! (proposer), reads come from `state`; nothing here touches RocksDB,
//! and nothing here uses `server` or `cli`, which sit above.

pub mod admin;
pub mod auth;
pub mod backup;
pub mod handles;
pub mod handles_admin;
pub mod read;
pub mod reads;
pub mod state;
pub mod validate;
pub mod watch;
pub mod writes;

use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use tonic::Status;

use crate::config::Limits;
use crate::observe::logs::request::{stage, stage_now};
use crate::raft::Proposer;
use crate::state::StateStore;
use crate::status;
pub use auth::{Credentials, Decision, Need};

/// How often a write is authorized again after the auth state changed
/// under it, before the caller is told to retry.
const AUTH_ATTEMPTS: usize = 3;

/// What every client-facing service needs.
pub struct Api {
    pub limits: Limits,
    pub state: Arc<StateStore>,
    pub proposer: Arc<Proposer>,
    pub reads: read::ReadGate,
    pub guard: auth::Guard,
    /// What watchers' clients have not taken yet, within its budget.
    pub watches: Arc<watch::WatchBudget>,
}

impl Api {
    /// Authorizes `need` and proposes one operation under the caller's
    /// write id (exactly-once).
    pub async fn apply_as(
        &self,
        creds: &Credentials,
        need: Need<'_>,
        write_id: Option<pb::WriteId>,
        op: ipb::command::Op,
    ) -> Result<ipb::CommandResult, Status> {
        self.write_authorized(creds, &need, |_| Ok((write_id, op.clone())))
            .await
    }

    /// Authorizes `need`, builds the command from the decision, proposes
    /// it at the decision's auth revision, and turns a failed result into a
    /// status. When the auth state changed before the command applied, it
    /// is refused unapplied: wait for that change here, decide and build
    /// again.
    pub async fn write_authorized(
        &self,
        creds: &Credentials,
        need: &Need<'_>,
        mut build: impl FnMut(&Decision) -> Result<(Option<pb::WriteId>, ipb::command::Op), Status>,
    ) -> Result<ipb::CommandResult, Status> {
        for _ in 0..AUTH_ATTEMPTS {
            let d = self.decide(creds, need).await?;
            let (write_id, op) = build(&d)?;
            let cmd = ipb::Command {
                write_id,
                op: Some(op),
                auth_revision: Some(d.revision()),
                subject: d.user().unwrap_or_default().to_string(),
                all_owners: d.sees_all_owners(need),
            };
            let keys = crate::state::keys::conflict_keys(&cmd);
            let res = stage("commit", self.proposer.write(cmd, keys, false))
                .await
                .map_err(Status::from)?;
            if res.code == ipb::ResultCode::ResultAuthStale as i32 {
                self.reads.wait_applied(res.current_revision).await?;
                continue;
            }
            return result_status(res);
        }
        Err(Reason::AuthChanging.status("the auth state kept changing while this write was authorized; retry"))
    }

    /// Decides `need` against this node's auth state and, if that
    /// refuses, once more after catching up with the leader: a grant, a
    /// new user or a new token may not have reached this node yet.
    pub async fn decide(&self, creds: &Credentials, need: &Need<'_>) -> Result<Decision, Status> {
        if let Ok(d) = self.guard.check(creds, need) {
            return Ok(d);
        }
        self.reads.ready(None).await?;
        self.guard.check(creds, need)
    }

    /// Waits at the read gate, then authorizes the read at the auth state
    /// the gate brought this node to: a linearizable read is judged by the
    /// auth state at its read index, an at-least read by one at least that
    /// new, a stale read by this node's.
    pub async fn read_as(
        &self,
        creds: &Credentials,
        need: &Need<'_>,
        opts: Option<&pb::ReadOptions>,
    ) -> Result<(read::ReadAt, Decision), Status> {
        let at = self.reads.ready(opts).await?;
        Ok((at, self.guard.check(creds, need)?))
    }
}

/// Maps a command's (deterministic) failure to its gRPC status.
pub fn result_status(r: ipb::CommandResult) -> Result<ipb::CommandResult, Status> {
    if r.code == ipb::ResultCode::ResultOk as i32 {
        return Ok(r);
    }
    Err(status::refused(&r))
}

/// Runs a single-key read on the calling task: one point lookup (memtable,
/// block cache, at worst one block from disk) costs less than handing it to
/// the blocking pool and back, which measured 10-40% of linearizable get
/// throughput. Scans (listing, counting, many keys) use `blocking`.
pub fn point_read<T>(f: impl FnOnce() -> crate::state::Result<T>) -> Result<T, Status> {
    stage_now("read", f).map_err(read_error)
}

/// Runs blocking state reads (scans) off the async runtime.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::state::Result<T> + Send + 'static,
) -> Result<T, Status> {
    stage("read", tokio::task::spawn_blocking(f))
        .await
        .map_err(|e| status::internal(format!("read task failed: {e}")))?
        .map_err(read_error)
}

/// A read that failed: the clock refusal as UNAVAILABLE (another node may
/// serve it), anything else as a storage error.
fn read_error(e: crate::state::StateError) -> Status {
    match e {
        crate::state::StateError::ExpiryUnknown(why) => Reason::ClockOffset.status(why.to_string()),
        e => status::internal(format!("storage error: {e}")),
    }
}
