//! `handlestore mcp`: the state tool as an MCP server (stateless Streamable
//! HTTP), so any MCP client or agent can keep its state in the cluster.
//! Every argument has a JSON schema; failures are tool errors with a message
//! an agent can act on.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use handlestore_client::{
    ClusterStateTool, DeleteOptions, Error, ListOptions, StateEntry, StateTool, StateValue, StoreItem, StoreOptions,
    Ttl,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CliError, Conn};

#[derive(clap::Args, Debug)]
pub struct McpArgs {
    /// Address to serve MCP (Streamable HTTP at /mcp) on.
    #[arg(long, default_value = "127.0.0.1:7480")]
    pub listen: SocketAddr,
    /// Host headers to accept (comma-separated; behind a load balancer, its
    /// name). Default: loopback only. "*" accepts any.
    #[arg(long, value_delimiter = ',', default_values_t = ["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()])]
    pub allowed_hosts: Vec<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct KeyArgs {
    /// A '/'-separated key, e.g. "checkpoints/agent-7/latest".
    key: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct StoreArgs {
    /// A '/'-separated key, e.g. "checkpoints/agent-7/latest".
    key: String,
    /// Any JSON value.
    value: Value,
    /// Seconds until the key expires; omit to keep it until deleted.
    #[serde(default)]
    ttl_seconds: Option<u64>,
    /// Store only if the key is still at this revision (compare-and-set).
    #[serde(default)]
    expected_revision: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct DeleteArgs {
    /// A key, or with prefix=true a key prefix such as "sessions/s-1/".
    key: String,
    /// Delete every key under this prefix (up to limit) in one atomic step.
    #[serde(default)]
    prefix: bool,
    /// Most keys a prefix delete removes (default 1000, at most 10000).
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ListArgs {
    /// Only keys starting with this ("" or omitted: all keys).
    #[serde(default)]
    prefix: String,
    /// Keys per page (default 100, at most 1000).
    #[serde(default)]
    limit: Option<u32>,
    /// The next_page_token of the previous page.
    #[serde(default)]
    page_token: Option<String>,
    /// Include values.
    #[serde(default)]
    with_values: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct BatchItem {
    key: String,
    value: Value,
    #[serde(default)]
    ttl_seconds: Option<u64>,
    #[serde(default)]
    expected_revision: Option<u64>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct BatchStoreArgs {
    /// Items stored all together or not at all (at most 1000).
    items: Vec<BatchItem>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct BatchRetrieveArgs {
    /// Keys to read from one consistent view (at most 1000).
    keys: Vec<String>,
}

#[derive(Clone)]
struct StateServer {
    tool: ClusterStateTool,
    tool_router: ToolRouter<StateServer>,
}

fn ttl(seconds: Option<u64>) -> Ttl {
    match seconds {
        Some(s) if s > 0 => Ttl::After(Duration::from_secs(s)),
        _ => Ttl::Never,
    }
}

fn ok(v: Value) -> Result<CallToolResult, ErrorData> {
    Ok(CallToolResult::structured(v))
}

/// A failure the agent can read: what went wrong and what to do.
fn failed(e: Error) -> Result<CallToolResult, ErrorData> {
    let msg = match e {
        Error::InvalidArgument(m) => format!("invalid argument: {m}"),
        Error::Conflict { current_revision, .. } => {
            format!("revision mismatch: the key is now at revision {current_revision}; read it again and retry")
        }
        Error::NotFound(m) => format!("not found: {m}"),
        e @ (Error::Unavailable { .. } | Error::Deadline { .. }) => format!("state store unavailable, retry: {e}"),
        e => e.to_string(),
    };
    Ok(CallToolResult::error(vec![ContentBlock::text(msg)]))
}

fn value_json(v: &Option<StateValue>) -> Value {
    match v {
        Some(StateValue::Json(j)) => json!({ "value": j }),
        Some(StateValue::Bytes(b)) => json!({ "value_base64": data_encoding::BASE64.encode(b) }),
        None => json!({}),
    }
}

fn entry_json(e: &StateEntry) -> Value {
    let mut v = json!({ "key": e.key, "revision": e.mod_revision, "expires_at_ms": e.expires_at_ms });
    if let (Value::Object(m), Value::Object(val)) = (&mut v, value_json(&e.value)) {
        m.extend(val);
    }
    v
}

#[tool_router]
impl StateServer {
    #[tool(description = "Store a JSON value under a '/'-separated key. Returns the write's revision.")]
    async fn state_store(&self, Parameters(a): Parameters<StoreArgs>) -> Result<CallToolResult, ErrorData> {
        let opts = StoreOptions {
            ttl: ttl(a.ttl_seconds),
            expected_revision: a.expected_revision,
        };
        match self.tool.store(&a.key, StateValue::Json(a.value), opts).await {
            Ok(revision) => ok(json!({ "key": a.key, "revision": revision })),
            Err(e) => failed(e),
        }
    }

    #[tool(description = "Read the value stored under a key (found=false if there is none).")]
    async fn state_retrieve(&self, Parameters(a): Parameters<KeyArgs>) -> Result<CallToolResult, ErrorData> {
        match self.tool.retrieve(&a.key).await {
            Ok(Some(e)) => {
                let mut v = entry_json(&e);
                v["found"] = json!(true);
                ok(v)
            }
            Ok(None) => ok(json!({ "key": a.key, "found": false })),
            Err(e) => failed(e),
        }
    }

    #[tool(description = "Delete a key, or with prefix=true up to limit keys under a prefix, atomically.")]
    async fn state_delete(&self, Parameters(a): Parameters<DeleteArgs>) -> Result<CallToolResult, ErrorData> {
        let opts = if a.prefix {
            DeleteOptions::prefix(a.limit.unwrap_or(0))
        } else {
            DeleteOptions::default()
        };
        match self.tool.delete(&a.key, opts).await {
            Ok(d) => ok(json!({ "deleted": d.count, "more": d.more })),
            Err(e) => failed(e),
        }
    }

    #[tool(description = "List keys under a prefix in key order, a page at a time.")]
    async fn state_list(&self, Parameters(a): Parameters<ListArgs>) -> Result<CallToolResult, ErrorData> {
        let opts = ListOptions {
            limit: a.limit.unwrap_or(0),
            page_token: a.page_token,
            with_values: a.with_values,
        };
        match self.tool.list(&a.prefix, opts).await {
            Ok(page) => ok(json!({
                "entries": page.entries.iter().map(entry_json).collect::<Vec<_>>(),
                "next_page_token": page.next_page_token,
            })),
            Err(e) => failed(e),
        }
    }

    #[tool(description = "Whether a key exists.")]
    async fn state_exists(&self, Parameters(a): Parameters<KeyArgs>) -> Result<CallToolResult, ErrorData> {
        match self.tool.exists(&a.key).await {
            Ok(exists) => ok(json!({ "key": a.key, "exists": exists })),
            Err(e) => failed(e),
        }
    }

    #[tool(description = "Store several values atomically: all of them or, if any compare-and-set fails, none.")]
    async fn state_batch_store(&self, Parameters(a): Parameters<BatchStoreArgs>) -> Result<CallToolResult, ErrorData> {
        let n = a.items.len();
        let items = a
            .items
            .into_iter()
            .map(|i| StoreItem {
                key: i.key,
                value: StateValue::Json(i.value),
                ttl: ttl(i.ttl_seconds),
                expected_revision: i.expected_revision,
            })
            .collect();
        match self.tool.batch_store(items).await {
            Ok(revision) => ok(json!({ "stored": n, "revision": revision })),
            Err(e) => failed(e),
        }
    }

    #[tool(description = "Read several keys from one consistent view.")]
    async fn state_batch_retrieve(
        &self,
        Parameters(a): Parameters<BatchRetrieveArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        match self.tool.batch_retrieve(&a.keys).await {
            Ok(found) => {
                let entries: Vec<Value> = a
                    .keys
                    .iter()
                    .zip(found)
                    .map(|(k, e)| match e {
                        Some(e) => {
                            let mut v = entry_json(&e);
                            v["found"] = json!(true);
                            v
                        }
                        None => json!({ "key": k, "found": false }),
                    })
                    .collect();
                ok(json!({ "entries": entries }))
            }
            Err(e) => failed(e),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for StateServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("handlestore-state", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Durable, replicated key-value state. Keys are '/'-separated paths such as \
                 checkpoints/<agent>/latest or logs/<agent>/<timestamp>; values are JSON.",
            )
    }
}

pub async fn run(conn: &Conn, args: McpArgs) -> Result<(), CliError> {
    // Handlers first, so a SIGTERM while connecting or binding stops cleanly.
    let stop = super::shutdown_signal();
    let tool = conn.client()?.state_tool();
    let mut config = StreamableHttpServerConfig::default().with_legacy_session_mode(false);
    config = if args.allowed_hosts.iter().any(|h| h == "*") {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(args.allowed_hosts.clone())
    };
    let ct = config.cancellation_token.clone();
    let router = StateServer::tool_router();
    // Stateless: a server value per request, sharing the cluster client.
    let service = StreamableHttpService::new(
        move || {
            Ok(StateServer {
                tool: tool.clone(),
                tool_router: router.clone(),
            })
        },
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| CliError::new(2, format!("listening on {}: {e}", args.listen)))?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    tracing::info!(listen = %args.listen, endpoints = ?conn.endpoints, "state-tool MCP server ready at /mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            stop.await;
            ct.cancel();
        })
        .await
        .map_err(|e| CliError::new(2, e.to_string()))?;
    Ok(())
}
