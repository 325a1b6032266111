//! Write coalescing: concurrent writes of one [`Client`] share calls.
//!
//! Every write (mint, put, delete, store, state delete, batch store) goes
//! through [`Client::write`]. At most `max_write_calls` calls of the Writes
//! service are in flight per client. A write that finds a call free is sent
//! at once, alone, on the caller's task: a lone writer waits for nothing.
//! A write that finds them all busy waits in a queue, and when a call
//! finishes, everything queued by then leaves together in the next one.
//! Under load a call carries many writes, so the per-call costs (HTTP/2
//! stream, headers, a task per request on the node, a syscall per answer)
//! are paid once per call rather than once per write; the node then
//! proposes them together, usually as one Raft entry.
//!
//! Nothing else changes for a write: it keeps its own write id, gets its
//! own answer or error, and is retried with the others when the call fails
//! in a way another node can fix (the node answers the writes that had
//! already succeeded from its memory of their write ids, so none applies
//! twice). Only writes that are in flight at the same time, and so have no
//! order between them, are ever sent together.

use std::collections::VecDeque;
use std::sync::MutexGuard;
use std::sync::atomic::{AtomicU64, Ordering};

use handlestore_proto::v1 as pb;
use pb::write_result::Result as Res;
use pb::writes_client::WritesClient;
use prost::Message;
use tokio::sync::oneshot;

use crate::cluster::{Client, Inner, MAX_MESSAGE, WriteTicket, retryable};
use crate::error::{Error, Result};

/// The most bytes of writes (encoded) one call carries, unless a single
/// write is larger, which then goes alone. The node accepts calls of this
/// size plus its largest single write.
pub use handlestore_proto::limits::MAX_SUBMIT_BYTES;

/// The most writes in one call: fewer than the node accepts
/// (`limits::MAX_SUBMIT_WRITES`), so a call stays small while others wait.
const MAX_SUBMIT_WRITES: usize = 256;
const _: () = assert!(MAX_SUBMIT_WRITES <= handlestore_proto::limits::MAX_SUBMIT_WRITES);

/// How many writes a client has sent, in how many calls (retries of a call
/// not counted again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteStats {
    pub writes: u64,
    pub calls: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    writes: AtomicU64,
    calls: AtomicU64,
}

/// The calls in flight and the writes waiting for one.
#[derive(Default)]
pub(crate) struct WriteQueue {
    waiting: VecDeque<Waiting>,
    in_flight: usize,
}

struct Waiting {
    write: pb::Write,
    size: usize,
    /// Kept until the write is answered, so that this client's first
    /// incomplete write id stays at or below it meanwhile.
    ticket: WriteTicket,
    done: oneshot::Sender<Result<Res>>,
}

fn lock(inner: &Inner) -> MutexGuard<'_, WriteQueue> {
    inner.writes.lock().unwrap_or_else(|p| p.into_inner())
}

impl Client {
    /// Writes sent so far and the calls that carried them: under load,
    /// several writes per call.
    pub fn write_stats(&self) -> WriteStats {
        let c = &self.inner.write_stats;
        WriteStats {
            writes: c.writes.load(Ordering::Relaxed),
            calls: c.calls.load(Ordering::Relaxed),
        }
    }

    /// Sends one write, alone or with others (see the module comment), and
    /// returns its answer.
    pub(crate) async fn write(&self, op: pb::write::Op, ticket: WriteTicket) -> Result<Res> {
        let write = pb::Write { op: Some(op) };
        match self.take_call_or_queue(write, ticket) {
            Ok((write, ticket)) => {
                // This write goes now, on this task. When the call ends (or
                // this future is dropped), the call passes to a drain of
                // whatever queued meanwhile.
                let _slot = Slot(self.clone());
                let answer = self.submit(vec![write]).await;
                drop(ticket);
                answer?
                    .pop()
                    .unwrap_or_else(|| Err(Error::Other("the node answered no result".into())))
            }
            Err(rx) => self.wait(rx).await,
        }
    }

    /// Counts a call for this write if one is free and nothing waits (and
    /// gives the write back to be sent now); else queues it.
    fn take_call_or_queue(
        &self,
        write: pb::Write,
        ticket: WriteTicket,
    ) -> std::result::Result<(pb::Write, WriteTicket), oneshot::Receiver<Result<Res>>> {
        let max = self.inner.max_write_calls;
        let mut q = lock(&self.inner);
        if q.in_flight < max && q.waiting.is_empty() {
            q.in_flight += 1;
            return Ok((write, ticket));
        }
        let (done, rx) = oneshot::channel();
        q.waiting.push_back(Waiting {
            size: write.encoded_len(),
            write,
            ticket,
            done,
        });
        // Writes queue only while every call is busy, and a call that ends
        // drains the queue; this covers a queue found without a call.
        if q.in_flight < max {
            q.in_flight += 1;
            drop(q);
            self.spawn_drain();
        }
        Err(rx)
    }

    async fn wait(&self, rx: oneshot::Receiver<Result<Res>>) -> Result<Res> {
        match tokio::time::timeout(self.inner.deadline, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(Error::Other("the write was dropped before it was answered".into())),
            Err(_) => Err(Error::Deadline {
                deadline: self.inner.deadline,
                last: "waiting for a free call (every call of this client is busy)".into(),
            }),
        }
    }

