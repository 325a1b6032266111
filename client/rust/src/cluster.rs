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
//!
//! A [`Client`] is made of the layers below it: its nodes and that retry
//! loop (the `failover` module), its write ids (`write_ids`), and its
//! queues of writes and point reads ([`writes`](crate::writes),
//! [`reads`](crate::reads)). What is built over a client (the handle
//! stores, the state tool, watches, the auth and key ring calls) sits above
//! it, in modules that add the client's methods for it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::v1 as pb;
use handlestore_proto::wire;

use crate::error::{Error, Result};
use crate::failover::{Failover, Node, Timing};
use crate::reads::{ReadStats, Reads};
use crate::tls::ClientTls;
use crate::transport::NodeChannel;
use crate::write_ids::{WriteIds, WriteTicket};
use crate::writes::{WriteStats, Writes};

pub use handlestore_proto::meta::LEADER_HEADER;

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
    tls: Option<ClientTls>,
    token: Option<String>,
}

impl ClientBuilder {
    /// TLS to the nodes: their CA, and a client certificate where they
    /// require one. Endpoints without a scheme then use `https://`.
    pub fn tls(mut self, tls: ClientTls) -> Self {
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
            .map(|raw| Node::new(raw, self.connect_timeout, self.tls.as_ref(), self.token.as_deref()))
            .collect::<Result<Vec<_>>>()?;
        let timing = Timing {
            deadline: self.deadline,
            attempt_timeout: self.attempt_timeout,
            backoff_base: self.backoff_base,
            backoff_max: self.backoff_max,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                failover: Arc::new(Failover::new(nodes, timing)),
                namespace: self.namespace,
                ids: Arc::new(WriteIds::new()),
                writes: Writes::new(self.max_write_calls),
                reads: Reads::new(self.max_read_calls),
            }),
        })
    }
}

struct Inner {
    /// The nodes and the retry loop over them (the queues' calls hold it
    /// too).
    failover: Arc<Failover>,
    namespace: String,
    ids: Arc<WriteIds>,
    /// Writes waiting for a call, and the calls in flight (shared with
    /// the clients of other namespaces made from this one, as the
    /// connections are).
    writes: Writes,
    /// Point reads waiting for a call, and the calls in flight (shared
    /// the same way).
    reads: Reads,
}

/// A handle to a cluster. Cheap to clone; clones share connections and the
/// exactly-once sequence.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("endpoints", &self.endpoints())
            .field("namespace", &self.inner.namespace)
            .finish()
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
            deadline: wire::CALL_TIMEOUT,
            attempt_timeout: wire::ATTEMPT_TIMEOUT,
            connect_timeout: wire::CONNECT_TIMEOUT,
            backoff_base: wire::BACKOFF_BASE,
            backoff_max: wire::BACKOFF_MAX,
            max_write_calls: wire::MAX_CALLS,
            max_read_calls: wire::MAX_CALLS,
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
        self.inner.failover.endpoints()
    }

    /// The random id under which this client's writes are deduplicated.
    pub fn client_id(&self) -> u64 {
        self.inner.ids.client_id()
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
                failover: Arc::new(i.failover.same_nodes()),
                namespace: ns.to_string(),
                ids: Arc::new(WriteIds::new()),
                writes: i.writes.clone(),
                reads: i.reads.clone(),
            }),
        })
    }

    /// The channel to one endpoint (by index), for admin tools: tonic's
    /// generated clients take it, and its calls carry this client's TLS
    /// and token.
    pub fn channel(&self, index: usize) -> Option<NodeChannel> {
        self.inner.failover.channel(index)
    }

    /// Writes sent so far and the calls that carried them: under load,
    /// several writes per call.
    pub fn write_stats(&self) -> WriteStats {
        self.inner.writes.stats()
    }

    /// Point reads sent so far and the calls that carried them: under
    /// load, several reads per call.
    pub fn read_stats(&self) -> ReadStats {
        self.inner.reads.stats()
    }
}

/// What the modules above the client call it through.
impl Client {
    /// Allocates a write id. Keep the ticket alive across all retries of
    /// the write.
    pub(crate) fn write_ticket(&self) -> WriteTicket {
        self.inner.ids.ticket()
    }

    /// Sends one write, alone or with others (the `writes` module), and
    /// returns its answer.
    pub(crate) async fn write(&self, op: pb::write::Op, ticket: WriteTicket) -> Result<pb::write_result::Result> {
        self.inner.writes.send(&self.inner.failover, op, ticket).await
    }

    /// Sends one point read, alone or with others (the `reads` module), and
    /// returns its answer.
    pub(crate) async fn read(&self, op: pb::read::Op) -> Result<pb::read_result::Result> {
        self.inner.reads.send(&self.inner.failover, op).await
    }

    /// Runs `attempt` against the cluster with failover and retries until
    /// it succeeds, fails for a reason retrying cannot fix, or the deadline
    /// passes (what [`rpc!`](crate::failover::rpc) calls).
    pub(crate) async fn call<R, F, Fut>(&self, attempt: F) -> Result<R>
    where
        F: FnMut(NodeChannel, Duration) -> Fut,
        Fut: Future<Output = std::result::Result<tonic::Response<R>, tonic::Status>>,
    {
        self.inner.failover.call(attempt).await
    }

    /// Overall deadline of one call, across all its retries.
    pub(crate) fn deadline(&self) -> Duration {
        self.inner.failover.deadline()
    }

    /// How long to wait before the next try after `tries` failed ones:
    /// exponential, capped, with full jitter.
    pub(crate) fn backoff(&self, tries: u32) -> Duration {
        self.inner.failover.backoff(tries)
    }

    /// The node a new watch opens on: the nodes other than the preferred
    /// one (the leader, once a write found it) in turn, so that serving
    /// watches does not take the leader's time from the writes.
    pub(crate) fn watch_node(&self) -> usize {
        self.inner.failover.watch_node()
    }
}
