//! A node's ports, and what each serves.
//!
//! Without a peer port, the client port serves everything: leaders' Raft
//! wire connections and the Raft gRPC service beside the clients'
//! services. With one (`--peer-listen`), the client port refuses the Raft
//! wire (and has no Raft service), and the peer port serves only those.
//!
//! A port with TLS (`--tls-cert` on the client port, `--peer-tls-cert` on
//! the peer port) takes TLS only; a leader asks for the Raft wire inside it
//! by ALPN (`peer_wire::ALPN`), anything else is gRPC (or HTTP/1.1 for the
//! health endpoints). A connection whose first byte is not a TLS
//! handshake is answered, whatever it asks, with an error saying the port
//! requires TLS: gRPC `UNAUTHENTICATED` (a transport credential is
//! missing; not `UNAVAILABLE`, which a client would retry as if the node
//! were down), HTTP 400 for anything else.

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use handlestore_proto::conn::{Conn, PeerInfo, ServerConn};
use handlestore_proto::reason::Reason;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::config::NodeConfig;
use crate::raft::Durability;
use crate::raft::MAX_PEER_MESSAGE;
use crate::raft::Raft;
use crate::raft::append_entries_unsynced;
use crate::raft::peer_wire::{self, Protocol, Refusal};
use crate::tls::{self, TlsFiles, gate::PeerGate, server::ServerTls};

/// One listening port, and its TLS if it has any.
struct Port {
    listener: TcpListener,
    tls: Option<Arc<ServerTls>>,
    /// On the peer port with TLS: who may speak Raft ([`tls::gate`]).
    gate: Option<Arc<PeerGate>>,
}

/// The listeners: clients' (and peers', without a peer port) and, with
/// `--peer-listen`, the peers' own.
pub(crate) struct Ports {
    client: Port,
    peer: Option<Port>,
}

impl Ports {
    /// Binds the ports and loads their TLS (watched for new certificates
    /// from then on); with peer TLS, `gate` says which peers are let in.
    pub(crate) async fn bind(cfg: &NodeConfig, gate: Arc<PeerGate>) -> anyhow::Result<Self> {
        let tls = load_tls("client port TLS", cfg.tls.as_ref(), None)?;
        let listener = TcpListener::bind(cfg.listen)
            .await
            .with_context(|| format!("listening on {}", cfg.listen))?;
        let peer = match cfg.peer_listen {
            Some(addr) => {
                let gate = cfg.peer_tls.is_some().then_some(gate);
                Some(Port {
                    listener: TcpListener::bind(addr)
                        .await
                        .with_context(|| format!("listening for peers on {addr}"))?,
                    tls: load_tls("peer port TLS", cfg.peer_tls.as_ref(), gate.clone())?,
                    gate,
                })
            }
            None => None,
        };
        Ok(Self {
            client: Port {
                listener,
                tls,
                gate: None,
            },
            peer,
        })
    }

    pub(crate) fn has_peer_port(&self) -> bool {
        self.peer.is_some()
    }
}

fn load_tls(
    what: &'static str,
    files: Option<&TlsFiles>,
    gate: Option<Arc<PeerGate>>,
) -> anyhow::Result<Option<Arc<ServerTls>>> {
    let Some(files) = files else {
        return Ok(None);
    };
    let tls = tls::server::load(what, files.clone(), gate)?;
    tls.watch();
    Ok(Some(tls))
}

/// What serves leaders' Raft wire connections on a port that takes them.
#[derive(Clone)]
pub(crate) struct Wire {
    pub(crate) raft: Raft,
    pub(crate) durability: Arc<Durability>,
    pub(crate) identity: crate::raft::Identity,
    pub(crate) disk: Arc<crate::storage::disk::Disk>,
}

/// Serves the ports until `shutdown`: `client` routes on the client port;
/// `peer` routes (the Raft service) on the peer port, where there is one.
pub(crate) async fn serve(
    ports: Ports,
    client: tonic::service::Routes,
    peer: Option<tonic::service::Routes>,
    wire: Wire,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), tonic::transport::Error> {
    let shutdown = futures::FutureExt::shared(Box::pin(shutdown));
    match (ports.peer, peer) {
        (Some(peer_port), Some(peer_routes)) => {
            let peer_routes = match &peer_port.gate {
                Some(gate) => members_only(peer_routes, gate.clone()),
                None => peer_routes,
            };
            let clients = serve_port(ports.client, client, None, shutdown.clone());
            let peers = serve_port(peer_port, peer_routes, Some(wire), shutdown);
            tokio::try_join!(clients, peers).map(|_| ())
        }
        _ => serve_port(ports.client, client, Some(wire), shutdown).await,
    }
}

