//! A follower's side: answers a leader's AppendEntries, in order, each held
//! until what it acknowledges is synced.

use std::future::Future;
use std::io;

use handlestore_proto::internal::v1 as ipb;
use prost::Message;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::codec::{frame, read_frame};
use super::writer::Writer;
use super::*;
use crate::raft::log::durability::Held;

/// Serves one Raft wire connection on a plain socket (after [`sniff`] said
/// so); see [`serve`].
pub async fn serve_tcp<H, F, G>(stream: TcpStream, max_message: usize, hold: G, handle: H)
where
    H: FnMut(ipb::AppendEntriesRequest) -> F,
    F: Future<Output = Result<ipb::AppendEntriesResponse, Refusal>>,
    G: Fn(Held) -> Option<Held>,
{
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("TCP_NODELAY: {e}");
    }
    let (r, w) = stream.into_split();
    serve(BufReader::new(r), Writer::tcp(w), max_message, hold, handle).await;
}

/// Serves one Raft wire connection inside TLS (the peer chose the wire by
/// ALPN); see [`serve`].
pub async fn serve_stream<S, H, F, G>(stream: S, max_message: usize, hold: G, handle: H)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
    H: FnMut(ipb::AppendEntriesRequest) -> F,
    F: Future<Output = Result<ipb::AppendEntriesResponse, Refusal>>,
    G: Fn(Held) -> Option<Held>,
{
    let (r, w) = tokio::io::split(stream);
    serve(BufReader::new(r), Writer::task(w), max_message, hold, handle).await;
}

/// Serves one Raft wire connection: echoes the magic, then answers each
/// request with `handle`, one at a time, until the leader closes the
/// connection. A malformed request, or a refusal, is answered and ends the
/// connection; nothing a peer sends can panic it.
///
/// Each answer is handed to `hold` as a job that writes it: `hold` runs it
/// later, on whichever thread learns it may leave (a follower's log sync
/// thread, see [`raft::log::durability`](crate::raft::log::durability)), or gives it back to be run here at
/// once. The next request is read meanwhile; it is handled only once the
/// answer before it is out.
async fn serve<R, H, F, G>(mut r: BufReader<R>, w: Writer, max_message: usize, hold: G, mut handle: H)
where
    R: AsyncRead + Unpin,
    H: FnMut(ipb::AppendEntriesRequest) -> F,
    F: Future<Output = Result<ipb::AppendEntriesResponse, Refusal>>,
    G: Fn(Held) -> Option<Held>,
{
    let mut magic = [0u8; MAGIC.len()];
    if r.read_exact(&mut magic).await.is_err() || magic != MAGIC || !w.write(MAGIC.to_vec()).await {
        return;
    }
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
                        let (job, sent) = w.job(bytes);
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
        if let Ok(bytes) = frame(kind, message.as_bytes()) {
            w.close_with(bytes).await;
        }
        return;
    }
}
