//! Raft RPCs to peers: AppendEntries over the Raft wire (`peer_wire`, inside
//! mutual TLS with peer TLS), one connection per follower, or over gRPC to
//! a node that does not speak it;
//! everything else over tonic, one cached HTTP/2 channel per peer address.
//! Snapshots are streamed (client-streaming gRPC) in chunks read from the
//! snapshot file, so memory stays flat whatever the snapshot size.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use handlestore_proto::internal::v1 as ipb;
use ipb::raft_client::RaftClient;
use openraft::Snapshot;
use openraft::error::{
    InstallSnapshotError, NetworkError, PayloadTooLarge, RPCError, RaftError, ReplicationClosed, StreamingError,
    Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, SnapshotResponse,
    VoteRequest, VoteResponse,
};

use crate::config::Member;
use crate::tls::peer::PeerClientTls;
use handlestore_proto::conn::{ClientConn, Conn};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tonic::transport::{Channel, Endpoint};

use crate::raft::codec;
use crate::raft::log::durability::Durability;
use crate::raft::log::room::Room;
use crate::raft::net::append_budget;
use crate::raft::net::commit_notice::{self, CommitNotices};
use crate::raft::net::identity::Identity;
use crate::raft::net::intake::{self, Intake};
use crate::raft::net::names::Names;
use crate::raft::net::peer_wire::{CallError, ConnectSlot, Connected, Refusal, Taken, WireConn, WirePool};
use crate::raft::net::reach::Reach;
use crate::raft::{NodeId, TypeConfig, Vote};

/// Snapshot data per streamed message.
const SNAPSHOT_CHUNK: usize = 1 << 20;
/// Node-to-node messages can carry many log entries.
pub const MAX_PEER_MESSAGE: usize = 1 << 30;

/// A cache of gRPC channels by peer address ("host:port"). Keep separate
/// pools for Raft traffic and forwarded client traffic, so a burst of one
/// does not queue behind the other on one HTTP/2 connection. With peer TLS
/// every channel is mutual TLS ([`tls::peer`](crate::tls::peer)). Every connection
/// resolves the address then (`names`), and a channel opened before its
/// name resolved elsewhere is replaced.
#[derive(Default)]
pub struct Peers {
    channels: Mutex<HashMap<String, (Channel, u64)>>,
    tls: Option<Arc<PeerClientTls>>,
    names: Names,
}

impl Peers {
    pub fn new(tls: Option<Arc<PeerClientTls>>, names: Names) -> Self {
        Self {
            channels: Mutex::default(),
            tls,
            names,
        }
    }

    /// Where peers' names resolve, for every connection of this node.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// The TLS configuration of a Raft wire connection (mutual TLS, the
    /// wire asked for by ALPN), when peers are dialed through TLS.
    pub fn wire_tls(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.tls.as_deref().map(crate::tls::peer::wire_config)
    }

    pub fn channel(&self, addr: &str) -> Result<Channel, tonic::transport::Error> {
        let generation = self.names.current(addr);
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((ch, opened_at)) = map.get(addr)
            && *opened_at == generation
        {
            return Ok(ch.clone());
        }
        let ch = self.open(addr)?;
        map.insert(addr.to_string(), (ch.clone(), generation));
        Ok(ch)
    }

    /// A channel to `addr` that connects when first used, and again after
    /// its connection is lost, resolving the name each time.
    fn open(&self, addr: &str) -> Result<Channel, tonic::transport::Error> {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        let endpoint = Endpoint::from_shared(format!("{scheme}://{addr}"))?
            .connect_timeout(Duration::from_secs(1))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(5))
            .keep_alive_timeout(Duration::from_secs(5));
        let (names, tls) = (self.names.clone(), self.tls.clone());
        Ok(
            endpoint.connect_with_connector_lazy(tower::service_fn(move |uri: http::Uri| {
                dial(names.clone(), tls.clone(), uri)
            })),
        )
    }

    pub fn raft_client(&self, addr: &str) -> Result<RaftClient<Channel>, tonic::transport::Error> {
        Ok(RaftClient::new(self.channel(addr)?)
            .max_decoding_message_size(MAX_PEER_MESSAGE)
            .max_encoding_message_size(MAX_PEER_MESSAGE))
    }
}

