//! The client's HTTP/2 connection to one node, driven by `h2` directly.
//!
//! tonic's `Channel` hands every call through a queue to a worker task
//! (tower's `Buffer`), then to hyper's dispatch task, and hyper sends a
//! request's body from a task of its own once the connection has opened the
//! stream: on a multi-threaded runtime each hand-off can wake another
//! thread, and the body left a scheduler turn after its headers, so the node
//! woke twice for one request (docs/dev/performance-notes.md, "One mint,
//! step by step"). Here the calling task queues the headers and the body
//! itself and the connection's task writes both in one system call; the
//! answer wakes the calling task directly.
//!
//! One connection per node, dialed on first use and again after it fails;
//! a ping every [`KEEPALIVE_INTERVAL`] that goes unanswered for
//! [`KEEPALIVE_TIMEOUT`] closes it, so a node cut off by the network is
//! noticed even without calls in flight.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::uri::{Authority, Scheme, Uri};
use http_body::{Body, Frame};
use tonic::Status;

#[cfg(not(test))]
pub(crate) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
#[cfg(not(test))]
pub(crate) const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(5);
#[cfg(test)]
pub(crate) const KEEPALIVE_INTERVAL: Duration = Duration::from_millis(100);
#[cfg(test)]
pub(crate) const KEEPALIVE_TIMEOUT: Duration = Duration::from_millis(100);

// HTTP/2 settings as hyper's client has them (tonic's `Channel` uses those).
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 5 * 1024 * 1024;
const MAX_SEND_BUFFER: usize = 1024 * 1024;
const MAX_HEADER_LIST: u32 = 16 * 1024;

#[derive(Default)]
struct Dials {
    /// Connections made; the latest one's id.
    made: u64,
    /// How the latest dial failed, if it did.
    failed: Option<Status>,
}

/// Calls to one node, as a gRPC channel for tonic's generated clients
/// (`AdminClient::new(client.channel(0)?)`). Cheap to clone; clones share
/// the connection, and every call carries the client's credentials.
#[derive(Clone)]
pub struct NodeChannel {
    shared: Arc<Shared>,
}

struct Shared {
    url: String,
    scheme: Scheme,
    authority: Authority,
    connect_timeout: Duration,
    /// For `https` endpoints.
    tls: Option<crate::tls::ClientTls>,
    /// `authorization: Bearer <token>`, sent with every call.
    authorization: Option<http::HeaderValue>,
    /// The open connection, if any, and the number it was dialed under.
    live: Mutex<Option<(u64, SendRequest<Bytes>)>>,
    /// Held while dialing, so concurrent calls share one dial.
    dialing: tokio::sync::Mutex<Dials>,
    /// Dials finished, failed or not; read without waiting for the lock,
    /// to tell whether one finished while a call waited for it.
    dials_finished: AtomicU64,
}

impl NodeChannel {
    /// A channel to `url` ("http://host:port", or "https://host:port"
    /// with `tls`); nothing is dialed yet.
    pub(crate) fn new(
        url: &str,
        connect_timeout: Duration,
        tls: Option<crate::tls::ClientTls>,
        token: Option<&str>,
    ) -> Result<Self, String> {
        let authorization = token
            .map(|t| {
                let mut v = http::HeaderValue::try_from(format!("Bearer {t}"))
                    .map_err(|_| "the token holds characters a header cannot carry".to_string())?;
                // Never indexed by HPACK (RFC 7541, 7.1.3).
                v.set_sensitive(true);
                Ok::<_, String>(v)
            })
            .transpose()?;
        let uri: Uri = url.parse().map_err(|e| format!("{e}"))?;
        let scheme = uri.scheme().cloned().ok_or("no scheme")?;
        let tls = match (scheme.as_str(), tls) {
            ("http", _) => None,
            ("https", Some(tls)) => Some(tls),
            ("https", None) => return Err("an https endpoint needs the cluster's CA (ClientBuilder::tls)".into()),
            _ => return Err(format!("scheme {scheme} is not supported (http or https)")),
        };
        let authority = uri.authority().cloned().ok_or("no host")?;
        Ok(NodeChannel {
            shared: Arc::new(Shared {
                url: url.to_string(),
                scheme,
                authority,
                connect_timeout,
                tls,
                authorization,
                live: Mutex::new(None),
                dialing: tokio::sync::Mutex::new(Dials::default()),
                dials_finished: AtomicU64::new(0),
            }),
        })
    }

