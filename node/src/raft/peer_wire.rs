//! The Raft wire: AppendEntries between nodes as length-prefixed protobuf
//! frames on a plain TCP connection, on the node's one port beside gRPC.
//!
//! Every write, and every read round, crosses one of these calls per
//! follower, and over gRPC each was an HTTP/2 stream with its own headers,
//! flow control and task on both ends. Here a request is one write and its
//! answer one write, one at a time per connection, which is all openraft
//! needs: a replication stream sends one AppendEntries at a time. Measured
//! at one client: 29% less server CPU per mint and 22% less latency, 48%
//! and 36% for a linearizable get (docs/dev/performance-notes.md, "The Raft wire").
//!
//! A connection opens with [`MAGIC`] from the leader, echoed by the
//! follower; the node's listener peeks at the first bytes of every
//! connection and hands anything else (the HTTP/2 preface of gRPC) to the
//! gRPC server. A peer that answers with other bytes (a node of an earlier
//! version, whose HTTP/1.1 server refuses them as a bad request) is spoken
//! to over gRPC, as before, and asked again a minute later. The leader's
//! heartbeats, which confirm its leadership for linearizable reads, are
//! AppendEntries and so travel here too. Votes, snapshots, forwarded writes
//! and a follower's read-index requests to the leader stay on gRPC.
//!
//! Frames: a 4-byte big-endian length, then that many bytes: a kind byte
//! and a body. The leader's frames carry a `ipb::AppendEntriesRequest`; the
//! follower answers with kind [`KIND_OK`] and a `ipb::AppendEntriesResponse`,
//! or with [`KIND_INVALID`] / [`KIND_UNAVAILABLE`] and a message, and then
//! closes the connection.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::internal::v1 as ipb;
use prost::Message;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::oneshot;

use super::durability::Held;

/// The first bytes of a Raft wire connection, and the follower's echo.
/// HTTP/2's preface starts with "PRI", so the first byte tells them apart.
pub const MAGIC: [u8; 8] = *b"HSRAFT/1";
/// Kind byte: an answer (`ipb::AppendEntriesResponse`).
pub const KIND_OK: u8 = 0;
/// Kind byte: the request was malformed; the connection closes.
pub const KIND_INVALID: u8 = 1;
/// Kind byte: the node cannot take requests (shutting down); the connection
/// closes.
pub const KIND_UNAVAILABLE: u8 = 2;
/// How long a leader waits for a peer to answer [`MAGIC`] before it takes
/// the peer for one that cannot be reached now.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long a leader waits for a connection to a peer (as for its gRPC
/// channels).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the listener waits for a new connection's first bytes before it
/// hands the connection to the gRPC server anyway.
pub const SNIFF_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a follower refused a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Invalid(String),
    Unavailable(String),
}

/// What a call over the wire ended with, short of an answer.
#[derive(Debug)]
pub enum CallError {
    /// The peer does not speak the Raft wire: use gRPC.
    Unsupported,
    /// Connecting, reading or writing failed.
    Io(io::Error),
    /// The follower refused the request.
    Refused(Refusal),
    /// The follower's answer could not be read.
    Malformed(String),
}

impl From<io::Error> for CallError {
    fn from(e: io::Error) -> Self {
        CallError::Io(e)
    }
}

/// What a new connection on the node's port speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    RaftWire,
    /// Anything else: gRPC, or bytes the gRPC server will refuse.
    Other,
}

/// Looks at a new connection's first bytes without taking them. Waits only
/// as long as they could still turn out to be [`MAGIC`].
pub async fn sniff(stream: &TcpStream) -> Protocol {
    let mut buf = [0u8; MAGIC.len()];
    loop {
        let n = match stream.peek(&mut buf).await {
            Ok(0) | Err(_) => return Protocol::Other,
            Ok(n) => n,
        };
        if buf[..n] != MAGIC[..n] {
            return Protocol::Other;
        }
        if n == MAGIC.len() {
            return Protocol::RaftWire;
        }
        // A prefix of MAGIC so far: peek returns at once while those bytes
        // sit unread, so wait a moment for the rest.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// One frame: a 4-byte length, the kind byte, the body.
fn frame(kind: u8, body: &[u8]) -> io::Result<Vec<u8>> {
    let len = u32::try_from(body.len() + 1).map_err(|_| io::Error::other("frame too large"))?;
    let mut frame = Vec::with_capacity(4 + 1 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.push(kind);
    frame.extend_from_slice(body);
    Ok(frame)
}

/// Reads one frame of at most `max` bytes. `Ok(None)`: the peer closed the
/// connection between frames.
async fn read_frame(r: &mut (impl AsyncBufRead + Unpin), max: usize) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "empty frame"));
    }
    if len > max.saturating_add(1) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes, over the limit of {max}"),
        ));
    }
    let mut kind = [0u8; 1];
    r.read_exact(&mut kind).await?;
    // Grows as the bytes arrive: a length alone does not allocate.
    let mut body = Vec::new();
    let got = r.take((len - 1) as u64).read_to_end(&mut body).await?;
    if got != len - 1 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed inside a frame",
        ));
    }
    Ok(Some((kind[0], body)))
}

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

