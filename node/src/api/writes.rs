//! The Writes service (writes.proto): several independent writes in one
//! call, each handled by its own method's code, so a write answers the same
//! whether it came alone or with others.
//!
//! The writes of one call run concurrently, so they reach the proposer
//! together and usually share one Raft entry; nothing orders them, as
//! nothing orders concurrent calls. Each one's failure is its own answer,
//! never the call's: the call itself fails only when it is malformed.

use std::sync::Arc;

use futures::future::join_all;
use handlestore_proto::v1 as pb;
use pb::write::Op;
use pb::write_result::Result as Res;
use tonic::{Request, Response, Status};

use super::handles::HandlesService;
use super::state::StateService;
use super::{Api, Credentials};
use crate::status::invalid;

/// The most writes one call may carry.
pub const MAX_WRITES: usize = handlestore_proto::limits::MAX_SUBMIT_WRITES;

pub struct WritesService {
    handles: HandlesService,
    state: StateService,
}

impl WritesService {
    pub fn new(api: Arc<Api>) -> Self {
        Self {
            handles: HandlesService::new(api.clone()),
            state: StateService::new(api),
        }
    }

    async fn one(&self, creds: &Credentials, write: pb::Write) -> pb::WriteResult {
        let result = match write.op {
            None => Err(invalid("a write names no operation")),
            Some(Op::Mint(r)) => self.handles.mint_as(creds, r).await.map(Res::Mint),
            Some(Op::Put(r)) => self.handles.put_as(creds, r).await.map(Res::Put),
            Some(Op::Delete(r)) => self.handles.delete_as(creds, r).await.map(Res::Delete),
            Some(Op::Store(r)) => self.state.store_as(creds, r).await.map(Res::Store),
            Some(Op::StateDelete(r)) => self.state.delete_as(creds, r).await.map(Res::StateDelete),
            Some(Op::BatchStore(r)) => self.state.batch_store_as(creds, r).await.map(Res::BatchStore),
        };
        pb::WriteResult {
            result: Some(result.unwrap_or_else(|s| Res::Failure(failure(&s)))),
        }
    }
}

/// A status as a write's answer inside a call that succeeded.
pub(crate) fn failure(s: &Status) -> pb::WriteFailure {
    pb::WriteFailure {
        code: s.code() as i32,
        message: s.message().to_string(),
        details: s.details().to_vec(),
    }
}

#[tonic::async_trait]
impl pb::writes_server::Writes for WritesService {
    #[tracing::instrument(level = "debug", skip_all, fields(writes = request.get_ref().writes.len()))]
    async fn submit(&self, request: Request<pb::SubmitRequest>) -> Result<Response<pb::SubmitResponse>, Status> {
        let creds = Credentials::of(&request);
        // Bad credentials fail the call; a missing permission fails the
        // writes that need it.
        self.handles.api().decide(&creds, &super::Need::Authenticated).await?;
        let writes = request.into_inner().writes;
        if writes.len() > MAX_WRITES {
            return Err(invalid(format!(
                "{} writes in one call; at most {MAX_WRITES}",
                writes.len()
            )));
        }
        let results = join_all(writes.into_iter().map(|w| self.one(&creds, w))).await;
        Ok(Response::new(pb::SubmitResponse { results }))
    }
}