/// Connects a channel to the peer at `uri`'s "host:port": resolved now,
/// inside mutual TLS with peer TLS.
async fn dial(names: Names, tls: Option<Arc<PeerClientTls>>, uri: http::Uri) -> io::Result<TokioIo<ClientConn>> {
    let addr = uri
        .authority()
        .map(|a| a.as_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("no host:port in {uri}")))?;
    let (tcp, _) = names.connect(addr).await?;
    let conn = match tls {
        Some(tls) => crate::tls::peer::handshake(uri.host().unwrap_or_default(), tcp, &tls).await?,
        None => ClientConn::Plain(Conn::new(tcp)),
    };
    Ok(TokioIo::new(conn))
}

#[derive(Clone)]
pub struct Network {
    peers: Arc<Peers>,
    durability: Arc<Durability>,
    wire: Arc<WirePool>,
    identity: Identity,
    room: Arc<Room>,
    reach: Arc<Reach>,
}

impl Network {
    pub fn new(
        peers: Arc<Peers>,
        durability: Arc<Durability>,
        identity: Identity,
        room: Arc<Room>,
        reach: Arc<Reach>,
    ) -> Self {
        Self {
            peers,
            durability,
            wire: Arc::default(),
            identity,
            room,
            reach,
        }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: NodeId, node: &Member) -> Self::Network {
        crate::observe::metrics::recorders().peer_known(target);
        PeerConnection {
            target,
            addr: node.peer().to_string(),
            peers: self.peers.clone(),
            durability: self.durability.clone(),
            notices: CommitNotices::default(),
            wire: self.wire.clone(),
            identity: self.identity.clone(),
            room: self.room.clone(),
            reach: self.reach.clone(),
        }
    }
}

pub struct PeerConnection {
    target: NodeId,
    addr: String,
    peers: Arc<Peers>,
    durability: Arc<Durability>,
    /// Commit-only requests held back (see `commit_notice`).
    notices: CommitNotices,
    /// Raft wire connections, shared by every client of this node.
    wire: Arc<WirePool>,
    identity: Identity,
    /// Which peers' disks are full: they are sent only what they take.
    room: Arc<Room>,
    /// Whether peers answer, for the log.
    reach: Arc<Reach>,
}

/// A peer that cannot be reached (connection refused or reset) means "back
/// off and retry": openraft then pauses replication to it for 500 ms.
/// Anything else is a network error, retried at once. That includes an
/// answer that missed its deadline (openraft gives an AppendEntries one
/// heartbeat interval): the peer is slow, not gone, and has usually taken the
/// entries by the time they are sent again. Backing off there stalled every
/// write for about 600 ms whenever a disk hiccup made both followers' syncs
/// outlast one heartbeat.
fn classify(target: NodeId, code: tonic::Code, message: &str) -> (bool, io::Error) {
    crate::observe::metrics::recorders().peer_failed(target);
    let unreachable = matches!(code, tonic::Code::Unavailable | tonic::Code::Unknown);
    (
        unreachable,
        io::Error::other(format!("peer {target}: {code}: {message}")),
    )
}

fn rpc_err<E: std::error::Error>(target: NodeId, status: tonic::Status) -> RPCError<NodeId, Member, E> {
    rpc_err_of(classify(target, status.code(), status.message()))
}

fn rpc_err_of<E: std::error::Error>(classified: (bool, io::Error)) -> RPCError<NodeId, Member, E> {
    match classified {
        (true, e) => RPCError::Unreachable(Unreachable::new(&e)),
        (false, e) => RPCError::Network(NetworkError::new(&e)),
    }
}

fn malformed<E: std::error::Error>(e: codec::Malformed) -> RPCError<NodeId, Member, E> {
    RPCError::Network(NetworkError::new(&e))
}

