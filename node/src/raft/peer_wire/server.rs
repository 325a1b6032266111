//! A follower's side: answers a leader's AppendEntries, in order, each held
//! until what it acknowledges is synced.

use std::future::Future;
use std::io;
use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::oneshot;

use super::codec::{frame, read_frame};
use super::*;
use crate::raft::durability::Held;

/// Serves one Raft wire connection (after [`sniff`] said so): echoes the
/// magic, then answers each request with `handle`, one at a time, until the
/// leader closes the connection. A malformed request, or a refusal, is
/// answered and ends the connection; nothing a peer sends can panic it.
///
/// Each answer is handed to `hold` as a job that writes it: `hold` runs it
/// later, on whichever thread learns it may leave (a follower's log sync
/// thread, see `raft::durability`), or gives it back to be run here at
/// once. The next request is read meanwhile; it is handled only once the
/// answer before it is out.
pub async fn serve<H, F, G>(stream: TcpStream, max_message: usize, hold: G, mut handle: H)
where
    H: FnMut(ipb::AppendEntriesRequest) -> F,
    F: Future<Output = Result<ipb::AppendEntriesResponse, Refusal>>,
    G: Fn(Held) -> Option<Held>,
{
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("TCP_NODELAY: {e}");
    }
    let (r, mut w) = stream.into_split();
    let mut r = BufReader::new(r);
    let mut magic = [0u8; MAGIC.len()];
    if r.read_exact(&mut magic).await.is_err() || magic != MAGIC || w.write_all(&MAGIC).await.is_err() {
        return;
    }
    let w = Arc::new(w);
    let mut previous: Option<oneshot::Receiver<bool>> = None;
    loop {
        let got = read_frame(&mut r, max_message).await;
        if let Some(sent) = previous.take() {
            // A leader sends a request only once it has the answer before
            // it, so this is out already unless the peer does not wait.
            if !matches!(sent.await, Ok(true)) {
                return;
            }
        }
        let refusal = match got {
            Ok(None) => return,
            Err(e) if e.kind() == io::ErrorKind::InvalidData => Refusal::Invalid(e.to_string()),
            Err(e) => {
                tracing::debug!("Raft wire: {e}");
                return;
            }
            Ok(Some((kind, _))) if kind != KIND_OK => Refusal::Invalid(format!("unknown frame kind {kind}")),
            Ok(Some((_, body))) => match ipb::AppendEntriesRequest::decode(body.as_slice()) {
                Err(e) => Refusal::Invalid(format!("malformed AppendEntries: {e}")),
                Ok(req) => match handle(req).await {
                    Ok(resp) => {
                        let Ok(bytes) = frame(KIND_OK, &resp.encode_to_vec()) else {
                            return;
                        };
                        let (job, sent) = answer(w.clone(), bytes);
                        if let Some(job) = hold(job) {
                            job();
                        }
                        previous = Some(sent);
                        continue;
                    }
                    Err(refusal) => refusal,
                },
            },
        };
        let (kind, message) = match refusal {
            Refusal::Invalid(m) => (KIND_INVALID, m),
            Refusal::Unavailable(m) => (KIND_UNAVAILABLE, m),
        };
        tracing::debug!("Raft wire: refusing a request: {message}");
        // Every answer is out, so no job holds the write half any more.
        if let (Ok(mut w), Ok(bytes)) = (Arc::try_unwrap(w), frame(kind, message.as_bytes())) {
            let _ = w.write_all(&bytes).await;
            let _ = w.shutdown().await;
        }
        return;
    }
}

/// A job that writes `frame` to `w` from any thread, and what it came to:
/// true once all of it is written, false if the connection failed (or the
/// job was dropped unrun). What the socket cannot take at once (it has room
/// for an answer unless the leader stopped reading) is written by a task on
/// this runtime. The job lets go of `w` before it reports.
fn answer(w: Arc<OwnedWriteHalf>, frame: Vec<u8>) -> (Held, oneshot::Receiver<bool>) {
    let (tx, rx) = oneshot::channel();
    let runtime = tokio::runtime::Handle::current();
    let job = Box::new(move || {
        let at = match w.try_write(&frame) {
            Ok(n) if n == frame.len() => {
                drop(w);
                let _ = tx.send(true);
                return;
            }
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(e) => {
                tracing::debug!("Raft wire: writing an answer: {e}");
                drop(w);
                let _ = tx.send(false);
                return;
            }
        };
        runtime.spawn(async move {
            let written = write_rest(&w, &frame[at..]).await;
            drop(w);
            let _ = tx.send(written);
        });
    });
    (job, rx)
}

async fn write_rest(w: &OwnedWriteHalf, mut rest: &[u8]) -> bool {
    while !rest.is_empty() {
        if w.writable().await.is_err() {
            return false;
        }
        match w.try_write(rest) {
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => {
                tracing::debug!("Raft wire: writing an answer: {e}");
                return false;
            }
        }
    }
    true
}
