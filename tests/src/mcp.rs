//! MCP test helpers: cart_server processes, a round-robin HTTP front (what a
//! load balancer does: each request to the next replica), and an rmcp
//! client.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::response::Response;
use rmcp::model::ProtocolVersion;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData, RoleClient, Service, ServiceExt};
use serde_json::Value;

use crate::cluster::free_port;

/// An example binary built beside `handlestore` (`target/<profile>/examples/<name>`).
pub fn example_bin(name: &str) -> PathBuf {
    let bin = crate::handlestore_bin()
        .parent()
        .map(|d| d.join("examples").join(name))
        .expect("target dir");
    assert!(
        bin.exists(),
        "{} is missing: build it first (cargo build --release --examples), or run tests/run.sh",
        bin.display()
    );
    bin
}

/// A running cart_server process (the Rust example, or the FastMCP one).
pub struct CartServer {
    pub addr: SocketAddr,
    child: Option<Child>,
    /// An interpreter and the Python example; none: the example binary.
    program: Vec<std::ffi::OsString>,
    args: Vec<String>,
    /// Credentials for the cluster, as environment.
    env: Vec<(String, String)>,
    log: PathBuf,
}

impl CartServer {
    /// Starts a replica backed by the cluster at `endpoints`.
    pub async fn start(endpoints: &[String], log_dir: &std::path::Path) -> Result<Self> {
        Self::start_with(vec!["--endpoints".into(), endpoints.join(",")], log_dir).await
    }

    /// Starts a replica backed by a cluster that needs credentials.
    pub async fn start_with_credentials(
        endpoints: &[String],
        creds: &crate::creds::Credentials,
        log_dir: &std::path::Path,
    ) -> Result<Self> {
        Self::start_with_credentials_args(endpoints, creds, &[], log_dir).await
    }

    /// Starts a replica backed by a cluster that needs credentials, with
    /// extra flags (e.g. `--legacy-sessions`).
    pub async fn start_with_credentials_args(
        endpoints: &[String],
        creds: &crate::creds::Credentials,
        extra: &[&str],
        log_dir: &std::path::Path,
    ) -> Result<Self> {
        let mut args = vec!["--endpoints".to_string(), endpoints.join(",")];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut s = Self::new(args, log_dir)?;
        s.env = creds.env();
        s.spawn()?;
        s.wait_ready().await?;
        Ok(s)
    }

    /// Starts a replica with extra flags (e.g. `--confirm-checkout`).
    pub async fn start_args(endpoints: &[String], extra: &[&str], log_dir: &std::path::Path) -> Result<Self> {
        let mut args = vec!["--endpoints".to_string(), endpoints.join(",")];
        args.extend(extra.iter().map(|s| s.to_string()));
        Self::start_with(args, log_dir).await
    }

    /// Two replicas over one cluster with the same extra flags, as a load
    /// balancer's backends.
    pub async fn pair(cluster: &crate::cluster::TestCluster, extra: &[&str]) -> Result<(Self, Self)> {
        let a = Self::start_args(&cluster.endpoints(), extra, cluster.dir()).await?;
        let b = Self::start_args(&cluster.endpoints(), extra, cluster.dir()).await?;
        Ok((a, b))
    }

    /// Starts a replica that keeps carts in its own memory.
    pub async fn start_memory(log_dir: &std::path::Path) -> Result<Self> {
        Self::start_with(vec!["--memory".into()], log_dir).await
    }

    /// Starts a replica that keeps carts in the Redis at `url`.
    pub async fn start_redis(url: &str, log_dir: &std::path::Path) -> Result<Self> {
        Self::start_with(vec!["--redis".into(), url.into()], log_dir).await
    }

