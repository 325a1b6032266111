//! The connection to a handlestore cluster: a list of endpoints, the node
//! believed to lead, and the retry loop every call goes through.
//!
//! A call is tried on the leader (or the last node that answered); on
//! UNAVAILABLE, a transport error or a per-attempt timeout it moves on, to
//! the leader named in the error if there is one, else to the next node,
//! after an exponential backoff with full jitter (and at least what a node
//! that refused the call for load asked for, `grpc-retry-pushback-ms`),
//! until the call's overall deadline. Writes carry a `(client_id, seq)` that every retry reuses, so a
//! write retried after a leader crash is applied exactly once.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use handlestore_proto::v1 as pb;
use http::Uri;
use rand::Rng;
use tokio::time::Instant;

use crate::error::{Error, Result, detail};
use crate::transport::NodeChannel;

/// Calls one gRPC method through [`Client::call`] (failover, retries,
/// deadline): `rpc!(client, make_stub, method, message)`, where `make_stub`
/// turns a channel into the service's client. The message is cloned per
/// attempt, so every retry sends the same write id.
macro_rules! rpc {
    ($client:expr, $stub:expr, $method:ident, $msg:expr) => {{
        let msg = $msg;
        $client
            .call(|ch, timeout| {
                let mut req = tonic::Request::new(msg.clone());
                req.set_timeout(timeout);
                let mut stub = $stub(ch);
                async move { stub.$method(req).await }
            })
            .await
    }};
}
pub(crate) use rpc;

pub use handlestore_proto::meta::LEADER_HEADER;

/// The largest gRPC message the client accepts or sends (values are limited
/// by the node, 1 MiB by default).
pub(crate) const MAX_MESSAGE: usize = 64 << 20;

/// Read consistency, chosen per call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Consistency {
    /// Read-index from the leader, served once the node has applied it.
    #[default]
    Linearizable,
    /// Served by a node that has applied at least this revision
    /// (read-your-writes without a leader round trip).
    AtLeast(u64),
    /// Whatever the node has applied.
    Stale,
}

impl Consistency {
    pub(crate) fn to_pb(self) -> pb::ReadOptions {
        match self {
            Consistency::Linearizable => pb::ReadOptions {
                consistency: pb::Consistency::Linearizable as i32,
                min_revision: 0,
            },
            Consistency::AtLeast(r) => pb::ReadOptions {
                consistency: pb::Consistency::AtLeast as i32,
                min_revision: r,
            },
            Consistency::Stale => pb::ReadOptions {
                consistency: pb::Consistency::Stale as i32,
                min_revision: 0,
            },
        }
    }
}

/// Builds a [`Client`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    endpoints: Vec<String>,
    namespace: String,
    deadline: Duration,
    attempt_timeout: Duration,
    connect_timeout: Duration,
    backoff_base: Duration,
    backoff_max: Duration,
    max_write_calls: usize,
    max_read_calls: usize,
    tls: Option<crate::tls::ClientTls>,
    token: Option<String>,
}

impl ClientBuilder {
    /// TLS to the nodes: their CA, and a client certificate where they
    /// require one. Endpoints without a scheme then use `https://`.
    pub fn tls(mut self, tls: crate::tls::ClientTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The bearer token every call carries (`handlestore user add` or
    /// `user token-rotate` made it), for clusters with auth enabled.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// The namespace (tenant) every call of this client uses. Default:
    /// "default".
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = ns.into();
        self
    }

    /// Overall deadline of one call, across all its retries (default 15 s).
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = d;
        self
    }

