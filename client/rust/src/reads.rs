//! Read coalescing: concurrent point reads of one `Client` (handle gets,
//! state retrieves) share calls of the Reads service (the `coalesce` module
//! says how).
//!
//! A read that finds a call free goes alone on its own method
//! (`Handles.Get`, `State.Retrieve`), exactly as before; reads that queued
//! while every call was busy leave together in one `Reads.Submit`. The node
//! answers each as its own method would, and its linearizable reads share
//! one quorum round. A read the node left unserved because the response was
//! full (`batch_full`) goes again in the next call; a node without the
//! Reads service (older than this client) gets them one by one, each on
//! its own method.

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use pb::read::Op;
use pb::read_result::Result as Res;
use pb::reads_client::ReadsClient;
use prost::Message;

use crate::coalesce::{Bounds, Calls, Coalescer};
use crate::error::{Error, Result, status};
use crate::failover::{Failover, rpc};
use crate::retry::retryable;
use crate::stubs::{MAX_MESSAGE, handles, state};
use crate::transport::NodeChannel;

/// The most reads in one call.
const MAX_SUBMIT_READS: usize = handlestore_proto::wire::MAX_SUBMIT_READS;
const _: () = assert!(MAX_SUBMIT_READS <= handlestore_proto::limits::MAX_SUBMIT_READS);

/// How many point reads a client has sent, in how many calls (retries of a
/// call not counted again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReadStats {
    pub reads: u64,
    pub calls: u64,
}

/// A client's queue of reads, and its calls in flight. Clones share them
/// (the clients of other namespaces made from one client do, as they share
/// its connections).
#[derive(Clone)]
pub(crate) struct Reads(Arc<Coalescer<pb::Read, Res>>);

impl Reads {
    /// At most `max_calls` calls in flight.
    pub(crate) fn new(max_calls: usize) -> Self {
        Reads(Arc::new(Coalescer::new(Bounds {
            max_calls,
            max_items: MAX_SUBMIT_READS,
            max_bytes: handlestore_proto::wire::MAX_SUBMIT_READ_BYTES,
        })))
    }

    /// Point reads sent so far and the calls that carried them.
    pub(crate) fn stats(&self) -> ReadStats {
        let s = self.0.stats();
        ReadStats {
            reads: s.sent,
            calls: s.calls,
        }
    }

    /// Sends one point read through `failover`, alone or with others (see
    /// the module comment), and returns its answer.
    pub(crate) async fn send(&self, failover: &Arc<Failover>, op: Op) -> Result<Res> {
        let read = pb::Read { op: Some(op) };
        let size = read.encoded_len();
        let calls = ReadCalls {
            failover: failover.clone(),
            reads: self.clone(),
        };
        crate::coalesce::send_one(&calls, read, size).await
    }
}

/// The read calls of one client.
#[derive(Clone)]
struct ReadCalls {
    failover: Arc<Failover>,
    reads: Reads,
}

impl Calls for ReadCalls {
    type Item = pb::Read;
    type Answer = Res;
    const WHAT: &'static str = "read";

    fn coalescer(&self) -> &Coalescer<pb::Read, Res> {
        &self.reads.0
    }

    fn deadline(&self) -> Duration {
        self.failover.deadline()
    }

    async fn send(&self, mut reads: Vec<pb::Read>) -> Result<Vec<Result<Res>>> {
        if reads.len() == 1 {
            let read = reads.pop().expect("one read");
            return Ok(vec![read_alone(&self.failover, read).await]);
        }
        submit_reads(&self.failover, reads).await
    }
}

/// One read on its own method.
async fn read_alone(failover: &Failover, read: pb::Read) -> Result<Res> {
    match read.op {
        Some(Op::Get(r)) => rpc!(failover, handles, get, r).map(Res::Get),
        Some(Op::Retrieve(r)) => rpc!(failover, state, retrieve, r).map(Res::Retrieve),
        None => Err(Error::InvalidArgument("a read names no operation".into())),
    }
}

