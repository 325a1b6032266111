//! Resumed MCP streams with rmcp's own client: rmcp replicas over a cluster
//! (each in this process on its own runtime, with its own handlestore
//! client, so one can die as a process does: every task dropped at once,
//! nothing flushed), a tool that sends progress notifications, and a front
//! that cuts a call's stream after K messages and sends the client's
//! reconnection to the other replica.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Result, bail};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use handlestore_client::Client;
use handlestore_client::rmcp_seams::{ClusterEventStore, ClusterSessionStore};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation, ListToolsResult, NumberOrString, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::watch;

/// Progress notifications each tool sends before it answers.
pub const TICKS: u32 = 4;
/// The slow tool's pause after each notification (and before its answer).
pub const SLOW_GAP: Duration = Duration::from_millis(1200);

/// The replicas' tools: `fast` sends its notifications at once, `slow`
/// one every [`SLOW_GAP`]; both then answer "done".
#[derive(Clone)]
pub struct Ticker;

fn tool(name: &'static str, what: &'static str) -> rmcp::model::Tool {
    let schema = serde_json::json!({"type": "object"});
    let Value::Object(schema) = schema else { unreachable!() };
    rmcp::model::Tool::new(name, what, schema)
}

impl ServerHandler for Ticker {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("handlestore-tests-ticker", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            tool("fast", "progress at once, then done"),
            tool("slow", "progress every 1.2 s, then done"),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let gap = match request.name.as_ref() {
            "fast" => Duration::ZERO,
            "slow" => SLOW_GAP,
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        let token = context.meta.get_progress_token();
        for tick in 1..=TICKS {
            if let Some(token) = &token {
                let note = ProgressNotificationParam::new(token.clone(), f64::from(tick));
                if let Err(e) = context.peer.notify_progress(note).await {
                    return Err(ErrorData::internal_error(e.to_string(), None));
                }
            }
            tokio::time::sleep(gap).await;
        }
        Ok(CallToolResult::success(vec![ContentBlock::text("done")]).into())
    }
}

/// How a replica serves MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// No sessions (`NeverSessionManager`): any protocol, statelessly.
    Stateless,
    /// Legacy sessions (`LocalSessionManager`, sessions in the cluster);
    /// 2026-07-28 requests are still served statelessly.
    Sessions,
}