    /// Longest one attempt on one node may take (default 3 s).
    pub fn attempt_timeout(mut self, d: Duration) -> Self {
        self.attempt_timeout = d;
        self
    }

    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }

    /// Backoff between retries: full jitter over `base * 2^attempt`,
    /// capped at `max` (defaults 25 ms and 1 s).
    pub fn backoff(mut self, base: Duration, max: Duration) -> Self {
        self.backoff_base = base;
        self.backoff_max = max;
        self
    }

    /// At most this many calls carrying writes in flight at once (default
    /// 8, at least 1). Writes issued while all are busy wait and leave
    /// together in the next free call: under load, many writes share one
    /// round trip (see the `writes` module). A write that finds a call free
    /// goes at once.
    pub fn max_write_calls(mut self, n: usize) -> Self {
        self.max_write_calls = n.max(1);
        self
    }

    /// At most this many calls carrying point reads (handle gets, state
    /// retrieves) in flight at once (default 8, at least 1). Reads issued
    /// while all are busy wait and leave together in the next free call,
    /// one `Reads.Submit` (see the `reads` module). A read that finds a
    /// call free goes at once, on its own method.
    pub fn max_read_calls(mut self, n: usize) -> Self {
        self.max_read_calls = n.max(1);
        self
    }

    /// Creates the client. Connections are made lazily, so this succeeds
    /// while nodes are down; it fails only on malformed endpoints.
    pub fn build(self) -> Result<Client> {
        if self.endpoints.is_empty() {
            return Err(Error::InvalidArgument("no endpoints given".into()));
        }
        if !crate::id::is_name(&self.namespace, 64) {
            return Err(Error::InvalidArgument(format!(
                "namespace {:?} may only contain A-Z a-z 0-9 _ - . (1-64 bytes)",
                self.namespace
            )));
        }
        let nodes = self
            .endpoints
            .iter()
            .map(|raw| self.node(raw))
            .collect::<Result<Vec<_>>>()?;
        Ok(Client {
            inner: Arc::new(Inner {
                nodes,
                preferred: AtomicUsize::new(0),
                watches: AtomicUsize::new(0),
                namespace: self.namespace,
                client_id: rand::rng().random_range(1..u64::MAX),
                next_seq: AtomicU64::new(1),
                in_flight: Mutex::new(BTreeSet::new()),
                deadline: self.deadline,
                attempt_timeout: self.attempt_timeout,
                backoff_base: self.backoff_base,
                backoff_max: self.backoff_max,
                writes: Arc::new(crate::writes::coalescer(self.max_write_calls)),
                reads: Arc::new(crate::reads::coalescer(self.max_read_calls)),
            }),
        })
    }
}

impl ClientBuilder {
    /// One endpoint's channels (dialed on first use).
    fn node(&self, raw: &str) -> Result<Node> {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let url = if raw.contains("://") {
            raw.to_string()
        } else {
            format!("{scheme}://{raw}")
        };
        let uri: Uri = url
            .parse()
            .map_err(|e| Error::InvalidArgument(format!("endpoint {raw:?}: {e}")))?;
        let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
        let calls = NodeChannel::new(&url, self.connect_timeout, self.tls.clone(), self.token.as_deref())
            .map_err(|e| Error::InvalidArgument(format!("endpoint {raw:?}: {e}")))?;
        Ok(Node { url, authority, calls })
    }
}

struct Node {
    url: String,
    /// "host:port", to match leader hints.
    authority: String,
    /// Every call to this node.
    calls: NodeChannel,
}

pub(crate) struct Inner {
    nodes: Vec<Node>,
    preferred: AtomicUsize,
    /// Watches opened: they go round the nodes other than the preferred.
    watches: AtomicUsize,
    namespace: String,
    client_id: u64,
    next_seq: AtomicU64,
    in_flight: Mutex<BTreeSet<u64>>,
    pub(crate) deadline: Duration,
    attempt_timeout: Duration,
    backoff_base: Duration,
    backoff_max: Duration,
    /// Writes waiting for a call, and the calls in flight (shared with
    /// the clients of other namespaces made from this one, as the
    /// connections are).
    pub(crate) writes: Arc<crate::coalesce::Coalescer<crate::writes::Queued, pb::write_result::Result>>,
    /// Point reads waiting for a call, and the calls in flight (shared
    /// the same way).
    pub(crate) reads: Arc<crate::coalesce::Coalescer<pb::Read, pb::read_result::Result>>,
}