    fn live(&self) -> Option<(u64, SendRequest<Bytes>)> {
        self.shared.live.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The open connection, dialed now if there is none.
    async fn sender(&self) -> Result<(u64, SendRequest<Bytes>), Status> {
        if let Some(live) = self.live() {
            return Ok(live);
        }
        let finished = &self.shared.dials_finished;
        let before = finished.load(Ordering::Acquire);
        let mut dials = self.shared.dialing.lock().await;
        // Another call may have dialed while this one waited. If its dial
        // failed, this call shares the failure rather than dial again at
        // once: a node that drops packets would otherwise cost every
        // waiting call a connect timeout of its own, one after another.
        if let Some(live) = self.live() {
            return Ok(live);
        }
        if finished.load(Ordering::Acquire) != before
            && let Some(failed) = &dials.failed
        {
            return Err(failed.clone());
        }
        let dialed = tokio::time::timeout(self.shared.connect_timeout, self.dial(dials.made + 1))
            .await
            .unwrap_or_else(|_| {
                Err(Status::unavailable(format!(
                    "{}: no connection within {:?}",
                    self.shared.url, self.shared.connect_timeout
                )))
            });
        finished.fetch_add(1, Ordering::Release);
        let send = match dialed {
            Ok(send) => send,
            Err(status) => {
                dials.failed = Some(status.clone());
                return Err(status);
            }
        };
        dials.made += 1;
        dials.failed = None;
        let live = (dials.made, send);
        *self.shared.live.lock().unwrap_or_else(|p| p.into_inner()) = Some(live.clone());
        Ok(live)
    }

    async fn dial(&self, id: u64) -> Result<SendRequest<Bytes>, Status> {
        let io = crate::conn::dial(&self.shared.authority, self.shared.tls.as_ref())
            .await
            .map_err(|e| dial_error(&self.shared.url, e))?;
        let (send, mut connection) = h2::client::Builder::new()
            .enable_push(false)
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .max_send_buffer_size(MAX_SEND_BUFFER)
            .max_header_list_size(MAX_HEADER_LIST)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|e| status_of(&self.shared.url, e))?;
        let ping = connection.ping_pong();
        // Holds only a weak reference: a client that is dropped closes its
        // connections.
        let shared = Arc::downgrade(&self.shared);
        tokio::spawn(async move {
            let outcome = match ping {
                Some(ping) => tokio::select! {
                    r = &mut connection => r.err().map(|e| e.to_string()),
                    why = keepalive(ping) => Some(why),
                },
                None => connection.await.err().map(|e| e.to_string()),
            };
            if let Some(shared) = shared.upgrade() {
                if let Some(why) = outcome {
                    tracing::debug!(node = %shared.url, "connection closed: {why}");
                }
                forget(&shared, id);
            }
        });
        Ok(send)
    }