/// Several reads in calls of the Reads service, until each is answered
/// (those a full response left unserved go in the next call).
async fn submit_reads(failover: &Failover, reads: Vec<pb::Read>) -> Result<Vec<Result<Res>>> {
    let mut answers: Vec<Option<Result<Res>>> = reads.iter().map(|_| None).collect();
    let mut pending: Vec<usize> = (0..reads.len()).collect();
    while !pending.is_empty() {
        let batch: Vec<pb::Read> = pending.iter().map(|&i| reads[i].clone()).collect();
        let results = submit_once(failover, batch).await?;
        let mut unserved = Vec::new();
        // A node always serves a call's first read; one that served
        // none gets its answers back as they are, never a loop.
        let none_served = results.iter().all(is_batch_full);
        for (i, r) in pending.into_iter().zip(results) {
            if is_batch_full(&r) && !none_served {
                unserved.push(i);
            } else {
                answers[i] = Some(r);
            }
        }
        pending = unserved;
    }
    Ok(answers.into_iter().map(|a| a.expect("every read answered")).collect())
}

/// One call of the Reads service, with failover and retries: a read that
/// failed for a reason another node can fix fails the attempt, so the call
/// goes again where that error points.
async fn submit_once(failover: &Failover, reads: Vec<pb::Read>) -> Result<Vec<Result<Res>>> {
    let n = reads.len();
    let msg = pb::ReadsRequest { reads };
    let resp = failover
        .call(|ch, timeout| {
            let msg = msg.clone();
            async move {
                let resp = submit_on(ch, msg, timeout).await?;
                let retry = resp.get_ref().results.iter().find_map(|r| match &r.result {
                    Some(Res::Failure(f)) => Some(status(f)).filter(retryable),
                    _ => None,
                });
                retry.map_or(Ok(resp), Err)
            }
        })
        .await?;
    if resp.results.len() != n {
        return Err(Error::Other(format!(
            "the node answered {} results for {n} reads",
            resp.results.len()
        )));
    }
    Ok(resp
        .results
        .into_iter()
        .map(|r| match r.result {
            Some(Res::Failure(f)) => Err(Error::from(status(&f))),
            Some(ok) => Ok(ok),
            None => Err(Error::Other("the node answered a read with nothing".into())),
        })
        .collect())
}

/// One `Reads.Submit` to one node; a node without the Reads service (older
/// than this client) gets each read on its own method instead.
async fn submit_on(
    ch: NodeChannel,
    msg: pb::ReadsRequest,
    timeout: Duration,
) -> std::result::Result<tonic::Response<pb::ReadsResponse>, tonic::Status> {
    let mut req = tonic::Request::new(msg.clone());
    req.set_timeout(timeout);
    let mut stub = ReadsClient::new(ch.clone())
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE);
    match stub.submit(req).await {
        Err(s) if s.code() == tonic::Code::Unimplemented => {}
        other => return other,
    }
    let one = |read: pb::Read| {
        let ch = ch.clone();
        async move {
            let result = match read.op {
                Some(Op::Get(r)) => handles(ch)
                    .get(timed(r, timeout))
                    .await
                    .map(|a| Res::Get(a.into_inner())),
                Some(Op::Retrieve(r)) => state(ch)
                    .retrieve(timed(r, timeout))
                    .await
                    .map(|a| Res::Retrieve(a.into_inner())),
                None => Err(tonic::Status::invalid_argument("a read names no operation")),
            };
            pb::ReadResult {
                result: Some(result.unwrap_or_else(|s| Res::Failure(failure(&s)))),
            }
        }
    };
    let results = join_all(msg.reads.into_iter().map(one)).await;
    Ok(tonic::Response::new(pb::ReadsResponse { results }))
}

fn timed<T>(msg: T, timeout: Duration) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.set_timeout(timeout);
    req
}

/// A status as a read's answer.
fn failure(s: &tonic::Status) -> pb::WriteFailure {
    pb::WriteFailure {
        code: s.code() as i32,
        message: s.message().to_string(),
        details: s.details().to_vec(),
    }
}

/// A read the node left unserved because the response was full.
fn is_batch_full(r: &Result<Res>) -> bool {
    matches!(
        r,
        Err(Error::ResourceExhausted {
            reason: Some(Reason::BatchFull),
            ..
        })
    )
}

/// The answer of a read sent with the client's `read` ([`Reads::send`]),
/// as the response type of its own method:
/// `read_answer!(client.read(Op::Get(g)).await, Get)`
/// (an error stays an error: `NotFound` for an absent handle or key).
macro_rules! read_answer {
    ($answer:expr, $variant:ident) => {
        match $answer {
            Ok(handlestore_proto::v1::read_result::Result::$variant(r)) => Ok(r),
            Ok(other) => Err($crate::error::Error::Other(format!(
                "the node answered a read with a result of another kind: {other:?}"
            ))),
            Err(e) => Err(e),
        }
    };
}
pub(crate) use read_answer;