    /// Starts the FastMCP twin (`client/python/examples/fastmcp_cart.py`)
    /// under `python`, with `args` (e.g. `--kv memory`).
    pub async fn start_fastmcp(python: &std::path::Path, args: &[&str], log_dir: &std::path::Path) -> Result<Self> {
        let script = crate::repo_root().join("client/python/examples/fastmcp_cart.py");
        let mut s = Self::new(args.iter().map(|a| a.to_string()).collect(), log_dir)?;
        s.program = vec![python.into(), script.into()];
        s.spawn()?;
        // An interpreter importing FastMCP takes longer than a binary.
        s.wait_ready_within(Duration::from_secs(60)).await?;
        Ok(s)
    }

    async fn start_with(args: Vec<String>, log_dir: &std::path::Path) -> Result<Self> {
        let mut s = Self::new(args, log_dir)?;
        s.spawn()?;
        s.wait_ready().await?;
        Ok(s)
    }

    fn new(args: Vec<String>, log_dir: &std::path::Path) -> Result<Self> {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse()?;
        let log = log_dir.join(format!("cart-server-{}.log", addr.port()));
        Ok(Self {
            addr,
            child: None,
            program: Vec::new(),
            args,
            env: Vec::new(),
            log,
        })
    }

    fn spawn(&mut self) -> Result<()> {
        let log = std::fs::File::options().create(true).append(true).open(&self.log)?;
        let program = match self.program.split_first() {
            Some((p, rest)) => (p.clone(), rest.to_vec()),
            None => (example_bin("cart_server").into(), Vec::new()),
        };
        let child = Command::new(program.0)
            .args(program.1)
            .args(["--listen", &self.addr.to_string()])
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .context("spawning cart_server")?;
        self.child = Some(child);
        Ok(())
    }

    async fn wait_ready(&self) -> Result<()> {
        self.wait_ready_within(Duration::from_secs(20)).await
    }