impl PeerConnection {
    /// Sends an AppendEntries over the Raft wire, within `ttl`. `None`: the
    /// peer does not speak it, send it over gRPC. Errors are classified as
    /// for gRPC (see `classify`): a peer that cannot be reached, or that is
    /// shutting down, is unreachable; a missed deadline or a malformed
    /// exchange is a network error, retried at once.
    async fn append_over_wire(
        &self,
        request: &ipb::AppendEntriesRequest,
        ttl: Duration,
    ) -> Option<Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>>> {
        let (pool, addr) = (&self.wire, &self.addr);
        let (mut conn, mut reused) = match pool.take(addr, self.peers.names().current(addr)) {
            Taken::Grpc => return None,
            Taken::Idle(conn) => (conn, true),
            Taken::Connect(slot) => match self.connect(slot).await {
                Ok(conn) => (conn, false),
                Err(e) => return e.map(Err),
            },
        };
        // Whatever goes wrong drops the connection, so that a late answer is
        // never read as the next call's.
        loop {
            match tokio::time::timeout(ttl, conn.call(request)).await {
                Err(_) => {
                    let late = self.failed(format!("no answer within {ttl:?}"));
                    return Some(Err(RPCError::Network(NetworkError::new(&late))));
                }
                Ok(Ok(resp)) => {
                    pool.give_back(addr, conn);
                    return Some(codec::append_response_from_pb(resp).map_err(malformed));
                }
                // A connection kept from an earlier call may have been closed
                // by the peer meanwhile (it restarted): one more try on a new
                // one.
                Ok(Err(CallError::Io(e))) if reused => {
                    tracing::debug!("Raft wire to {addr}: {e}; reconnecting");
                    let Taken::Connect(slot) = pool.reconnect(addr) else {
                        return None;
                    };
                    conn = match self.connect(slot).await {
                        Ok(conn) => conn,
                        Err(e) => return e.map(Err),
                    };
                    reused = false;
                }
                Ok(Err(e)) => return Some(Err(self.wire_error(e))),
            }
        }
    }

    /// Opens a Raft wire connection to this peer for the slot taken from
    /// the pool, and tells the pool how it went. `Err(None)`: the peer does
    /// not speak the wire. Connecting and the handshake have bounds of their
    /// own, so that is found out however short openraft's deadline for the
    /// call is.
    async fn connect(
        &self,
        slot: ConnectSlot<'_>,
    ) -> Result<WireConn, Option<RPCError<NodeId, Member, RaftError<NodeId>>>> {
        match WireConn::connect(self.peers.names(), &self.addr, MAX_PEER_MESSAGE, self.peers.wire_tls()).await {
            Ok(conn) => {
                slot.finish(Connected::Yes);
                Ok(conn)
            }
            Err(CallError::Unsupported) => {
                if slot.finish(Connected::Unsupported) {
                    tracing::info!(
                        "peer {} at {} does not speak the Raft wire; using gRPC",
                        self.target,
                        self.addr
                    );
                }
                Err(None)
            }
            Err(e) => {
                slot.finish(Connected::Failed);
                Err(Some(self.wire_error(e)))
            }
        }
    }

    /// An error about this peer, named in its message.
    fn failed(&self, m: impl std::fmt::Display) -> io::Error {
        io::Error::other(format!("peer {}: {m}", self.target))
    }

    /// A failed Raft wire call, classified as a gRPC one would be.
    fn wire_error(&self, e: CallError) -> RPCError<NodeId, Member, RaftError<NodeId>> {
        crate::observe::metrics::recorders().peer_failed(self.target);
        match e {
            CallError::Io(e) => RPCError::Unreachable(Unreachable::new(&self.failed(e))),
            CallError::Refused(Refusal::Unavailable(m)) => RPCError::Unreachable(Unreachable::new(&self.failed(m))),
            CallError::Refused(Refusal::Invalid(m)) | CallError::Malformed(m) => {
                RPCError::Network(NetworkError::new(&self.failed(m)))
            }
            // Only connecting finds that out, and that is handled there.
            CallError::Unsupported => RPCError::Network(NetworkError::new(&self.failed("not a Raft wire peer"))),
        }
    }