/// A leader's connection to one follower.
pub struct WireConn {
    r: BufReader<OwnedReadHalf>,
    w: OwnedWriteHalf,
    max_message: usize,
}

impl WireConn {
    /// Connects to `addr` ("host:port", the peer's one port) and checks that
    /// it speaks the Raft wire.
    pub async fn connect(addr: &str, max_message: usize) -> Result<Self, CallError> {
        let stream = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(connected) => connected?,
            Err(_) => {
                return Err(CallError::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no connection within {CONNECT_TIMEOUT:?}"),
                )));
            }
        };
        stream.set_nodelay(true)?;
        let (r, mut w) = stream.into_split();
        let mut r = BufReader::new(r);
        w.write_all(&MAGIC).await?;
        let mut echo = [0u8; MAGIC.len()];
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, read_all_or_eof(&mut r, &mut echo)).await {
            Ok(Ok(true)) if echo == MAGIC => Ok(Self { r, w, max_message }),
            // Other bytes: a node of an earlier build, whose HTTP/1.1 server
            // answers "HTTP/1.1 400 Bad Request" at once ('/' cannot be in
            // a method name), or an HTTP/2-only server's SETTINGS frame.
            Ok(Ok(true)) => Err(CallError::Unsupported),
            // A close, or silence (a paused or overloaded node): try again
            // later, as for any peer that cannot be reached.
            Ok(Ok(false)) => Err(CallError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed the connection during the handshake",
            ))),
            Err(_) => Err(CallError::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no handshake within {HANDSHAKE_TIMEOUT:?}"),
            ))),
            Ok(Err(e)) => Err(CallError::Io(e)),
        }
    }

    /// Sends one AppendEntries and waits for its answer.
    pub async fn call(&mut self, req: &ipb::AppendEntriesRequest) -> Result<ipb::AppendEntriesResponse, CallError> {
        let body = req.encode_to_vec();
        if body.len() > self.max_message {
            return Err(CallError::Malformed(format!(
                "an AppendEntries of {} bytes is over the limit of {}",
                body.len(),
                self.max_message
            )));
        }
        self.w.write_all(&frame(KIND_OK, &body)?).await?;
        let (kind, body) = match read_frame(&mut self.r, self.max_message).await? {
            Some(frame) => frame,
            None => {
                return Err(CallError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the connection",
                )));
            }
        };
        let text = || String::from_utf8_lossy(&body).into_owned();
        match kind {
            KIND_OK => ipb::AppendEntriesResponse::decode(body.as_slice())
                .map_err(|e| CallError::Malformed(format!("malformed AppendEntries answer: {e}"))),
            KIND_INVALID => Err(CallError::Refused(Refusal::Invalid(text()))),
            KIND_UNAVAILABLE => Err(CallError::Refused(Refusal::Unavailable(text()))),
            other => Err(CallError::Malformed(format!("unknown answer kind {other}"))),
        }
    }
}

/// How long a peer found not to speak the Raft wire is spoken to over gRPC
/// before the wire is tried again (it may have been upgraded meanwhile).
pub const RETRY_UNSUPPORTED: Duration = Duration::from_secs(60);
/// How long, after a connection to a peer failed, its calls go over gRPC
/// before the wire is tried again.
pub const RETRY_FAILED: Duration = Duration::from_secs(1);
/// Idle connections kept per peer.
const MAX_IDLE: usize = 4;

/// A node's Raft wire connections, by peer address. openraft asks for a new
/// network client for every read round (one heartbeat to each follower),
/// besides the one of each replication stream: they all take a connection
/// from here and give it back, so a connection is opened once, not once per
/// round. At most one caller connects to a peer at a time, and for a while
/// after that failed the others use gRPC, as before the wire: a paused or
/// cut-off peer costs one socket, not one per read round.
#[derive(Default)]
pub struct WirePool {
    peers: std::sync::Mutex<std::collections::HashMap<String, Pooled>>,
}