/// A handle to a cluster. Cheap to clone; clones share connections and the
/// exactly-once sequence.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("endpoints", &self.endpoints())
            .field("namespace", &self.inner.namespace)
            .finish()
    }
}

/// A write's identity for exactly-once retries; released when dropped.
pub(crate) struct WriteTicket {
    inner: Arc<Inner>,
    pub(crate) id: pb::WriteId,
}

impl Drop for WriteTicket {
    fn drop(&mut self) {
        self.inner
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id.seq);
    }
}

impl Client {
    /// A builder with defaults for these endpoints ("http://host:port" or
    /// "host:port").
    pub fn builder<I, S>(endpoints: I) -> ClientBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ClientBuilder {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            namespace: handlestore_proto::limits::DEFAULT_NAMESPACE.into(),
            deadline: Duration::from_secs(15),
            attempt_timeout: Duration::from_secs(3),
            connect_timeout: Duration::from_secs(1),
            backoff_base: Duration::from_millis(25),
            backoff_max: Duration::from_secs(1),
            max_write_calls: 8,
            max_read_calls: 8,
            tls: None,
            token: None,
        }
    }

    /// Connects with the defaults. Nodes are dialed lazily, on first use.
    pub async fn connect<I, S>(endpoints: I) -> Result<Client>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::builder(endpoints).build()
    }

    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.inner.nodes.iter().map(|n| n.url.clone()).collect()
    }

    /// The random id under which this client's writes are deduplicated.
    pub fn client_id(&self) -> u64 {
        self.inner.client_id
    }

    /// A handle store of JSON values named `store` (e.g. "cart").
    pub fn handle_store<T>(&self, store: &str) -> crate::cluster_store::ClusterHandleStoreBuilder<T> {
        crate::cluster_store::ClusterHandleStoreBuilder::new(self.clone(), store)
    }

    /// The state tool in this client's namespace.
    pub fn state_tool(&self) -> crate::cluster_state::ClusterStateTool {
        crate::cluster_state::ClusterStateTool::new(self.clone())
    }

    /// The same cluster connection in another namespace (shares
    /// connections, and the calls that carry concurrent writes and reads;
    /// its own exactly-once sequence).
    pub fn with_namespace(&self, ns: &str) -> Result<Client> {
        if !crate::id::is_name(ns, 64) {
            return Err(Error::InvalidArgument(format!(
                "namespace {ns:?} may only contain A-Z a-z 0-9 _ - . (1-64 bytes)"
            )));
        }
        let i = &self.inner;
        Ok(Client {
            inner: Arc::new(Inner {
                nodes: i
                    .nodes
                    .iter()
                    .map(|n| Node {
                        url: n.url.clone(),
                        authority: n.authority.clone(),
                        calls: n.calls.clone(),
                    })
                    .collect(),
                preferred: AtomicUsize::new(i.preferred.load(Ordering::Relaxed)),
                watches: AtomicUsize::new(0),
                namespace: ns.to_string(),
                client_id: rand::rng().random_range(1..u64::MAX),
                next_seq: AtomicU64::new(1),
                in_flight: Mutex::new(BTreeSet::new()),
                deadline: i.deadline,
                attempt_timeout: i.attempt_timeout,
                backoff_base: i.backoff_base,
                backoff_max: i.backoff_max,
                writes: i.writes.clone(),
                reads: i.reads.clone(),
            }),
        })
    }

    /// The channel to one endpoint (by index), for admin tools: tonic's
    /// generated clients take it, and its calls carry this client's TLS
    /// and token.
    pub fn channel(&self, index: usize) -> Option<NodeChannel> {
        self.inner.nodes.get(index).map(|n| n.calls.clone())
    }

    /// Allocates a write id. Keep the ticket alive across all retries of
    /// the write.
    pub(crate) fn write_ticket(&self) -> WriteTicket {
        // The id is taken under the lock of the set it joins: taken outside
        // it, a thread could take id n, be preempted, and let another take
        // n + 1 and report n + 1 as its first incomplete write, after which
        // the cluster refuses write n as answered before.
        let (seq, first_incomplete_seq) = {
            let mut set = self.inner.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            let seq = self.inner.next_seq.fetch_add(1, Ordering::Relaxed);
            set.insert(seq);
            (seq, set.first().copied().unwrap_or(seq))
        };
        WriteTicket {
            inner: self.inner.clone(),
            id: pb::WriteId {
                client_id: self.inner.client_id,
                seq,
                first_incomplete_seq,
            },
        }
    }

    /// Runs `attempt` against the cluster with failover and retries until
    /// it succeeds, fails for a reason retrying cannot fix, or the deadline
    /// passes.
    pub(crate) async fn call<R, F, Fut>(&self, mut attempt: F) -> Result<R>
    where
        F: FnMut(NodeChannel, Duration) -> Fut,
        Fut: Future<Output = std::result::Result<tonic::Response<R>, tonic::Status>>,
    {
        let inner = &self.inner;
        let n = inner.nodes.len();
        let start = Instant::now();
        let deadline = start + inner.deadline;
        let mut idx = inner.preferred.load(Ordering::Relaxed) % n;
        let mut tries: u32 = 0;
        loop {
            let now = Instant::now();
            let remaining = deadline.saturating_duration_since(now);
            let timeout = remaining.min(inner.attempt_timeout).max(Duration::from_millis(1));
            let node = &inner.nodes[idx];
            let res = match tokio::time::timeout(timeout, attempt(node.calls.clone(), timeout)).await {
                Ok(r) => r,
                Err(_) => Err(tonic::Status::deadline_exceeded(format!(
                    "no answer from {} within {timeout:?}",
                    node.url
                ))),
            };
            let status = match res {
                Ok(resp) => {
                    // A follower that forwarded a write names the leader:
                    // the next call goes there, without the extra hop.
                    let next = self.leader_index(resp.metadata()).unwrap_or(idx);
                    inner.preferred.store(next, Ordering::Relaxed);
                    return Ok(resp.into_inner());
                }
                Err(s) if retryable(&s) => s,
                Err(s) => return Err(Error::from(s)),
            };
            tracing::debug!(node = %node.url, code = ?status.code(), msg = status.message(), "retrying");
            idx = self
                .leader_index(status.metadata())
                .or_else(|| self.index_of(&detail(&status).leader_addr))
                .unwrap_or((idx + 1) % n);
            inner.preferred.store(idx, Ordering::Relaxed);
            let sleep = self.backoff(tries).max(pushback(&status));
            tries += 1;
            if Instant::now() + sleep >= deadline {
                return Err(Error::Deadline {
                    deadline: inner.deadline,
                    last: format!("{}: {}", node.url, status.message()),
                });
            }
            tokio::time::sleep(sleep).await;
        }
    }

    /// How long to wait before the next try after `tries` failed ones:
    /// exponential, capped, with full jitter.
    pub(crate) fn backoff(&self, tries: u32) -> Duration {
        let inner = &self.inner;
        let cap = inner
            .backoff_base
            .saturating_mul(1u32 << tries.min(16))
            .min(inner.backoff_max);
        Duration::from_micros(rand::rng().random_range(0..=cap.as_micros() as u64))
    }

    /// The endpoint calls go to first (the leader, when it is known).
    pub(crate) fn preferred(&self) -> usize {
        self.inner.preferred.load(Ordering::Relaxed) % self.inner.nodes.len()
    }

    /// The node a new watch opens on: the nodes other than the preferred
    /// one (the leader, once a write found it) in turn, so that serving
    /// watches does not take the leader's time from the writes.
    pub(crate) fn watch_node(&self) -> usize {
        let n = self.inner.nodes.len();
        if n < 2 {
            return 0;
        }
        let k = self.inner.watches.fetch_add(1, Ordering::Relaxed) % (n - 1);
        (self.preferred() + 1 + k) % n
    }

    /// The endpoint an answer's metadata names as leader, if it is one of
    /// ours.
    fn leader_index(&self, metadata: &tonic::metadata::MetadataMap) -> Option<usize> {
        self.index_of(metadata.get(LEADER_HEADER)?.to_str().ok()?)
    }

    /// The endpoint with this "host:port", if it is one of ours.
    fn index_of(&self, addr: &str) -> Option<usize> {
        if addr.is_empty() {
            return None;
        }
        self.inner.nodes.iter().position(|n| n.authority == addr)
    }
}

