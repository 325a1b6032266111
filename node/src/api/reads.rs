//! The Reads service (reads.proto): several independent point reads in one
//! call, each handled by its own method's code, so a read answers the same
//! whether it came alone or with others.
//!
//! The reads of one call run concurrently, so their linearizable ones ask
//! the read gate for a read point together and share the leader's quorum
//! round (`raft::reads::read_index`). Each one's failure is its own answer, never
//! the call's: the call itself fails only when it is malformed or its
//! credentials are bad. A response holds at most
//! `MAX_READS_RESPONSE_BYTES` of answers (or one answer, however large):
//! the reads past it are answered `batch_full`, unserved.

use std::sync::Arc;

use futures::future::join_all;
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use pb::read::Op;
use pb::read_result::Result as Res;
use prost::Message;
use tonic::{Request, Response, Status};

use super::handles::HandlesService;
use super::state::StateService;
use super::writes::failure;
use super::{Api, Credentials};
use crate::status::invalid;

/// The most reads one call may carry.
pub const MAX_READS: usize = handlestore_proto::limits::MAX_SUBMIT_READS;

pub struct ReadsService {
    handles: HandlesService,
    state: StateService,
    /// Most bytes of answers in one response (one answer always goes).
    max_response: usize,
}

impl ReadsService {
    pub fn new(api: Arc<Api>, max_response: usize) -> Self {
        Self {
            handles: HandlesService::new(api.clone()),
            state: StateService::new(api),
            max_response,
        }
    }

    async fn one(&self, creds: &Credentials, read: pb::Read) -> pb::ReadResult {
        let result = match read.op {
            None => Err(invalid("a read names no operation")),
            Some(Op::Get(r)) => self.handles.get_as(creds, r).await.map(Res::Get),
            Some(Op::Retrieve(r)) => self.state.retrieve_as(creds, r).await.map(Res::Retrieve),
        };
        pb::ReadResult {
            result: Some(result.unwrap_or_else(|s| Res::Failure(failure(&s)))),
        }
    }
}

/// Keeps the answers in order up to `max` bytes (the first always); the
/// ones after are answered `batch_full`.
fn within(results: &mut [pb::ReadResult], max: usize) {
    let mut bytes = 0usize;
    for (i, r) in results.iter_mut().enumerate() {
        bytes = bytes.saturating_add(r.encoded_len() + 8);
        if i > 0 && bytes > max {
            let s = Reason::BatchFull.status(format!(
                "this read's answer would take the response past {max} bytes; send it again"
            ));
            r.result = Some(Res::Failure(failure(&s)));
        }
    }
}

#[tonic::async_trait]
impl pb::reads_server::Reads for ReadsService {
    #[tracing::instrument(level = "debug", skip_all, fields(reads = request.get_ref().reads.len()))]
    async fn submit(&self, request: Request<pb::ReadsRequest>) -> Result<Response<pb::ReadsResponse>, Status> {
        let creds = Credentials::of(&request);
        // Bad credentials fail the call; a missing permission fails the
        // reads that need it.
        self.handles.api().decide(&creds, &super::Need::Authenticated).await?;
        let reads = request.into_inner().reads;
        if reads.len() > MAX_READS {
            return Err(invalid(format!(
                "{} reads in one call; at most {MAX_READS}",
                reads.len()
            )));
        }
        let mut results = join_all(reads.into_iter().map(|r| self.one(&creds, r))).await;
        within(&mut results, self.max_response);
        Ok(Response::new(pb::ReadsResponse { results }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(value_bytes: usize) -> pb::ReadResult {
        pb::ReadResult {
            result: Some(Res::Get(pb::GetResponse {
                value: vec![7; value_bytes],
                ..Default::default()
            })),
        }
    }

    fn full(r: &pb::ReadResult) -> bool {
        matches!(&r.result, Some(Res::Failure(f)) if f.code == tonic::Code::ResourceExhausted as i32)
    }

    #[test]
    fn answers_past_the_bound_are_unserved_but_the_first_always_goes() {
        let mut rs = vec![answer(300), answer(300), answer(300), answer(10)];
        within(&mut rs, 700);
        assert_eq!(rs.iter().map(full).collect::<Vec<_>>(), [false, false, true, true]);
        let mut one = vec![answer(5000), answer(1)];
        within(&mut one, 700);
        assert_eq!(one.iter().map(full).collect::<Vec<_>>(), [false, true]);
    }
}