/// The peer port's gRPC routes, each call refused unless the gate admits
/// the certificate of its connection now (a member removed while its
/// connection stays open is refused from then on; the handshake checked it
/// once already).
fn members_only(routes: tonic::service::Routes, gate: Arc<PeerGate>) -> tonic::service::Routes {
    let mut routes = routes;
    let router = std::mem::take(routes.axum_router_mut());
    *routes.axum_router_mut() = router.layer(axum::middleware::from_fn_with_state(gate, admit_call));
    routes
}

async fn admit_call(
    axum::extract::State(gate): axum::extract::State<Arc<PeerGate>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let cert = req.extensions().get::<PeerInfo>().and_then(|p| p.client_cert.clone());
    if cert.is_some_and(|c| gate.admits_cert(&c)) {
        return next.run(req).await;
    }
    Reason::PermissionDenied.status(NOT_A_MEMBER).into_http()
}

/// Why a peer's call is refused.
const NOT_A_MEMBER: &str = "not a member: the peer port serves only current members' node certificates";

/// Serves one port until `shutdown`: Raft wire connections here (where
/// `wire` is given), the rest to a gRPC server of `routes`.
async fn serve_port(
    port: Port,
    routes: tonic::service::Routes,
    wire: Option<Wire>,
    shutdown: impl Future<Output = ()> + Send + Clone + 'static,
) -> Result<(), tonic::transport::Error> {
    let (grpc_tx, grpc_rx) = mpsc::channel(64);
    let (clear_tx, clear_rx) = mpsc::channel(16);
    let accepting = Accepting {
        grpc: grpc_tx,
        clear_on_tls: clear_tx,
        tls: port.tls,
        gate: port.gate,
        wire,
    };
    let acceptor = tokio::spawn(accepting.run(port.listener)).abort_handle();
    // The port closes when shutdown begins, as tonic's own listener would.
    let stop_accepting = acceptor.clone();
    let stopped = shutdown.clone();
    let shutdown_grpc = async move {
        stopped.await;
        stop_accepting.abort();
    };
    let served = tonic::transport::Server::builder()
        .accept_http1(true)
        .add_routes(routes)
        .serve_with_incoming_shutdown(ReceiverStream::new(grpc_rx), shutdown_grpc);
    let refused = tonic::transport::Server::builder()
        .accept_http1(true)
        .add_routes(tonic::service::Routes::from(axum::Router::new().fallback(requires_tls)))
        .serve_with_incoming_shutdown(ReceiverStream::new(clear_rx), shutdown);
    let served = tokio::try_join!(served, refused).map(|_| ());
    acceptor.abort();
    served
}

/// The answer to anything asked in the clear on a TLS port.
async fn requires_tls(req: axum::extract::Request) -> axum::response::Response {
    let grpc = req
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if grpc {
        Reason::Unauthenticated.status(tls::REQUIRES_TLS).into_http()
    } else {
        axum::response::IntoResponse::into_response((axum::http::StatusCode::BAD_REQUEST, tls::REQUIRES_TLS))
    }
}

/// Where a port's accepted connections go.
struct Accepting {
    grpc: mpsc::Sender<std::io::Result<ServerConn>>,
    /// Connections in the clear on a TLS port, to be told so.
    clear_on_tls: mpsc::Sender<std::io::Result<ServerConn>>,
    tls: Option<Arc<ServerTls>>,
    gate: Option<Arc<PeerGate>>,
    wire: Option<Wire>,
}

impl Accepting {
    /// Accepts the connections of a port. Each goes to a task of its own
    /// that tells what it speaks. The gRPC server gets them as [`Conn`]s:
    /// `Server::tcp_nodelay` only applies to listeners tonic binds itself,
    /// and `Conn` sets it on ours (without it a reply's trailers wait for
    /// the client's delayed ACK, ~40 ms per read) and lets HTTP/2 gather
    /// the answers that are ready into one socket write.
    async fn run(self, listener: TcpListener) {
        let this = Arc::new(self);
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // As tonic does with its own listener: note it and go on
                    // (out of file descriptors, say), without spinning on it.
                    tracing::debug!("error accepting a connection: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            let this = this.clone();
            tokio::spawn(async move {
                match &this.tls {
                    Some(tls) => this.tls_port(stream, tls).await,
                    None => this.clear_port(stream).await,
                }
            });
        }
    }

