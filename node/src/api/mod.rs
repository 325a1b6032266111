//! Client-facing gRPC services: input validation, the read gate, and the
//! mapping of command results to gRPC statuses. Writes go to `raft`
//! (proposer), reads come from `state`; nothing here touches RocksDB.

pub mod admin;
pub mod handles;
pub mod read;
pub mod state;
pub mod validate;
pub mod writes;

use std::sync::Arc;

use handlestore_proto::v1 as pb;
use tonic::{Code, Status};

use crate::config::Limits;
use crate::raft::proposer::Proposer;
use crate::state::StateStore;
use crate::status;

/// What every client-facing service needs.
pub struct Api {
    pub limits: Limits,
    pub state: Arc<StateStore>,
    pub proposer: Arc<Proposer>,
    pub reads: read::ReadGate,
}

impl Api {
    /// Proposes one operation under the caller's write id (exactly-once).
    pub async fn apply(&self, write_id: Option<pb::WriteId>, op: pb::command::Op) -> Result<pb::CommandResult, Status> {
        self.write(pb::Command { write_id, op: Some(op) }).await
    }

    /// Proposes a write and turns a failed result into a status.
    pub async fn write(&self, cmd: pb::Command) -> Result<pb::CommandResult, Status> {
        let keys = crate::state::keys::conflict_keys(&cmd);
        let res = self.proposer.write(cmd, keys, false).await.map_err(|e| e.to_status())?;
        result_status(res)
    }
}

/// Maps a command's (deterministic) failure to its gRPC status.
pub fn result_status(r: pb::CommandResult) -> Result<pb::CommandResult, Status> {
    let (code, reason) = match pb::ResultCode::try_from(r.code) {
        Ok(pb::ResultCode::ResultOk) => return Ok(r),
        Ok(pb::ResultCode::ResultNotFound) => (Code::NotFound, "not_found"),
        Ok(pb::ResultCode::ResultAlreadyExists) => (Code::AlreadyExists, "already_exists"),
        Ok(pb::ResultCode::ResultRevisionMismatch) => (Code::FailedPrecondition, "revision_mismatch"),
        Ok(pb::ResultCode::ResultInvalid) => (Code::InvalidArgument, "invalid_argument"),
        Ok(pb::ResultCode::ResultPrecondition) => (Code::FailedPrecondition, "precondition"),
        Ok(pb::ResultCode::ResultStaleWrite) => (Code::FailedPrecondition, "stale_write"),
        Err(_) => (Code::Internal, "internal"),
    };
    Err(status::with_detail(
        code,
        r.message.clone(),
        pb::ErrorDetail {
            reason: reason.into(),
            current_revision: r.current_revision,
            ..Default::default()
        },
    ))
}

/// Runs a single-key read on the calling task: one point lookup (memtable,
/// block cache, at worst one block from disk) costs less than handing it to
/// the blocking pool and back, which measured 10-40% of linearizable get
/// throughput. Scans (listing, counting, many keys) use `blocking`.
pub fn point_read<T>(f: impl FnOnce() -> crate::state::Result<T>) -> Result<T, Status> {
    f().map_err(read_error)
}

/// Runs blocking state reads (scans) off the async runtime.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::state::Result<T> + Send + 'static,
) -> Result<T, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| status::internal(format!("read task failed: {e}")))?
        .map_err(read_error)
}

/// A read that failed: the clock refusal as UNAVAILABLE (another node may
/// serve it), anything else as a storage error.
fn read_error(e: crate::state::StateError) -> Status {
    match e {
        crate::state::StateError::ExpiryUnknown(why) => status::unavailable("clock_offset", why.to_string(), None),
        e => status::internal(format!("storage error: {e}")),
    }
}