    async fn send(self, req: http::Request<tonic::body::Body>) -> Result<http::Response<RecvBody>, Status> {
        let (mut head, body) = req.into_parts();
        // tonic gives the path; HTTP/2 wants the scheme and authority too.
        let mut uri = std::mem::take(&mut head.uri).into_parts();
        uri.scheme = Some(self.shared.scheme.clone());
        uri.authority = Some(self.shared.authority.clone());
        head.uri = Uri::from_parts(uri).map_err(|e| Status::internal(format!("request URI: {e}")))?;
        if let Some(auth) = &self.shared.authorization {
            head.headers.insert(http::header::AUTHORIZATION, auth.clone());
        }
        let (id, send) = self.sender().await?;
        let mut send = match send.ready().await {
            Ok(send) => send,
            Err(e) => {
                forget(&self.shared, id);
                return Err(self.status(e));
            }
        };
        let (response, mut stream) = send
            .send_request(http::Request::from_parts(head, ()), false)
            .map_err(|e| self.status(e))?;
        send_body(&mut stream, body).await.map_err(|e| match e {
            BodyError::Encode(status) => status,
            BodyError::H2(e) => self.status(e),
        })?;
        let response = response.await.map_err(|e| self.status(e))?;
        Ok(response.map(|recv| RecvBody {
            recv,
            data_done: false,
            url: self.shared.clone(),
        }))
    }

    fn status(&self, e: h2::Error) -> Status {
        status_of(&self.shared.url, e)
    }
}

/// Why a dial failed. A TLS handshake that fails (the node's certificate
/// is not from the trusted CA, or it refused ours) will fail again, so it
/// is not worth retrying: `UNAUTHENTICATED`. Anything else is the node
/// being unreachable: `UNAVAILABLE`.
fn dial_error(url: &str, e: std::io::Error) -> Status {
    let tls = e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>());
    if tls {
        Status::unauthenticated(format!("{url}: TLS: {e}"))
    } else {
        Status::unavailable(format!("{url}: {e}"))
    }
}

/// Forgets connection `id` if it is still the one in use.
fn forget(shared: &Shared, id: u64) {
    let mut live = shared.live.lock().unwrap_or_else(|p| p.into_inner());
    if live.as_ref().is_some_and(|(current, _)| *current == id) {
        *live = None;
    }
}

/// Pings until one goes unanswered; says why it stopped.
async fn keepalive(mut ping: h2::PingPong) -> String {
    loop {
        tokio::time::sleep(KEEPALIVE_INTERVAL).await;
        match tokio::time::timeout(KEEPALIVE_TIMEOUT, ping.ping(h2::Ping::opaque())).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return format!("ping: {e}"),
            Err(_) => return format!("no answer to a ping within {KEEPALIVE_TIMEOUT:?}"),
        }
    }
}

/// A transport failure as a status: a connection that broke or was never
/// made, or a stream the node refused, is `Unavailable` (worth retrying
/// elsewhere); a stream reset for another reason keeps gRPC's mapping.
fn status_of(url: &str, e: h2::Error) -> Status {
    // A node that requires a client certificate refuses one it does not
    // accept after the handshake (TLS 1.3), with an alert the client reads
    // on its first read; h2 keeps only the text of that error, which is
    // rustls's ("received fatal alert: CertificateRequired"), which the
    // retry rule's markers name. Retrying would only be refused again.
    if e.get_io()
        .is_some_and(|io| io.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()))
        || crate::retry::tls_refused(&e.to_string())
    {
        return Status::unauthenticated(format!("{url}: TLS: {e}"));
    }
    if e.is_io() || e.is_go_away() || e.reason() == Some(h2::Reason::REFUSED_STREAM) {
        return Status::unavailable(format!("{url}: {e}"));
    }
    let status = Status::from_error(Box::new(e));
    Status::new(status.code(), format!("{url}: {}", status.message()))
}

enum BodyError {
    Encode(Status),
    H2(h2::Error),
}