    async fn wait_ready_within(&self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        while tokio::net::TcpStream::connect(self.addr).await.is_err() {
            if Instant::now() > deadline {
                bail!("cart_server on {} did not start:\n{}", self.addr, self.log());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.url())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// kill -9, then start again on the same port.
    pub async fn restart(&mut self) -> Result<()> {
        self.kill();
        self.spawn()?;
        self.wait_ready().await
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for CartServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A round-robin HTTP front: every request goes to the next backend.
pub struct RoundRobin {
    pub addr: SocketAddr,
    hits: Arc<Vec<AtomicUsize>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone)]
struct Front {
    backends: Arc<Vec<String>>,
    next: Arc<AtomicUsize>,
    hits: Arc<Vec<AtomicUsize>>,
    http: reqwest::Client,
}

const HOP_BY_HOP: [&str; 5] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "upgrade",
    "content-length",
];

async fn forward(State(front): State<Front>, req: Request) -> Response {
    let i = front.next.fetch_add(1, Ordering::Relaxed) % front.backends.len();
    front.hits[i].fetch_add(1, Ordering::Relaxed);
    let path = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let url = format!("{}{}", front.backends[i], path);
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, 64 << 20).await {
        Ok(b) => b,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let mut out = front.http.request(parts.method, &url).body(body);
    for (name, value) in &parts.headers {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            out = out.header(name, value);
        }
    }
    let resp = match out.send().await {
        Ok(r) => r,
        // What a load balancer answers when the replica is gone.
        Err(e) => return error_response(StatusCode::BAD_GATEWAY, e.to_string()),
    };
    let mut builder = Response::builder().status(resp.status());
    for (name, value) in resp.headers() {
        if !HOP_BY_HOP.contains(&name.as_str()) {
            builder = builder.header(
                HeaderName::from_bytes(name.as_str().as_bytes()).expect("header"),
                value.as_bytes(),
            );
        }
    }
    builder
        .body(Body::from_stream(resp.bytes_stream()))
        .unwrap_or_else(|e| error_response(StatusCode::BAD_GATEWAY, e.to_string()))
}

fn error_response(status: StatusCode, msg: String) -> Response {
    let mut r = Response::new(Body::from(msg));
    *r.status_mut() = status;
    r
}

impl RoundRobin {
    pub async fn start(backends: Vec<String>) -> Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let hits: Arc<Vec<AtomicUsize>> = Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let front = Front {
            backends: Arc::new(backends),
            next: Arc::default(),
            hits: hits.clone(),
            http: reqwest::Client::builder().build()?,
        };
        let app = axum::Router::new().fallback(forward).with_state(front);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, hits, task })
    }

    /// Requests sent to each backend so far.
    pub fn hits(&self) -> Vec<usize> {
        self.hits.iter().map(|h| h.load(Ordering::Relaxed)).collect()
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for RoundRobin {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long a test waits for one MCP connect or tool call before calling
/// its outcome unknown. A hung call must not hang the test.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

pub type McpClient = RunningService<RoleClient, ClientConfig>;

/// Connects an rmcp client over Streamable HTTP.
pub async fn connect(url: &str) -> Result<McpClient> {
    let transport = StreamableHttpClientTransport::from_uri(url.to_string());
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("handlestore-tests", "0.1.0"),
    );
    match tokio::time::timeout(CALL_TIMEOUT, info.serve(transport)).await {
        Ok(r) => Ok(r?),
        Err(_) => bail!("connect to {url}: no answer within {CALL_TIMEOUT:?}"),
    }
}

/// An MCP client that answers every elicitation by accepting
/// (`{"confirm": true}`): what a user clicking "yes" looks like.
#[derive(Clone)]
pub struct Confirming;

impl ClientHandler for Confirming {
    fn get_info(&self) -> ClientConfig {
        // Form elicitation, declared as on the wire.
        let caps: ClientCapabilities =
            serde_json::from_value(serde_json::json!({"elicitation": {"form": {}}})).expect("capabilities");
        ClientConfig::new(caps, Implementation::new("handlestore-tests-confirming", "0.1.0"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(serde_json::json!({"confirm": true})))
    }
}

/// Connects a client that confirms elicitations, speaking protocol
/// 2026-07-28 (`server/discover`, per-request metadata, no sessions: what
/// MRTR needs).
pub async fn connect_confirming(url: &str) -> Result<RunningService<RoleClient, Confirming>> {
    let transport = StreamableHttpClientTransport::from_uri(url.to_string());
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    match tokio::time::timeout(CALL_TIMEOUT, Confirming.serve_with_lifecycle(transport, lifecycle)).await {
        Ok(r) => Ok(r?),
        Err(_) => bail!("connect to {url}: no answer within {CALL_TIMEOUT:?}"),
    }
}

/// The outcome of one tool call.
#[derive(Debug, Clone)]
pub enum ToolOutcome {
    /// The tool succeeded: its structured result.
    Ok(Value),
    /// The tool answered with an error (`isError`): its text.
    ToolError(String),
    /// The call itself failed (transport, protocol): outcome unknown.
    Failed(String),
}

impl ToolOutcome {
    pub fn ok(self) -> Value {
        match self {
            ToolOutcome::Ok(v) => v,
            other => panic!("expected success, got {other:?}"),
        }
    }

    pub fn tool_error(self) -> String {
        match self {
            ToolOutcome::ToolError(e) => e,
            other => panic!("expected a tool error, got {other:?}"),
        }
    }
}

pub fn text_of(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Calls a tool with JSON arguments.
pub async fn call<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    tool: &str,
    args: Value,
) -> ToolOutcome {
    let mut params = CallToolRequestParams::new(tool.to_string());
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    let answer = match tokio::time::timeout(CALL_TIMEOUT, client.call_tool(params)).await {
        Ok(a) => a,
        Err(_) => return ToolOutcome::Failed(format!("{tool}: no answer within {CALL_TIMEOUT:?}")),
    };
    match answer {
        Ok(r) if r.is_error == Some(true) => ToolOutcome::ToolError(text_of(&r)),
        Ok(r) => match r.structured_content.clone() {
            Some(v) => ToolOutcome::Ok(v),
            None => ToolOutcome::Ok(serde_json::from_str(&text_of(&r)).unwrap_or(Value::String(text_of(&r)))),
        },
        Err(e) => ToolOutcome::Failed(e.to_string()),
    }
}
