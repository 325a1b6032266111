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

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason;
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
    pub async fn apply(
        &self,
        write_id: Option<pb::WriteId>,
        op: ipb::command::Op,
    ) -> Result<ipb::CommandResult, Status> {
        self.write(ipb::Command { write_id, op: Some(op) }).await
    }

    /// Proposes a write and turns a failed result into a status.
    pub async fn write(&self, cmd: ipb::Command) -> Result<ipb::CommandResult, Status> {
        let keys = crate::state::keys::conflict_keys(&cmd);
        let res = self.proposer.write(cmd, keys, false).await.map_err(|e| e.to_status())?;
        result_status(res)
    }
}

/// Maps a command's (deterministic) failure to its gRPC status.
pub fn result_status(r: ipb::CommandResult) -> Result<ipb::CommandResult, Status> {
    let (code, reason) = match ipb::ResultCode::try_from(r.code) {
        Ok(ipb::ResultCode::ResultOk) => return Ok(r),
        Ok(ipb::ResultCode::ResultNotFound) => (Code::NotFound, reason::NOT_FOUND),
        Ok(ipb::ResultCode::ResultAlreadyExists) => (Code::AlreadyExists, reason::ALREADY_EXISTS),
        Ok(ipb::ResultCode::ResultRevisionMismatch) => (Code::FailedPrecondition, reason::REVISION_MISMATCH),
        Ok(ipb::ResultCode::ResultInvalid) => (Code::InvalidArgument, reason::INVALID_ARGUMENT),
        Ok(ipb::ResultCode::ResultPrecondition) => (Code::FailedPrecondition, reason::PRECONDITION),
        Ok(ipb::ResultCode::ResultStaleWrite) => (Code::FailedPrecondition, reason::STALE_WRITE),
        Err(_) => (Code::Internal, reason::INTERNAL),
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
        crate::state::StateError::ExpiryUnknown(why) => {
            status::unavailable(reason::CLOCK_OFFSET, why.to_string(), None)
        }
        e => status::internal(format!("storage error: {e}")),
    }
}