/// Queues the request's body on its stream. A unary call's body is one
/// message, ready at once, so it is queued before the connection's task
/// next writes, in the same write as the headers; its last frame carries
/// the end of the stream.
async fn send_body(stream: &mut h2::SendStream<Bytes>, mut body: tonic::body::Body) -> Result<(), BodyError> {
    let mut held: Option<Bytes> = None;
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => {
                return stream.send_data(held.unwrap_or_default(), true).map_err(BodyError::H2);
            }
            Some(Err(status)) => {
                stream.send_reset(h2::Reason::CANCEL);
                return Err(BodyError::Encode(status));
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    if let Some(earlier) = held.replace(data) {
                        stream.send_data(earlier, false).map_err(BodyError::H2)?;
                    }
                }
                Err(frame) => {
                    if let Some(earlier) = held.take() {
                        stream.send_data(earlier, false).map_err(BodyError::H2)?;
                    }
                    if let Ok(trailers) = frame.into_trailers() {
                        return stream.send_trailers(trailers).map_err(BodyError::H2);
                    }
                }
            },
        }
    }
}

impl tower::Service<http::Request<tonic::body::Body>> for NodeChannel {
    type Response = http::Response<RecvBody>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Status>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        Box::pin(self.clone().send(req))
    }
}

/// An answer's body: its DATA frames, then its trailers (where gRPC puts
/// the status). Received data is handed back to the flow-control window
/// as it is read.
/// The body of a node's answer, as tonic reads it.
pub struct RecvBody {
    recv: h2::RecvStream,
    data_done: bool,
    url: Arc<Shared>,
}