    /// Starts a task that sends what is queued, call after call, until the
    /// queue is empty; the caller has counted its call in `in_flight`.
    fn spawn_drain(&self) {
        let client = self.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move { client.drain().await });
            }
            Err(_) => {
                // No runtime to send them on (a client dropped outside one):
                // the queued writes are answered with an error, never lost
                // silently.
                let mut q = lock(&client.inner);
                q.in_flight -= 1;
                for w in q.waiting.drain(..) {
                    let _ = w
                        .done
                        .send(Err(Error::Other("no async runtime to send the write on".into())));
                }
            }
        }
    }

    async fn drain(&self) {
        loop {
            let batch = {
                let mut q = lock(&self.inner);
                let batch = take_batch(&mut q.waiting);
                if batch.is_empty() {
                    q.in_flight -= 1;
                    return;
                }
                batch
            };
            let (writes, waiters): (Vec<_>, Vec<_>) = batch.into_iter().map(|w| (w.write, (w.ticket, w.done))).unzip();
            match self.submit(writes).await {
                Ok(results) => {
                    for ((_ticket, done), r) in waiters.into_iter().zip(results) {
                        let _ = done.send(r);
                    }
                }
                Err(e) => {
                    for (_ticket, done) in waiters {
                        let _ = done.send(Err(e.clone()));
                    }
                }
            }
        }
    }

    /// One call of the Writes service, with failover and retries. A write
    /// that failed for a reason another node can fix (this one is not the
    /// leader, has no quorum, timed out) fails the whole attempt, so the
    /// call goes again where that error points, every write with its own
    /// write id. Returns one answer per write.
    async fn submit(&self, writes: Vec<pb::Write>) -> Result<Vec<Result<Res>>> {
        let n = writes.len();
        let stats = &self.inner.write_stats;
        stats.writes.fetch_add(n as u64, Ordering::Relaxed);
        stats.calls.fetch_add(1, Ordering::Relaxed);
        let msg = pb::SubmitRequest { writes };
        let resp = self
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
}

/// The answer of a write sent with [`Client::write`], as the response type
/// of its own method: `answer!(client.write(Op::Mint(m), t).await, Mint)`.
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

/// A write's failure as the status its own method would have returned.
fn status(f: &pb::WriteFailure) -> tonic::Status {
    tonic::Status::with_details(
        tonic::Code::from_i32(f.code),
        f.message.clone(),
        f.details.clone().into(),
    )
}

/// Takes the next call's writes off the queue: in order, up to the bounds,
/// at least one; writes whose caller has given up are dropped unsent.
fn take_batch(waiting: &mut VecDeque<Waiting>) -> Vec<Waiting> {
    let mut batch = Vec::new();
    let mut bytes = 0;
    while let Some(w) = waiting.front() {
        if w.done.is_closed() {
            waiting.pop_front();
            continue;
        }
        if !batch.is_empty() && (batch.len() >= MAX_SUBMIT_WRITES || bytes + w.size > MAX_SUBMIT_BYTES) {
            break;
        }
        bytes += w.size;
        batch.extend(waiting.pop_front());
    }
    batch
}

/// A call slot held by a write sent on its caller's task. On drop, the slot
/// goes to a drain of the queue if anything waits, else it is freed.
struct Slot(Client);

impl Drop for Slot {
    fn drop(&mut self) {
        let mut q = lock(&self.0.inner);
        if q.waiting.is_empty() {
            q.in_flight -= 1;
        } else {
            drop(q);
            self.0.spawn_drain();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(client: &Client, size: usize) -> (Waiting, oneshot::Receiver<Result<Res>>) {
        let (done, rx) = oneshot::channel();
        let w = Waiting {
            write: pb::Write::default(),
            size,
            ticket: client.write_ticket(),
            done,
        };
        (w, rx)
    }

    #[tokio::test]
    async fn a_call_takes_writes_in_order_within_its_bounds_and_skips_the_abandoned() {
        let client = Client::builder(["http://127.0.0.1:1"]).build().expect("client");
        let mut queue = VecDeque::new();
        let mut receivers = Vec::new();
        for i in 0..MAX_SUBMIT_WRITES * 2 {
            let (w, rx) = waiting(&client, 100);
            queue.push_back(w);
            // Every third caller has given up.
            if i % 3 != 0 {
                receivers.push(rx);
            }
        }
        let first = take_batch(&mut queue);
        assert_eq!(first.len(), MAX_SUBMIT_WRITES);
        assert!(first.iter().all(|w| !w.done.is_closed()));
        assert!(first.windows(2).all(|p| p[0].ticket.id.seq < p[1].ticket.id.seq));
        let second = take_batch(&mut queue);
        assert!(!second.is_empty() && queue.is_empty());
        assert_eq!(first.len() + second.len(), receivers.len());

        // By bytes: a write that would pass the bound waits for the next
        // call; one larger than the bound goes alone.
        let (a, _ra) = waiting(&client, MAX_SUBMIT_BYTES / 2);
        let (b, _rb) = waiting(&client, MAX_SUBMIT_BYTES / 2 + 1);
        let (c, _rc) = waiting(&client, MAX_SUBMIT_BYTES * 2);
        let (d, _rd) = waiting(&client, 10);
        queue.extend([a, b, c, d]);
        let sizes = |q: &mut VecDeque<Waiting>| take_batch(q).iter().map(|w| w.size).collect::<Vec<_>>();
        assert_eq!(sizes(&mut queue), [MAX_SUBMIT_BYTES / 2]);
        assert_eq!(sizes(&mut queue), [MAX_SUBMIT_BYTES / 2 + 1]);
        assert_eq!(sizes(&mut queue), [MAX_SUBMIT_BYTES * 2]);
        assert_eq!(sizes(&mut queue), [10]);
        assert!(take_batch(&mut queue).is_empty());
    }
}