/// An rmcp replica with the cluster's event store, in its own runtime.
pub struct Replica {
    pub addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Replica {
    pub fn start(endpoints: Vec<String>, serving: Serving) -> Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        runtime.spawn(async move {
            if let Err(e) = serve(listener, endpoints, serving).await {
                eprintln!("replica {addr} stopped: {e:#}");
            }
        });
        Ok(Self {
            addr,
            runtime: Some(runtime),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Dies as a killed process does: every task of the replica (the
    /// tools, the streams, the liveness refreshes, its cluster client)
    /// dropped at once, its sockets closed.
    pub fn kill(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn serve(listener: std::net::TcpListener, endpoints: Vec<String>, serving: Serving) -> Result<()> {
    let client = Client::builder(endpoints).build()?;
    let events = ClusterEventStore::new(&client);
    let mut config = StreamableHttpServerConfig::default().with_legacy_session_mode(serving == Serving::Sessions);
    let service = match serving {
        Serving::Stateless => {
            let service = events.streamable_http_service(|| Ok(Ticker), NeverSessionManager::default(), config);
            axum::Router::new().nest_service("/mcp", service)
        }
        Serving::Sessions => {
            config.session_store = Some(Arc::new(ClusterSessionStore::new(&client)));
            let service = events.streamable_http_service(|| Ok(Ticker), LocalSessionManager::default(), config);
            axum::Router::new().nest_service("/mcp", service)
        }
    };
    let listener = tokio::net::TcpListener::from_std(listener)?;
    axum::serve(listener, service).await?;
    Ok(())
}

/// One SSE event the client received through the front.
#[derive(Debug, Clone)]
pub struct Seen {
    pub id: Option<String>,
    /// The JSON-RPC message (`None`: a priming event or a comment).
    pub message: Option<Value>,
    /// Received on the `tools/call` POST (the stream the front cuts).
    pub call: bool,
    /// Received on a resumption (a GET with `Last-Event-ID`).
    pub resumed: bool,
}

impl Seen {
    /// The stream token of the event's id (`<token>.<seq>`).
    pub fn token(&self) -> Option<&str> {
        self.id.as_deref()?.split_once('.').map(|(t, _)| t)
    }

    /// The sequence number of the event's id.
    pub fn seq(&self) -> Option<u64> {
        self.id.as_deref()?.split_once('.')?.1.parse().ok()
    }
}

/// A front for one client: POSTs go to the origin; a `tools/call`'s
/// stream is cut (the connection broken) once its priming event and
/// `keep` messages went through; every GET (the client's resumption) goes
/// to the follower.
pub struct CutFront {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    cut: watch::Receiver<bool>,
    task: tokio::task::JoinHandle<()>,
}

struct Shared {
    origin: String,
    follower: String,
    keep: usize,
    http: reqwest::Client,
    seen: Mutex<Vec<Seen>>,
    resumptions: AtomicUsize,
    cut: watch::Sender<bool>,
}

impl CutFront {
    pub async fn start(origin: String, follower: String, keep: usize) -> Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (cut_tx, cut) = watch::channel(false);
        let shared = Arc::new(Shared {
            origin,
            follower,
            keep,
            http: reqwest::Client::builder().build()?,
            seen: Mutex::default(),
            resumptions: AtomicUsize::new(0),
            cut: cut_tx,
        });
        let app = axum::Router::new().fallback(forward).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self {
            addr,
            shared,
            cut,
            task,
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Returns once the call's stream has been cut.
    pub async fn cut(&self) {
        let mut cut = self.cut.clone();
        let _ = cut.wait_for(|c| *c).await;
    }

    /// Every event the client received, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// GETs with `Last-Event-ID` sent to the follower.
    pub fn resumptions(&self) -> usize {
        self.shared.resumptions.load(Ordering::Relaxed)
    }
}

impl Drop for CutFront {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const HOP_BY_HOP: [&str; 5] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

async fn forward(State(front): State<Arc<Shared>>, req: Request) -> Response {
    let resumed = req.method() == Method::GET && req.headers().contains_key("last-event-id");
    let backend = if req.method() == Method::GET {
        &front.follower
    } else {
        &front.origin
    };
    if resumed {
        front.resumptions.fetch_add(1, Ordering::Relaxed);
    }
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, 16 << 20).await {
        Ok(b) => b,
        Err(e) => return status(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let call = serde_json::from_slice::<Value>(&body).is_ok_and(|m| m["method"] == "tools/call");
    let mut out = front.http.request(parts.method, backend).body(body);
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out = out.header(name, value);
        }
    }
    let upstream = match out.send().await {
        Ok(r) => r,
        Err(e) => return status(StatusCode::BAD_GATEWAY, e.to_string()),
    };
    let mut builder = Response::builder().status(upstream.status());
    for (name, value) in upstream.headers() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            builder = builder.header(
                HeaderName::from_bytes(name.as_str().as_bytes()).expect("header"),
                value.as_bytes(),
            );
        }
    }
    let sse = upstream
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let body = if sse {
        let kind = Kind { call, resumed };
        Body::from_stream(relay(Box::pin(upstream.bytes_stream()), front.clone(), kind))
    } else {
        Body::from_stream(upstream.bytes_stream())
    };
    builder
        .body(body)
        .unwrap_or_else(|e| status(StatusCode::BAD_GATEWAY, e.to_string()))
}

fn status(code: StatusCode, msg: String) -> Response {
    let mut r = Response::new(Body::from(msg));
    *r.status_mut() = code;
    r
}

/// What a relayed SSE response answers.
#[derive(Debug, Clone, Copy)]
struct Kind {
    /// A `tools/call` POST: cut after the front's `keep` messages.
    call: bool,
    /// A GET with `Last-Event-ID`.
    resumed: bool,
}

/// How long the front lets the events it passed reach the client before
/// it cuts the stream.
const FLUSH: Duration = Duration::from_millis(200);

/// Where a relayed SSE response is.
struct Relay<S> {
    upstream: S,
    buf: Vec<u8>,
    front: Arc<Shared>,
    kind: Kind,
    ids: usize,
    messages: usize,
    ended: bool,
}

/// The SSE events of `upstream`, whole, recorded as they go through; a
/// call's is cut (an error: the connection breaks) once its priming event
/// and the front's `keep` messages went through.
fn relay(
    upstream: impl Stream<Item = reqwest::Result<Bytes>> + Send + Unpin + 'static,
    front: Arc<Shared>,
    kind: Kind,
) -> impl Stream<Item = std::io::Result<Bytes>> + Send + 'static {
    let relay = Relay {
        upstream,
        buf: Vec::new(),
        front,
        kind,
        ids: 0,
        messages: 0,
        ended: false,
    };
    futures::stream::unfold(relay, |mut r| async move {
        let item = r.next_item().await?;
        Some((item, r))
    })
}

impl<S: Stream<Item = reqwest::Result<Bytes>> + Unpin> Relay<S> {
    async fn next_item(&mut self) -> Option<std::io::Result<Bytes>> {
        if self.ended {
            return None;
        }
        if self.kind.call && self.ids > 0 && self.messages >= self.front.keep {
            // Let what went through reach the client before the connection
            // breaks (an aborted response drops unflushed bytes).
            tokio::time::sleep(FLUSH).await;
            self.ended = true;
            self.front.cut.send_replace(true);
            return Some(Err(std::io::Error::other("the front cut the stream")));
        }
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.buf.drain(..end + 2).collect();
                self.record(&event);
                return Some(Ok(Bytes::from(event)));
            }
            match self.upstream.next().await {
                Some(Ok(chunk)) => self.buf.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    self.ended = true;
                    return Some(Err(std::io::Error::other(e)));
                }
                None => {
                    self.ended = true;
                    return (!self.buf.is_empty()).then(|| Ok(Bytes::from(std::mem::take(&mut self.buf))));
                }
            }
        }
    }

    fn record(&mut self, event: &[u8]) {
        let text = String::from_utf8_lossy(event);
        let mut seen = Seen {
            id: None,
            message: None,
            call: self.kind.call,
            resumed: self.kind.resumed,
        };
        let mut data = String::new();
        for line in text.lines() {
            if let Some(id) = line.strip_prefix("id:") {
                seen.id = Some(id.trim().to_string());
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push_str(d.trim_start());
            }
        }
        seen.message = serde_json::from_str(&data).ok();
        self.ids += usize::from(seen.id.is_some());
        self.messages += usize::from(seen.message.is_some());
        if let Ok(mut all) = self.front.seen.lock() {
            all.push(seen);
        }
    }
}

/// An rmcp client that records the progress notifications it gets.
#[derive(Clone, Default)]
pub struct Progress(Arc<Mutex<Vec<f64>>>);

impl Progress {
    pub fn values(&self) -> Vec<f64> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl ClientHandler for Progress {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("handlestore-tests-resume", "0.1.0"),
        )
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        if let Ok(mut v) = self.0.lock() {
            v.push(params.progress);
        }
    }
}

pub type ProgressClient = RunningService<RoleClient, Progress>;

/// Connects an rmcp client through `url` with `lifecycle`.
pub async fn connect(url: &str, lifecycle: ClientLifecycleMode) -> Result<(ProgressClient, Progress)> {
    let progress = Progress::default();
    let transport = StreamableHttpClientTransport::from_uri(url.to_string());
    match tokio::time::timeout(
        crate::mcp::CALL_TIMEOUT,
        progress.clone().serve_with_lifecycle(transport, lifecycle),
    )
    .await
    {
        Ok(client) => Ok((client?, progress)),
        Err(_) => bail!("connect to {url}: no answer within {:?}", crate::mcp::CALL_TIMEOUT),
    }
}

/// Calls `tool` with a progress token: its text, or the call's error.
pub async fn call(client: &ProgressClient, tool: &str) -> std::result::Result<String, String> {
    let mut params = CallToolRequestParams::new(tool.to_string());
    params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::Number(1),
    )));
    match client.call_tool(params).await {
        Ok(result) => Ok(crate::mcp::text_of(&result)),
        Err(e) => Err(e.to_string()),
    }
}