    /// A port in the clear: a leader's Raft wire connection, or gRPC.
    async fn clear_port(&self, stream: TcpStream) {
        let protocol = tokio::time::timeout(peer_wire::SNIFF_TIMEOUT, peer_wire::sniff(&stream))
            .await
            .unwrap_or(Protocol::Other);
        match (protocol, &self.wire) {
            (Protocol::RaftWire, Some(wire)) => serve_wire(stream, wire.clone()).await,
            (Protocol::RaftWire, None) => {
                let from = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
                tracing::warn!(%from, "refused a Raft connection on the client port: peers use the peer port");
            }
            (Protocol::Other, _) => {
                // Fails only once the gRPC server has stopped.
                let _ = self.grpc.send(Ok(ServerConn::Plain(Conn::new(stream)))).await;
            }
        }
    }

    /// A TLS port: the handshake, then the Raft wire or gRPC as the
    /// client chose by ALPN; anything else is told the port requires TLS.
    async fn tls_port(&self, stream: TcpStream, tls: &ServerTls) {
        let mut first = [0u8; 1];
        let peeked = tokio::time::timeout(peer_wire::SNIFF_TIMEOUT, stream.peek(&mut first)).await;
        if !matches!(peeked, Ok(Ok(1))) || first[0] != tls::HANDSHAKE_RECORD {
            let _ = self.clear_on_tls.send(Ok(ServerConn::Plain(Conn::new(stream)))).await;
            return;
        }
        let from = stream.peer_addr().map(|a| a.to_string()).unwrap_or_default();
        let handshake = tls::server::acceptor(tls).accept(Conn::new(stream));
        match tokio::time::timeout(peer_wire::SNIFF_TIMEOUT, handshake).await {
            Ok(Ok(tls_stream)) => {
                let wants_wire = tls_stream.get_ref().1.alpn_protocol() == Some(peer_wire::ALPN);
                match (wants_wire, &self.wire) {
                    (true, Some(wire)) => serve_wire_tls(tls_stream, wire.clone(), self.gate.clone()).await,
                    (true, None) => {
                        tracing::warn!(%from, "refused a Raft connection on the client port: peers use the peer port");
                    }
                    (false, _) => {
                        let _ = self.grpc.send(Ok(ServerConn::Tls(Box::new(tls_stream)))).await;
                    }
                }
            }
            Ok(Err(e)) => tracing::info!(%from, "TLS handshake failed: {e}"),
            Err(_) => tracing::info!(%from, "TLS handshake did not finish in time"),
        }
    }
}

/// Serves a leader's Raft wire connection. An answer leaves once every log
/// write made before it is synced (see `raft::log::durability`), written by the
/// log's sync thread as soon as the sync lands.
async fn serve_wire(stream: TcpStream, wire: Wire) {
    let hold = |answer| wire.durability.when_synced(answer);
    peer_wire::serve_tcp(stream, MAX_PEER_MESSAGE, hold, |req| {
        let (raft, identity, disk) = (wire.raft.clone(), wire.identity.clone(), wire.disk.clone());
        async move { append_entries_unsynced(&raft, &identity, &disk, req).await }
    })
    .await;
}

/// The same inside TLS; with a gate, each request only while the gate
/// still admits the peer's certificate (its membership may end while the
/// connection stays open).
async fn serve_wire_tls(stream: tokio_rustls::server::TlsStream<Conn>, wire: Wire, gate: Option<Arc<PeerGate>>) {
    let cert = stream.get_ref().1.peer_certificates().and_then(|c| c.first()).cloned();
    let admitted = move || match (&gate, &cert) {
        (None, _) => true,
        (Some(gate), Some(cert)) => gate.admits_cert(cert),
        (Some(_), None) => false,
    };
    let hold = |answer| wire.durability.when_synced(answer);
    peer_wire::serve_stream(stream, MAX_PEER_MESSAGE, hold, |req| {
        let (raft, identity, disk) = (wire.raft.clone(), wire.identity.clone(), wire.disk.clone());
        let admitted = admitted();
        async move {
            if !admitted {
                return Err(Refusal::Unavailable(NOT_A_MEMBER.into()));
            }
            append_entries_unsynced(&raft, &identity, &disk, req).await
        }
    })
    .await;
}