    fn client<E: std::error::Error>(&self) -> Result<RaftClient<Channel>, RPCError<NodeId, Member, E>> {
        self.peers
            .raft_client(&self.addr)
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    /// Sends a held commit notice after `commit_notice::DEFER`, unless a
    /// request sent meanwhile carried it. Its answer is not needed: a
    /// follower that did not take it is found by the next request.
    fn send_later(&self, notice: commit_notice::Notice, held: Arc<Mutex<Option<commit_notice::Notice>>>) {
        let (peers, addr, target) = (self.peers.clone(), self.addr.clone(), self.target);
        let cluster_id = self.identity.ours();
        tokio::spawn(async move {
            tokio::time::sleep(commit_notice::DEFER).await;
            let Some(notice) = commit_notice::take_if_still_held(&held, notice.generation()) else {
                return;
            };
            let Ok(mut client) = peers.raft_client(&addr) else {
                return;
            };
            let mut request = codec::append_request_to_pb(&notice.request());
            request.cluster_id = cluster_id;
            let mut req = tonic::Request::new(request);
            req.set_timeout(Duration::from_secs(1));
            if let Err(s) = client.append_entries(req).await {
                tracing::debug!("commit notice to peer {target}: {}", s.message());
            }
        });
    }
}

impl RaftNetwork<TypeConfig> for PeerConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        if let Some((notice, held)) = self.notices.hold(&rpc) {
            self.send_later(notice, held);
            return Ok(AppendEntriesResponse::Success);
        }
        // A follower whose disk is full is sent only what it takes
        // (`raft::net::intake`).
        let (rpc, trimmed) = match self.room.is_full(self.target) {
            false => (rpc, None),
            true => match intake::trim(rpc, Intake::RaftOnly) {
                Ok(rpc) => (rpc, None),
                Err(t) => (t.request, Some(t.matching)),
            },
        };
        if let Some(fit) = append_budget::entries_that_fit(&rpc, append_budget::MAX_APPEND_BYTES) {
            return Err(RPCError::PayloadTooLarge(PayloadTooLarge::new_entries_hint(fit)));
        }
        // Every entry in this request is already in the local log (it was
        // read from there); the follower's answer may count towards a quorum
        // only once they are on disk here too (see raft::log::durability). The
        // local sync runs while the request is on the wire.
        let written = self.durability.written();
        let upto = rpc
            .entries
            .last()
            .map(|e| e.log_id.index)
            .or(rpc.prev_log_id.map(|l| l.index))
            .unwrap_or(0);
        let mut request = codec::append_request_to_pb(&rpc);
        request.cluster_id = self.identity.ours();
        let call = self.reach.call(self.target);
        let answer = match self.append_over_wire(&request, option.hard_ttl()).await {
            Some(answer) => answer,
            None => {
                let mut req = tonic::Request::new(request);
                req.set_timeout(option.hard_ttl());
                async {
                    let resp = self
                        .client()?
                        .append_entries(req)
                        .await
                        .map_err(|s| rpc_err(self.target, s))?;
                    codec::append_response_from_pb(resp.into_inner()).map_err(malformed)
                }
                .await
            }
        };
        call.outcome(&answer);
        self.notices.answered(&rpc, answer.as_ref().ok());
        let resp = answer?;
        let refused = intake::refused_some(&rpc, &resp);
        if refused {
            self.room.heard(self.target, true);
        }
        self.durability.wait_covered(upto, written).await;
        if refused || trimmed.is_some() {
            // openraft sends the rest again at once.
            tokio::time::sleep(intake::PACE.min(option.hard_ttl() / 2)).await;
        }
        Ok(match trimmed {
            Some(matching) => intake::answer(resp, matching),
            None => resp,
        })
    }

    async fn install_snapshot(
        &mut self,
        _rpc: InstallSnapshotRequest<TypeConfig>,
        _option: RPCOption,
    ) -> Result<InstallSnapshotResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId, InstallSnapshotError>>>
    {
        // openraft only calls this from its default `full_snapshot`, which
        // handlestore replaces with a streaming implementation below.
        Err(RPCError::Network(NetworkError::new(&io::Error::other(
            "chunk-wise install_snapshot is not used: snapshots are streamed by full_snapshot",
        ))))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, Member, RaftError<NodeId>>> {
        let mut vote = codec::vote_request_to_pb(&rpc);
        vote.cluster_id = self.identity.ours();
        let mut req = tonic::Request::new(vote);
        req.set_timeout(option.hard_ttl());
        let call = self.reach.call(self.target);
        let resp = self.client()?.vote(req).await.map_err(|s| rpc_err(self.target, s));
        call.outcome(&resp);
        codec::vote_response_from_pb(resp?.into_inner()).map_err(malformed)
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
        _option: RPCOption,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, openraft::error::Fatal<NodeId>>> {
        let started = std::time::Instant::now();
        let call = self.reach.call(self.target);
        let sent = self.send_snapshot(vote, snapshot, cancel).await;
        call.outcome(&sent);
        let r = crate::observe::metrics::recorders();
        crate::observe::metrics::Recorders::observe(&r.snapshot_send_seconds, started, sent.is_ok());
        sent
    }
}

impl PeerConnection {
    /// Streams `snapshot` to the peer, until `cancel` (replication to it
    /// ended).
    async fn send_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot<TypeConfig>,
        cancel: impl Future<Output = ReplicationClosed> + Send + 'static,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, openraft::error::Fatal<NodeId>>> {
        let target = self.target;
        let mut client = self
            .peers
            .raft_client(&self.addr)
            .map_err(|e| StreamingError::Unreachable(Unreachable::new(&e)))?;
        let first = ipb::SnapshotChunk {
            vote: Some(codec::vote_to_pb(&vote)),
            meta: Some(codec::snapshot_meta_to_pb(&snapshot.meta)),
            data: Vec::new(),
            cluster_id: self.identity.ours(),
        };
        let mut file = *snapshot.snapshot;
        file.seek(io::SeekFrom::Start(0))
            .await
            .map_err(|e| StreamingError::StorageError(openraft::StorageIOError::read_snapshot(None, &e).into()))?;
        let (tx, rx) = tokio::sync::mpsc::channel::<ipb::SnapshotChunk>(4);
        // Set once the stream has taken its first message, which it does
        // only once the peer's stream is open.
        let opened = Arc::new(tokio::sync::Notify::new());
        let taken = opened.clone();
        let reader = tokio::spawn(async move {
            if tx.send(first).await.is_err() {
                return Ok(());
            }
            // Chunks are read ahead of the stream. The send failpoint fires
            // only once the peer is taking them (mid-send), never while the
            // peer is unreachable and nothing would be sent.
            tokio::select! {
                _ = opened.notified() => {}
                _ = tx.closed() => return Ok(()),
            }
            loop {
                let mut buf = vec![0u8; SNAPSHOT_CHUNK];
                let n = file.read(&mut buf).await?;
                if n == 0 {
                    return Ok::<(), io::Error>(());
                }
                buf.truncate(n);
                if crate::failpoints::corrupt_here(crate::failpoints::SNAPSHOT_SEND_MID) {
                    buf[n / 2] ^= 0x5A;
                }
                if tx
                    .send(ipb::SnapshotChunk {
                        vote: None,
                        meta: None,
                        data: buf,
                        cluster_id: String::new(),
                    })
                    .await
                    .is_err()
                {
                    return Ok(());
                }
            }
        });
        let stream = futures::StreamExt::inspect(tokio_stream::wrappers::ReceiverStream::new(rx), move |_| {
            taken.notify_one()
        });
        let send = client.install_snapshot(tonic::Request::new(stream));
        let resp = tokio::select! {
            closed = cancel => {
                reader.abort();
                return Err(StreamingError::Closed(closed));
            }
            resp = send => resp,
        };
        match reader.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                return Err(StreamingError::StorageError(
                    openraft::StorageIOError::read_snapshot(None, &e).into(),
                ));
            }
            Err(e) => return Err(StreamingError::Network(NetworkError::new(&e))),
        }
        let resp = resp.map_err(|s| match classify(target, s.code(), s.message()) {
            (true, e) => StreamingError::Unreachable(Unreachable::new(&e)),
            (false, e) => StreamingError::Network(NetworkError::new(&e)),
        })?;
        let vote = codec::vote_from_pb(resp.into_inner().vote.as_ref())
            .map_err(|e| StreamingError::Network(NetworkError::new(&e)))?;
        Ok(SnapshotResponse { vote })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn only_a_peer_that_cannot_be_reached_is_backed_off_from() {
        // tonic's own words for a connection refused, and for a request
        // whose deadline passed on either side.
        let unreachable = [
            (Code::Unavailable, "tcp connect error"),
            (Code::Unknown, "h2 protocol error: connection reset"),
        ];
        let slow = [
            (Code::Cancelled, "Timeout expired"),
            (
                Code::DeadlineExceeded,
                "Deadline expired before operation could complete",
            ),
        ];
        for (code, message) in unreachable {
            assert!(classify(2, code, message).0, "{code:?}");
            let err: RPCError<NodeId, Member, RaftError<NodeId>> = rpc_err_of(classify(2, code, message));
            assert!(matches!(err, RPCError::Unreachable(_)), "{err:?}");
        }
        for (code, message) in slow {
            assert!(!classify(2, code, message).0, "{code:?}");
            let err: RPCError<NodeId, Member, RaftError<NodeId>> = rpc_err_of(classify(2, code, message));
            assert!(matches!(err, RPCError::Network(_)), "{err:?}");
        }
        assert!(!classify(2, Code::InvalidArgument, "malformed").0);
    }
}