/// gRPC's header for how long a node asks clients to wait before trying
/// again (a node sends it when it refuses a call for load: `overloaded`).
const PUSHBACK_HEADER: &str = "grpc-retry-pushback-ms";

/// The wait a refusal asked for (none if it named none; 5 s at most).
fn pushback(s: &tonic::Status) -> Duration {
    s.metadata()
        .get(PUSHBACK_HEADER)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_millis)
        .min(Duration::from_secs(5))
}

/// Worth trying again (elsewhere): the node could not serve it now.
pub(crate) fn retryable(s: &tonic::Status) -> bool {
    use tonic::Code::*;
    if let Some(reason) = handlestore_proto::reason::Reason::of(s) {
        return reason.retry() == handlestore_proto::reason::Retry::Yes;
    }
    match s.code() {
        Unavailable | DeadlineExceeded | Aborted | Cancelled => true,
        // Connection resets surface as Unknown/Internal from h2.
        Unknown | Internal => s.details().is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write id tells the cluster that every lower id of its client is
    /// answered or abandoned (`first_incomplete_seq`); the cluster then
    /// refuses those ids. So no id may be issued claiming that while a lower
    /// one is still being issued or in flight, however the threads of a
    /// runtime interleave (seen in the bench at 256 writers: a mint refused
    /// as "below the first incomplete write").
    #[test]
    fn a_write_id_never_claims_a_lower_one_still_in_flight_is_done() {
        const THREADS: usize = 4;
        const PER_THREAD: usize = 20_000;
        // The client's lazy connections need a runtime to be made in.
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        let _in_runtime = runtime.enter();
        let client = Client::builder(["http://127.0.0.1:1"]).build().expect("client");
        // One clock for every thread: a ticket is stamped after it is issued
        // and before it is released.
        let clock = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..THREADS)
            .map(|_| {
                let (client, clock) = (client.clone(), clock.clone());
                std::thread::spawn(move || {
                    let mut seen = Vec::with_capacity(PER_THREAD);
                    for _ in 0..PER_THREAD {
                        let ticket = client.write_ticket();
                        let issued = clock.fetch_add(1, Ordering::SeqCst);
                        let (seq, first) = (ticket.id.seq, ticket.id.first_incomplete_seq);
                        let released = clock.fetch_add(1, Ordering::SeqCst);
                        drop(ticket);
                        seen.push((seq, first, issued, released));
                    }
                    seen
                })
            })
            .collect();
        let mut all: Vec<_> = threads.into_iter().flat_map(|t| t.join().expect("thread")).collect();
        all.sort_unstable();
        assert_eq!(all.len(), THREADS * PER_THREAD);
        // released_before[i]: the latest release among ids 1..=i+1.
        let mut released_before = Vec::with_capacity(all.len());
        let mut latest = 0;
        for (i, &(seq, _, _, released)) in all.iter().enumerate() {
            assert_eq!(seq, i as u64 + 1, "ids are issued without gaps");
            latest = latest.max(released);
            released_before.push(latest);
        }
        for &(seq, first, issued, _) in &all {
            assert!(first <= seq, "id {seq} claims itself done ({first})");
            if first > 1 {
                let latest = released_before[first as usize - 2];
                assert!(
                    latest < issued,
                    "id {seq} claimed every id below {first} done while one of them was not yet released"
                );
            }
        }
    }
}