#[derive(Default)]
struct Pooled {
    idle: Vec<WireConn>,
    /// A caller is connecting to the peer.
    connecting: bool,
    /// Until then calls go over gRPC.
    grpc_until: Option<std::time::Instant>,
    /// The last connection found the peer not speaking the wire.
    unsupported: bool,
}

/// What [`WirePool::take`] found for a peer.
pub enum Taken<'a> {
    /// An open connection (the peer may have closed it since).
    Idle(WireConn),
    /// None open: the caller connects, and says how it went.
    Connect(ConnectSlot<'a>),
    /// Use gRPC for this call: the peer does not speak the wire, could not
    /// be reached a moment ago, or another caller is connecting to it.
    Grpc,
}

/// The right to connect to a peer, held by one caller at a time.
pub struct ConnectSlot<'a> {
    pool: &'a WirePool,
    addr: String,
    done: bool,
}

/// How a connection attempt went.
pub enum Connected {
    Yes,
    Failed,
    Unsupported,
}

impl ConnectSlot<'_> {
    /// Reports the attempt; returns true if the peer was just found not to
    /// speak the wire (to log it once).
    pub fn finish(mut self, how: Connected) -> bool {
        self.done = true;
        let mut peers = self.pool.lock();
        let p = peers.entry(self.addr.clone()).or_default();
        p.connecting = false;
        let now = std::time::Instant::now();
        match how {
            Connected::Yes => {
                p.unsupported = false;
                false
            }
            Connected::Failed => {
                p.grpc_until = Some(now + RETRY_FAILED);
                false
            }
            Connected::Unsupported => {
                p.grpc_until = Some(now + RETRY_UNSUPPORTED);
                p.idle.clear();
                !std::mem::replace(&mut p.unsupported, true)
            }
        }
    }
}

impl Drop for ConnectSlot<'_> {
    fn drop(&mut self) {
        // The caller was cancelled while connecting: free the slot.
        if !self.done
            && let Some(p) = self.pool.lock().get_mut(&self.addr)
        {
            p.connecting = false;
        }
    }
}

impl WirePool {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Pooled>> {
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle connection to `addr`, else the right to open one, else gRPC.
    pub fn take(&self, addr: &str) -> Taken<'_> {
        let mut peers = self.lock();
        let p = peers.entry(addr.to_string()).or_default();
        if let Some(conn) = p.idle.pop() {
            return Taken::Idle(conn);
        }
        self.slot(p, addr)
    }

    /// After a kept connection failed: the right to open a new one, else
    /// gRPC.
    pub fn reconnect(&self, addr: &str) -> Taken<'_> {
        let mut peers = self.lock();
        let p = peers.entry(addr.to_string()).or_default();
        self.slot(p, addr)
    }

    fn slot<'a>(&'a self, p: &mut Pooled, addr: &str) -> Taken<'a> {
        if p.connecting || p.grpc_until.is_some_and(|t| std::time::Instant::now() < t) {
            return Taken::Grpc;
        }
        p.grpc_until = None;
        p.connecting = true;
        Taken::Connect(ConnectSlot {
            pool: self,
            addr: addr.to_string(),
            done: false,
        })
    }

    /// Gives back a connection whose last call was answered.
    pub fn give_back(&self, addr: &str, conn: WireConn) {
        let mut peers = self.lock();
        let p = peers.entry(addr.to_string()).or_default();
        if p.idle.len() < MAX_IDLE {
            p.idle.push(conn);
        }
    }
}

