//! The retry loop every call of a client goes through: its nodes, the one
//! believed to lead, failover, backoff and the call's overall deadline (the
//! `cluster` module describes it for users). The layer below the `Client`:
//! it knows nodes and calls, not namespaces, write ids or queues.
//!
//! [`rpc!`](rpc) calls one gRPC method through it (or through anything with
//! the same `call`, as the `Client` has).

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use handlestore_proto::meta::LEADER_HEADER;
use handlestore_proto::wire;
use http::Uri;
use rand::Rng;
use tokio::time::Instant;

use crate::error::{Error, Result, detail};
use crate::retry::{give_up, retryable};
use crate::tls::ClientTls;
use crate::transport::NodeChannel;

/// Calls one gRPC method through `call` (failover, retries, deadline):
/// `rpc!(client, make_stub, method, message)`, where `make_stub` turns a
/// channel into the service's client. The message is cloned per attempt,
/// so every retry sends the same write id.
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

/// One endpoint.
pub(crate) struct Node {
    url: String,
    /// "host:port", to match leader hints.
    authority: String,
    /// Every call to this node.
    calls: NodeChannel,
}

impl Node {
    /// One endpoint's channel (dialed on first use), from "http://host:port"
    /// or "host:port" (`https://` with TLS).
    pub(crate) fn new(
        raw: &str,
        connect_timeout: Duration,
        tls: Option<&ClientTls>,
        token: Option<&str>,
    ) -> Result<Node> {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = if raw.contains("://") {
            raw.to_string()
        } else {
            format!("{scheme}://{raw}")
        };
        let uri: Uri = url
            .parse()
            .map_err(|e| Error::InvalidArgument(format!("endpoint {raw:?}: {e}")))?;
        let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
        let calls = NodeChannel::new(&url, connect_timeout, tls.cloned(), token)
            .map_err(|e| Error::InvalidArgument(format!("endpoint {raw:?}: {e}")))?;
        Ok(Node { url, authority, calls })
    }
}

/// How long calls may take, and how long to wait between their tries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    /// Overall deadline of one call, across all its retries.
    pub deadline: Duration,
    /// Longest one attempt on one node may take.
    pub attempt_timeout: Duration,
    /// Backoff between retries: full jitter over `base * 2^attempt`,
    /// capped at `max`.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
}

/// A client's nodes and the retry loop over them.
pub(crate) struct Failover {
    nodes: Vec<Node>,
    preferred: AtomicUsize,
    /// Watches opened: they go round the nodes other than the preferred.
    watches: AtomicUsize,
    timing: Timing,
}

impl Failover {
    pub(crate) fn new(nodes: Vec<Node>, timing: Timing) -> Self {
        Failover {
            nodes,
            preferred: AtomicUsize::new(0),
            watches: AtomicUsize::new(0),
            timing,
        }
    }

    /// The same nodes, for another client (of another namespace): shares
    /// the connections, starts at this one's preferred node.
    pub(crate) fn same_nodes(&self) -> Self {
        Failover {
            nodes: self
                .nodes
                .iter()
                .map(|n| Node {
                    url: n.url.clone(),
                    authority: n.authority.clone(),
                    calls: n.calls.clone(),
                })
                .collect(),
            preferred: AtomicUsize::new(self.preferred.load(Ordering::Relaxed)),
            watches: AtomicUsize::new(0),
            timing: self.timing,
        }
    }

    pub(crate) fn endpoints(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url.clone()).collect()
    }

    /// The channel to one endpoint (by index).
    pub(crate) fn channel(&self, index: usize) -> Option<NodeChannel> {
        self.nodes.get(index).map(|n| n.calls.clone())
    }

    /// Overall deadline of one call, across all its retries.
    pub(crate) fn deadline(&self) -> Duration {
        self.timing.deadline
    }

    /// Runs `attempt` against the cluster with failover and retries until
    /// it succeeds, fails for a reason retrying cannot fix, or the deadline
    /// passes.
    pub(crate) async fn call<R, F, Fut>(&self, mut attempt: F) -> Result<R>
    where
        F: FnMut(NodeChannel, Duration) -> Fut,
        Fut: Future<Output = std::result::Result<tonic::Response<R>, tonic::Status>>,
    {
        let n = self.nodes.len();
        let start = Instant::now();
        let deadline = start + self.timing.deadline;
        let mut idx = self.preferred.load(Ordering::Relaxed) % n;
        let mut tries: u32 = 0;
        loop {
            let now = Instant::now();
            let remaining = deadline.saturating_duration_since(now);
            let timeout = remaining.min(self.timing.attempt_timeout).max(Duration::from_millis(1));
            let node = &self.nodes[idx];
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
                    self.preferred.store(next, Ordering::Relaxed);
                    return Ok(resp.into_inner());
                }
                Err(s) if retryable(&s) => s,
                Err(s) => return Err(give_up(s)),
            };
            tracing::debug!(node = %node.url, code = ?status.code(), msg = status.message(), "retrying");
            idx = self
                .leader_index(status.metadata())
                .or_else(|| self.index_of(&detail(&status).leader_addr))
                .unwrap_or((idx + 1) % n);
            self.preferred.store(idx, Ordering::Relaxed);
            let sleep = self.backoff(tries).max(pushback(&status));
            tries += 1;
            if Instant::now() + sleep >= deadline {
                return Err(Error::Deadline {
                    deadline: self.timing.deadline,
                    last: format!("{}: {}", node.url, status.message()),
                });
            }
            tokio::time::sleep(sleep).await;
        }
    }

    /// How long to wait before the next try after `tries` failed ones:
    /// exponential, capped, with full jitter.
    pub(crate) fn backoff(&self, tries: u32) -> Duration {
        let cap = self
            .timing
            .backoff_base
            .saturating_mul(1u32 << tries.min(16))
            .min(self.timing.backoff_max);
        Duration::from_micros(rand::rng().random_range(0..=cap.as_micros() as u64))
    }

    /// The endpoint calls go to first (the leader, when it is known).
    fn preferred(&self) -> usize {
        self.preferred.load(Ordering::Relaxed) % self.nodes.len()
    }

    /// The node a new watch opens on: the nodes other than the preferred
    /// one (the leader, once a write found it) in turn, so that serving
    /// watches does not take the leader's time from the writes.
    pub(crate) fn watch_node(&self) -> usize {
        let n = self.nodes.len();
        if n < 2 {
            return 0;
        }
        let k = self.watches.fetch_add(1, Ordering::Relaxed) % (n - 1);
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
        self.nodes.iter().position(|n| n.authority == addr)
    }
}

/// The wait a refusal asked for in gRPC's pushback header (a node sends it
/// when it refuses a call for load: `overloaded`): none if it named none,
/// `wire::MAX_PUSHBACK` at most.
fn pushback(s: &tonic::Status) -> Duration {
    s.metadata()
        .get(wire::PUSHBACK_HEADER)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .map_or(Duration::ZERO, Duration::from_millis)
        .min(wire::MAX_PUSHBACK)
}
