//! Write coalescing: concurrent writes of one `Client` share calls of the
//! Writes service (the `coalesce` module says how).
//!
//! Every write (mint, put, delete, store, state delete, batch store) goes
//! through the client's queue of writes (`Writes::send`, which the
//! client's `write` calls), at most `max_write_calls` calls in flight per
//! client. The node proposes the writes of one call together, usually as
//! one Raft entry.
//!
//! Nothing else changes for a write: it keeps its own write id, gets its
//! own answer or error, and is retried with the others when the call fails
//! in a way another node can fix (the node answers the writes that had
//! already succeeded from its memory of their write ids, so none applies
//! twice).

use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::v1 as pb;
use pb::write_result::Result as Res;
use pb::writes_client::WritesClient;
use prost::Message;

use crate::coalesce::{Bounds, Calls, Coalescer};
use crate::error::{Error, Result, status};
use crate::failover::Failover;
use crate::retry::retryable;
use crate::stubs::MAX_MESSAGE;
use crate::write_ids::WriteTicket;

/// The most bytes of writes (encoded) one call carries, unless a single
/// write is larger, which then goes alone. The node accepts calls of this
/// size plus its largest single write.
pub use handlestore_proto::wire::MAX_SUBMIT_WRITE_BYTES as MAX_SUBMIT_BYTES;

/// The most writes in one call: fewer than the node accepts
/// (`limits::MAX_SUBMIT_WRITES`), so a call stays small while others wait.
const MAX_SUBMIT_WRITES: usize = handlestore_proto::wire::MAX_SUBMIT_WRITES;
const _: () = assert!(MAX_SUBMIT_WRITES <= handlestore_proto::limits::MAX_SUBMIT_WRITES);

/// How many writes a client has sent, in how many calls (retries of a call
/// not counted again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteStats {
    pub writes: u64,
    pub calls: u64,
}

/// A write waiting for its call, with its ticket: kept until the write is
/// answered, so that this client's first incomplete write id stays at or
/// below it meanwhile.
type Queued = (pb::Write, WriteTicket);

/// A client's queue of writes, and its calls in flight. Clones share them
/// (the clients of other namespaces made from one client do, as they share
/// its connections).
#[derive(Clone)]
pub(crate) struct Writes(Arc<Coalescer<Queued, Res>>);

impl Writes {
    /// At most `max_calls` calls in flight.
    pub(crate) fn new(max_calls: usize) -> Self {
        Writes(Arc::new(Coalescer::new(Bounds {
            max_calls,
            max_items: MAX_SUBMIT_WRITES,
            max_bytes: MAX_SUBMIT_BYTES,
        })))
    }

    /// Writes sent so far and the calls that carried them.
    pub(crate) fn stats(&self) -> WriteStats {
        let s = self.0.stats();
        WriteStats {
            writes: s.sent,
            calls: s.calls,
        }
    }

    /// Sends one write through `failover`, alone or with others (see the
    /// module comment), and returns its answer.
    pub(crate) async fn send(&self, failover: &Arc<Failover>, op: pb::write::Op, ticket: WriteTicket) -> Result<Res> {
        let write = pb::Write { op: Some(op) };
        let size = write.encoded_len();
        let calls = WriteCalls {
            failover: failover.clone(),
            writes: self.clone(),
        };
        crate::coalesce::send_one(&calls, (write, ticket), size).await
    }
}

/// The Writes service's calls of one client.
#[derive(Clone)]
struct WriteCalls {
    failover: Arc<Failover>,
    writes: Writes,
}

impl Calls for WriteCalls {
    type Item = Queued;
    type Answer = Res;
    const WHAT: &'static str = "write";

    fn coalescer(&self) -> &Coalescer<Queued, Res> {
        &self.writes.0
    }

    fn deadline(&self) -> Duration {
        self.failover.deadline()
    }

    async fn send(&self, items: Vec<Queued>) -> Result<Vec<Result<Res>>> {
        let (writes, tickets): (Vec<_>, Vec<_>) = items.into_iter().unzip();
        let answers = submit(&self.failover, writes).await;
        drop(tickets);
        answers
    }
}

/// One call of the Writes service, with failover and retries. A write that
/// failed for a reason another node can fix (this one is not the leader,
/// has no quorum, timed out) fails the whole attempt, so the call goes
/// again where that error points, every write with its own write id.
/// Returns one answer per write.
async fn submit(failover: &Failover, writes: Vec<pb::Write>) -> Result<Vec<Result<Res>>> {
    let n = writes.len();
    let msg = pb::SubmitRequest { writes };
    let resp = failover
        .call(|ch, timeout| {
            let mut req = tonic::Request::new(msg.clone());
            req.set_timeout(timeout);
            let mut stub = WritesClient::new(ch)
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE);
            async move {
                let resp = stub.submit(req).await?;
                let retry = resp.get_ref().results.iter().find_map(|r| match &r.result {
                    Some(Res::Failure(f)) => Some(status(f)).filter(retryable),
                    _ => None,
                });
                match retry {
                    Some(s) => Err(s),
                    None => Ok(resp),
                }
            }
        })
        .await?;
    if resp.results.len() != n {
        return Err(Error::Other(format!(
            "the node answered {} results for {n} writes",
            resp.results.len()
        )));
    }
    Ok(resp
        .results
        .into_iter()
        .map(|r| match r.result {
            Some(Res::Failure(f)) => Err(Error::from(status(&f))),
            Some(ok) => Ok(ok),
            None => Err(Error::Other("the node answered a write with nothing".into())),
        })
        .collect())
}

/// The answer of a write sent with the client's `write` ([`Writes::send`]),
/// as the response type of its own method:
/// `answer!(client.write(Op::Mint(m), t).await, Mint)`.
macro_rules! answer {
    ($answer:expr, $variant:ident) => {
        match $answer? {
            handlestore_proto::v1::write_result::Result::$variant(r) => r,
            other => return Err($crate::writes::wrong_answer(&other)),
        }
    };
}
pub(crate) use answer;

/// A node answered a write with the result of another kind of write.
pub(crate) fn wrong_answer(r: &Res) -> Error {
    Error::Other(format!(
        "the node answered a write with a result of another kind: {r:?}"
    ))
}