impl Body for RecvBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if !this.data_done {
            match ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = this.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(status_of(&this.url.url, e)))),
                None => this.data_done = true,
            }
        }
        match ready!(this.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(status_of(&this.url.url, e)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use handlestore_proto::v1 as pb;
    use pb::handles_client::HandlesClient;
    use prost::Message;
    use tokio::net::TcpListener;

    async fn listener() -> (TcpListener, String) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        (listener, url)
    }

    fn channel(url: &str) -> NodeChannel {
        NodeChannel::new(url, Duration::from_secs(5), None, None).expect("channel")
    }

    async fn len(ch: &NodeChannel) -> Result<u64, Status> {
        let req = pb::LenRequest {
            namespace: "ns".into(),
            store: "cart".into(),
            read: None,
        };
        Ok(HandlesClient::new(ch.clone()).len(req).await?.into_inner().len)
    }

    /// A gRPC message: a flag byte, a 4-byte length, the protobuf.
    fn framed(msg: &impl Message) -> Bytes {
        let body = msg.encode_to_vec();
        let mut out = vec![0u8];
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        out.into()
    }

    /// Serves one connection as a node would answer `Len` (with `len`),
    /// checking each request on the way; returns when the client closes it.
    async fn serve_len(tcp: tokio::net::TcpStream, len: u64, url: String) {
        let mut conn = h2::server::handshake(tcp).await.expect("server handshake");
        while let Some(accepted) = conn.accept().await {
            let (req, mut respond) = accepted.expect("request");
            let (head, mut body) = req.into_parts();
            assert_eq!(head.method, http::Method::POST);
            assert_eq!(format!("{}", head.uri), format!("{url}/handlestore.v1.Handles/Len"));
            assert_eq!(head.headers["content-type"], "application/grpc");
            let mut got = Vec::new();
            while let Some(data) = body.data().await {
                let data = data.expect("body");
                let _ = body.flow_control().release_capacity(data.len());
                got.extend_from_slice(&data);
            }
            assert!(body.is_end_stream(), "the request's last frame ends the stream");
            let req = pb::LenRequest::decode(&got[5..]).expect("a LenRequest");
            assert_eq!((req.namespace.as_str(), req.store.as_str()), ("ns", "cart"));
            let head = http::Response::builder()
                .header("content-type", "application/grpc")
                .body(())
                .expect("response");
            let mut send = respond.send_response(head, false).expect("send headers");
            let msg = pb::LenResponse { len, read_revision: 1 };
            send.send_data(framed(&msg), false).expect("send data");
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", "0".parse().expect("header"));
            send.send_trailers(trailers).expect("send trailers");
        }
    }

    #[tokio::test]
    async fn calls_share_one_connection_and_get_their_answers() {
        let (listener, url) = listener().await;
        let server = {
            let url = url.clone();
            tokio::spawn(async move {
                let (tcp, _) = listener.accept().await.expect("accept");
                serve_len(tcp, 7, url).await;
                listener
            })
        };
        let ch = channel(&url);
        for _ in 0..3 {
            assert_eq!(len(&ch).await.expect("len"), 7);
        }
        let calls: Vec<_> = (0..8)
            .map(|_| {
                tokio::spawn({
                    let ch = ch.clone();
                    async move { len(&ch).await }
                })
            })
            .collect();
        for call in calls {
            assert_eq!(call.await.expect("task").expect("len"), 7);
        }
        // Dropping the last clone closes the connection; the server
        // accepted no other.
        drop(ch);
        let listener = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the connection closes with the client")
            .expect("server");
        let second = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        assert!(second.is_err(), "one connection for all calls");
    }

    #[tokio::test]
    async fn a_refused_call_is_unavailable_and_a_closed_connection_is_dialed_again() {
        let (listener, url) = listener().await;
        let ch = channel(&url);
        let serve_url = url.clone();
        let server = tokio::spawn(async move {
            // The first connection refuses one call, then closes.
            let (tcp, _) = listener.accept().await.expect("accept");
            let mut conn = h2::server::handshake(tcp).await.expect("handshake");
            let (_req, mut respond) = conn.accept().await.expect("a call").expect("request");
            respond.send_reset(h2::Reason::REFUSED_STREAM);
            // Let the reset go out, then drop the connection.
            let _ = tokio::time::timeout(Duration::from_millis(200), conn.accept()).await;
            drop(conn);
            // The next call comes on a new connection.
            let (tcp, _) = listener.accept().await.expect("accept again");
            serve_len(tcp, 3, serve_url).await;
        });
        let err = len(&ch).await.expect_err("refused");
        assert_eq!(err.code(), tonic::Code::Unavailable, "{err:?}");
        assert!(err.message().contains(&url), "the node is named: {err:?}");
        // By now the server has closed that connection: the next call
        // dials a new one.
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(len(&ch).await.expect("len on a new connection"), 3);
        drop(ch);
        server.await.expect("server");
    }

    #[tokio::test]
    async fn a_node_that_stops_answering_pings_is_dialed_again() {
        let (listener, url) = listener().await;
        let ch = channel(&url);
        // Takes the connection and never reads from it: no answer to the
        // call, none to the pings.
        let (_silent, call) = tokio::join!(listener.accept(), async {
            tokio::time::timeout(Duration::from_millis(50), len(&ch)).await
        });
        assert!(call.is_err(), "no answer from a silent node");
        let serve_url = url.clone();
        let server = tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.expect("a second connection");
            serve_len(tcp, 5, serve_url).await;
        });
        // The keepalive gives up after an interval and a timeout (100 ms
        // each under test); calls until then wait on the silent connection.
        let mut answer = None;
        for _ in 0..100 {
            if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(100), len(&ch)).await {
                answer = Some(n);
                break;
            }
        }
        assert_eq!(
            answer,
            Some(5),
            "a new connection, once the keepalive gave up on the silent one"
        );
        drop(ch);
        server.await.expect("server");
    }

    #[test]
    fn http_or_https_with_a_ca_and_a_host() {
        let t = Duration::from_secs(1);
        assert!(NodeChannel::new("http://127.0.0.1:2379", t, None, None).is_ok());
        let err = NodeChannel::new("https://127.0.0.1:2379", t, None, None).err();
        assert!(err.expect("https without a CA").contains("CA"));
        let err = NodeChannel::new("ftp://127.0.0.1:2379", t, None, None).err();
        assert!(err.expect("ftp").contains("http or https"));
        assert!(NodeChannel::new("/no/host", t, None, None).is_err());
    }
}