/// Fills `buf`; `Ok(false)` if the connection closed first.
async fn read_all_or_eof(r: &mut (impl AsyncRead + Unpin), buf: &mut [u8]) -> io::Result<bool> {
    match r.read_exact(buf).await {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use tokio::net::TcpListener;

    use super::*;

    const MAX: usize = 1 << 20;

    fn request(term: u64) -> ipb::AppendEntriesRequest {
        ipb::AppendEntriesRequest {
            vote: Some(ipb::Vote {
                leader_id: Some(ipb::LeaderId { term, node_id: 1 }),
                committed: true,
            }),
            ..Default::default()
        }
    }

    fn term_of(vote: Option<&ipb::Vote>) -> Option<u64> {
        vote.and_then(|v| v.leader_id.as_ref()).map(|l| l.term)
    }

    /// A listener that sniffs each connection and serves the Raft wire with
    /// `answer`, or says what else arrived.
    async fn server(
        answer: fn(ipb::AppendEntriesRequest) -> Result<ipb::AppendEntriesResponse, Refusal>,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<Protocol>) {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                let p = sniff(&s).await;
                let _ = tx.send(p);
                if p == Protocol::RaftWire {
                    tokio::spawn(serve(s, MAX, Some, move |req| async move { answer(req) }));
                }
            }
        });
        (addr, rx)
    }

    /// Answers with the request's own vote, or refuses term 99.
    fn echo_term(req: ipb::AppendEntriesRequest) -> Result<ipb::AppendEntriesResponse, Refusal> {
        if term_of(req.vote.as_ref()) == Some(99) {
            return Err(Refusal::Unavailable("shutting down".into()));
        }
        Ok(ipb::AppendEntriesResponse {
            result: req.vote.map(ipb::append_entries_response::Result::HigherVote),
        })
    }

    #[tokio::test]
    async fn requests_and_answers_cross_one_connection_in_turn() {
        let (addr, mut seen) = server(echo_term).await;
        let mut conn = WireConn::connect(&addr, MAX).await.expect("connect");
        for term in 1..=50 {
            let resp = conn.call(&request(term)).await.expect("answer");
            let Some(ipb::append_entries_response::Result::HigherVote(vote)) = resp.result else {
                panic!("{resp:?}");
            };
            assert_eq!(term_of(Some(&vote)), Some(term));
        }
        assert_eq!(seen.recv().await, Some(Protocol::RaftWire));
        assert!(seen.try_recv().is_err(), "one connection for all calls");
    }

    #[tokio::test]
    async fn the_pool_lends_one_connection_at_a_time_and_lets_one_caller_connect() {
        let (addr, mut seen) = server(echo_term).await;
        let pool = WirePool::default();
        let Taken::Connect(slot) = pool.take(&addr) else {
            panic!("nothing open yet: connect");
        };
        assert!(matches!(pool.take(&addr), Taken::Grpc), "one caller connects at a time");
        let conn = WireConn::connect(&addr, MAX).await.expect("connect");
        assert!(!slot.finish(Connected::Yes));
        pool.give_back(&addr, conn);
        for term in 1..=3 {
            let Taken::Idle(mut conn) = pool.take(&addr) else {
                panic!("the connection given back");
            };
            conn.call(&request(term)).await.expect("answer");
            pool.give_back(&addr, conn);
        }
        assert_eq!(seen.recv().await, Some(Protocol::RaftWire));
        assert!(seen.try_recv().is_err(), "one connection for every call");

        // A failed attempt sends calls to gRPC for a moment; a cancelled one
        // frees the slot at once.
        let Taken::Connect(slot) = pool.reconnect("down:7401") else {
            panic!("connect");
        };
        assert!(!slot.finish(Connected::Failed));
        assert!(matches!(pool.take("down:7401"), Taken::Grpc));
        let Taken::Connect(slot) = pool.take("gone:7401") else {
            panic!("connect");
        };
        drop(slot);
        assert!(matches!(pool.take("gone:7401"), Taken::Connect(_)));
        // A peer of an earlier build is news once.
        let Taken::Connect(slot) = pool.take("old:7401") else {
            panic!("connect");
        };
        assert!(slot.finish(Connected::Unsupported));
        assert!(matches!(pool.take("old:7401"), Taken::Grpc));
    }

    #[tokio::test]
    async fn a_refusal_is_answered_and_closes_the_connection() {
        let (addr, _seen) = server(echo_term).await;
        let mut conn = WireConn::connect(&addr, MAX).await.expect("connect");
        match conn.call(&request(99)).await {
            Err(CallError::Refused(Refusal::Unavailable(m))) => assert_eq!(m, "shutting down"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(conn.call(&request(1)).await, Err(CallError::Io(_))));
    }

    #[tokio::test]
    async fn an_answer_leaves_when_the_job_holding_it_runs_on_another_thread() {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        let (held_tx, mut held_rx) = tokio::sync::mpsc::unbounded_channel::<Held>();
        tokio::spawn(async move {
            let (s, _) = l.accept().await.expect("accept");
            assert_eq!(sniff(&s).await, Protocol::RaftWire);
            let hold = move |job| {
                assert!(held_tx.send(job).is_ok(), "held");
                None
            };
            serve(s, MAX, hold, |req| async move { echo_term(req) }).await;
        });
        let mut conn = WireConn::connect(&addr, MAX).await.expect("connect");
        for term in 1..=3 {
            let call = tokio::spawn(async move {
                let resp = conn.call(&request(term)).await;
                (conn, resp)
            });
            let job = held_rx.recv().await.expect("a job");
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(!call.is_finished(), "the answer is held until its job runs");
            // As the log's sync thread does: a thread outside the runtime.
            std::thread::spawn(job).join().expect("job ran");
            let (c, resp) = call.await.expect("call");
            let Some(ipb::append_entries_response::Result::HigherVote(vote)) = resp.expect("answer").result else {
                panic!("no vote");
            };
            assert_eq!(term_of(Some(&vote)), Some(term));
            conn = c;
        }
    }

    #[tokio::test]
    async fn an_http2_connection_goes_to_grpc() {
        let (addr, mut seen) = server(echo_term).await;
        let mut s = TcpStream::connect(&addr).await.expect("connect");
        s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.expect("write");
        assert_eq!(seen.recv().await, Some(Protocol::Other));
        // A magic sent in pieces is still the magic.
        let mut s = TcpStream::connect(&addr).await.expect("connect");
        s.write_all(&MAGIC[..3]).await.expect("write");
        tokio::time::sleep(Duration::from_millis(20)).await;
        s.write_all(&MAGIC[3..]).await.expect("write");
        assert_eq!(seen.recv().await, Some(Protocol::RaftWire));
    }

    /// Sends raw bytes after the handshake and returns what the server
    /// answered before closing.
    async fn raw(addr: &str, bytes: &[u8]) -> (u8, String) {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(&MAGIC).await.expect("write");
        let mut echo = [0u8; 8];
        s.read_exact(&mut echo).await.expect("echo");
        s.write_all(bytes).await.expect("write");
        let mut r = BufReader::new(s);
        let (kind, body) = read_frame(&mut r, MAX).await.expect("frame").expect("an answer");
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).await.expect("closed");
        assert!(rest.is_empty());
        (kind, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn malformed_and_oversized_frames_are_refused_as_invalid() {
        let (addr, _seen) = server(echo_term).await;
        // A body that is not an AppendEntriesRequest.
        let (kind, msg) = raw(&addr, &[0, 0, 0, 4, KIND_OK, 0xff, 0xff, 0xff]).await;
        assert_eq!(kind, KIND_INVALID, "{msg}");
        assert!(msg.contains("malformed"), "{msg}");
        // A length over the limit, refused before any body is read.
        let (kind, msg) = raw(&addr, &(u32::MAX).to_be_bytes()).await;
        assert_eq!(kind, KIND_INVALID);
        assert!(msg.contains("over the limit"), "{msg}");
        // An empty frame, and an unknown kind.
        assert_eq!(raw(&addr, &[0, 0, 0, 0]).await.0, KIND_INVALID);
        assert_eq!(raw(&addr, &[0, 0, 0, 1, 7]).await.0, KIND_INVALID);
        // The server still takes new connections.
        let mut conn = WireConn::connect(&addr, MAX).await.expect("connect");
        assert!(conn.call(&request(3)).await.is_ok());
    }

    /// A server that writes `greeting` to each connection and then keeps it
    /// open for a while (or closes it at once, if `close`).
    async fn greeter(greeting: &'static [u8], close: bool) -> String {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.expect("accept");
            s.write_all(greeting).await.expect("write");
            if !close {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_peer_that_answers_the_magic_with_other_bytes_is_unsupported() {
        // What a node of an earlier build answers (its HTTP/1.1 server), and
        // an HTTP/2-only server's SETTINGS frame.
        for greeting in [
            &b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n"[..],
            &[0u8, 0, 0, 4, 0, 0, 0, 0, 0][..],
        ] {
            let addr = greeter(greeting, false).await;
            assert!(matches!(
                WireConn::connect(&addr, MAX).await,
                Err(CallError::Unsupported)
            ));
        }
    }

    #[tokio::test]
    async fn a_silent_closed_or_absent_peer_is_unreachable_not_unsupported() {
        // Silence (a paused node), a close during the handshake, nobody
        // listening: all tried again later over the wire.
        for (greeting, close) in [(&b""[..], false), (&b"HSR"[..], true)] {
            let addr = greeter(greeting, close).await;
            assert!(matches!(WireConn::connect(&addr, MAX).await, Err(CallError::Io(_))));
        }
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr").to_string();
        drop(l);
        assert!(matches!(WireConn::connect(&addr, MAX).await, Err(CallError::Io(_))));
    }
}
