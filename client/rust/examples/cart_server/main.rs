//! A stateless MCP cart server (Streamable HTTP, no sessions) whose carts live
//! in handlestore, so any number of replicas behind a load balancer share
//! them:
//!
//! ```sh
//! cargo run --release -p handlestore-client --example cart_server -- \
//!     --listen 127.0.0.1:8080 --endpoints http://127.0.0.1:7401,http://127.0.0.1:7402,http://127.0.0.1:7403
//! cargo run --release -p handlestore-client --example cart_server -- --memory   # one replica, in memory
//! cargo run --release -p handlestore-client --example cart_server -- --redis redis://127.0.0.1:6379/
//! ```
//!
//! `--redis` keeps the carts in Redis instead, as a Redis-backed server
//! would (`redis_store.rs`): the bench's comparison, not a recommendation.
//!
//! Tools: `create_cart`, `add_item(cart_id, sku, quantity, request_id?)`,
//! `get_cart(cart_id)`, `checkout(cart_id)`. `add_item` is a compare-and-set
//! update, so replicas adding to one cart at once never lose an item; a
//! `request_id` makes a retried add_item a no-op; `checkout` is exactly-once.
//!
//! Each cart is also a resource, `cart://<cart_id>`. A client on protocol
//! 2026-07-28 may `subscriptions/listen` to carts; a change made through
//! any replica reaches listeners on every replica (a [`ResourceBus`]
//! following the cart store: a watch on the carts' own writes, so a change
//! is one replicated write, with nothing published beside it; with
//! --memory, this process only; with --redis, Redis pub/sub).
//!
//! With `--confirm-checkout`, checkout is a multi round-trip request
//! (SEP-2322 MRTR): the first call answers "input required" with an
//! elicitation ("check out N items?") and a `requestState` sealed by
//! `RequestStateCodec` with the cluster's replicated key ring; the client's
//! retry, which a load balancer may send to any replica, is accepted only if
//! that state verifies.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use handlestore_client::request_state::Mode;
use handlestore_client::{
    Client, ClientTls, Error, HandleStore, MemoryHandleStore, MemoryOptions, RequestStateCodec, ResourceBus,
    ResourceUpdate, RingKey, Ttl,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, Implementation, InputRequest, InputRequiredResult, Notification,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::json;

mod redis_bus;
mod redis_store;

#[derive(clap::Parser, Debug)]
#[command(about = "Stateless MCP cart server backed by handlestore")]
struct Args {
    /// Address to serve MCP (Streamable HTTP at /mcp) on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// handlestore endpoints (comma-separated).
    #[arg(
        long,
        env = "HANDLESTORE_ENDPOINTS",
        value_delimiter = ',',
        conflicts_with_all = ["memory", "redis"]
    )]
    endpoints: Vec<String>,
    /// Keep carts in this process's memory instead (one replica only).
    #[arg(long, conflicts_with = "redis")]
    memory: bool,
    /// Keep carts in this Redis instead (`redis://HOST:PORT/`), as a
    /// Redis-backed MCP server would: for comparison.
    #[arg(long, conflicts_with_all = ["confirm_checkout", "legacy_sessions"])]
    redis: Option<String>,
    /// handlestore namespace.
    #[arg(long, default_value = "default")]
    namespace: String,
    /// Host headers to accept (comma-separated; behind a load balancer, its
    /// name). Default: loopback only. "*" accepts any.
    #[arg(long, value_delimiter = ',', default_values_t = ["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()])]
    allowed_hosts: Vec<String>,
    /// Ask the client to confirm checkout (an MRTR round trip with a sealed
    /// request state; creates the namespace's key ring if it has none).
    #[arg(long)]
    confirm_checkout: bool,
    /// How often the key ring is re-read (the longest a retired key may
    /// still verify here).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    keyring_refresh: Duration,
    /// Idle carts expire after this long.
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    cart_ttl: Duration,
    /// The CA that signed the nodes' certificates (PEM): talk TLS to them.
    #[arg(long, env = "HANDLESTORE_CACERT")]
    cacert: Option<std::path::PathBuf>,
    /// A client certificate (PEM), for nodes that require one.
    #[arg(long, env = "HANDLESTORE_CERT", requires = "key")]
    cert: Option<std::path::PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, env = "HANDLESTORE_KEY", requires = "cert")]
    key: Option<std::path::PathBuf>,
    /// A user's token, for clusters with auth enabled.
    #[arg(long, env = "HANDLESTORE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// A file holding the token (a container secret), instead of --token.
    #[arg(long, env = "HANDLESTORE_TOKEN_FILE", conflicts_with = "token")]
    token_file: Option<std::path::PathBuf>,
    /// Serve legacy `Mcp-Session-Id` sessions (MCP before 2026-07-28) and
    /// resumable SSE streams. Over a cluster, sessions and events are kept
    /// in it, so any replica serves any session and replays what a client
    /// missed after `Last-Event-ID`; each session is bound to the bearer
    /// token that opened it. With --memory they stay in this process.
    #[arg(long)]
    legacy_sessions: bool,
    /// An unused legacy session ends after this long.
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    session_ttl: Duration,
}

/// A client of the cluster, as the flags say (TLS with --cacert, a token
/// with --token or --token-file).
fn cluster_client(args: &Args) -> anyhow::Result<Client> {
    let mut builder = Client::builder(args.endpoints.clone()).namespace(args.namespace.clone());
    let (ca, cert, key) = (args.cacert.as_deref(), args.cert.as_deref(), args.key.as_deref());
    if let Some(tls) = ClientTls::from_optional_files(ca, cert, key)? {
        builder = builder.tls(tls);
    }
    if let Some(token) = &args.token {
        builder = builder.token(token.clone());
    }
    if let Some(file) = &args.token_file {
        let token = handlestore_client::auth::read_token_file(file)
            .map_err(|e| anyhow::anyhow!("--token-file {}: {e}", file.display()))?;
        builder = builder.token(token);
    }
    Ok(builder.build()?)
}

/// One `add_item` call's line in the cart.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Line {
    sku: String,
    quantity: u32,
    /// The caller's idempotency key, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    request_id: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
struct Cart {
    lines: Vec<Line>,
    /// Set once, by the first checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    order_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Order {
    cart_id: String,
    lines: Vec<Line>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct CartIdArgs {
    /// The id create_cart returned.
    cart_id: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct AddItemArgs {
    /// The id create_cart returned.
    cart_id: String,
    /// Product SKU.
    sku: String,
    /// How many (at least 1).
    quantity: u32,
    /// Optional idempotency key: a retried add_item with the same
    /// request_id is not added twice.
    #[serde(default)]
    request_id: Option<String>,
}

#[derive(Clone)]
struct CartServer {
    carts: Arc<dyn HandleStore<Cart>>,
    orders: Arc<dyn HandleStore<Order>>,
    /// Set with --confirm-checkout.
    confirm: Option<Arc<RequestStateCodec>>,
    /// Cart changes, heard by listeners on every replica.
    bus: Bus,
    tool_router: ToolRouter<CartServer>,
}

/// Where cart updates are published: the cluster's bus, or (with
/// --memory) this process's.
#[derive(Clone)]
enum Bus {
    Cluster(ResourceBus),
    Local(tokio::sync::broadcast::Sender<ResourceUpdate>),
    Redis(Arc<redis_bus::RedisBus>),
}

const CART_URI: &str = "cart://";

/// How long a checkout confirmation stays valid.
const CONFIRM_TTL: Duration = Duration::from_secs(600);
/// The input request key of the confirmation.
const CONFIRM: &str = "confirm";

fn tool_error(msg: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(msg.into())])
}

/// Maps a store error to what the caller sees: bad ids are the caller's
/// problem; anything else means the outcome is unknown and a retry (with the
/// same request_id) is safe.
fn store_error(cart_id: &str, e: Error) -> CallToolResult {
    match e {
        Error::InvalidArgument(_) => tool_error(format!("unknown cart_id: {cart_id}")),
        e => tool_error(format!("cart store unavailable, retry: {e}")),
    }
}

#[tool_router]
impl CartServer {
    /// The tool router is built once (it holds every tool's JSON schema) and
    /// cloned into the server each request gets.
    fn new(
        carts: Arc<dyn HandleStore<Cart>>,
        orders: Arc<dyn HandleStore<Order>>,
        confirm: Option<Arc<RequestStateCodec>>,
        bus: Bus,
        tool_router: ToolRouter<Self>,
    ) -> Self {
        Self {
            carts,
            orders,
            confirm,
            bus,
            tool_router,
        }
    }

    #[tool(description = "Create an empty shopping cart and return its cart_id.")]
    async fn create_cart(&self) -> Result<CallToolResult, ErrorData> {
        match self.carts.mint(Cart::default(), Ttl::Default).await {
            Ok(id) => Ok(CallToolResult::structured(json!({ "cart_id": id }))),
            Err(e) => Ok(tool_error(format!("cart store unavailable, retry: {e}"))),
        }
    }

    #[tool(description = "Add quantity units of a SKU to a cart. Returns the cart.")]
    async fn add_item(&self, Parameters(args): Parameters<AddItemArgs>) -> Result<CallToolResult, ErrorData> {
        if args.quantity == 0 {
            return Ok(tool_error("quantity must be at least 1"));
        }
        if args.sku.is_empty() || args.sku.len() > 128 {
            return Ok(tool_error("sku must be 1 to 128 characters"));
        }
        let line = Line {
            sku: args.sku,
            quantity: args.quantity,
            request_id: args.request_id,
        };
        let mut refused = None;
        let res = self
            .carts
            .update(&args.cart_id, &mut |cart: &mut Cart| {
                refused = None;
                if let Some(order) = &cart.order_id {
                    refused = Some(format!("cart {} is already checked out (order {order})", args.cart_id));
                    return;
                }
                let duplicate = line.request_id.is_some() && cart.lines.iter().any(|l| l.request_id == line.request_id);
                if !duplicate {
                    cart.lines.push(line.clone());
                }
            })
            .await;
        match res {
            Ok(_) if refused.is_some() => Ok(tool_error(refused.unwrap_or_default())),
            Ok(Some(cart)) => {
                self.changed(&args.cart_id).await;
                Ok(CallToolResult::structured(
                    json!({ "cart_id": args.cart_id, "cart": cart }),
                ))
            }
            Ok(None) => Ok(tool_error(format!("unknown cart_id: {}", args.cart_id))),
            Err(e) => Ok(store_error(&args.cart_id, e)),
        }
    }

    #[tool(description = "Show a cart's lines and, once checked out, its order_id.")]
    async fn get_cart(&self, Parameters(args): Parameters<CartIdArgs>) -> Result<CallToolResult, ErrorData> {
        match self.carts.get(&args.cart_id).await {
            Ok(Some(cart)) => Ok(CallToolResult::structured(
                json!({ "cart_id": args.cart_id, "cart": cart }),
            )),
            Ok(None) => Ok(tool_error(format!("unknown cart_id: {}", args.cart_id))),
            Err(e) => Ok(store_error(&args.cart_id, e)),
        }
    }

    #[tool(description = "Check a cart out and return its order_id. Calling it again returns the same order_id.")]
    async fn checkout(
        &self,
        Parameters(args): Parameters<CartIdArgs>,
        RequestState(request_state): RequestState,
        InputResponses(responses): InputResponses,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(codec) = &self.confirm {
            match request_state {
                None => return self.ask_to_confirm(codec, &args.cart_id).await,
                Some(blob) => {
                    // Sealed by whichever replica answered the first round,
                    // bound to this cart and this tool.
                    if codec.decode(&blob, &args.cart_id, Some("checkout")).await.is_none() {
                        return Ok(tool_error("invalid or expired checkout confirmation; call checkout again").into());
                    }
                    let accepted = responses
                        .and_then(|mut r| r.remove(CONFIRM))
                        .and_then(|v| serde_json::from_value::<ElicitResult>(v).ok())
                        .is_some_and(|r| {
                            r.action == ElicitationAction::Accept
                                && r.content
                                    .as_ref()
                                    .and_then(|c| c.get("confirm"))
                                    .and_then(|v| v.as_bool())
                                    == Some(true)
                        });
                    if !accepted {
                        return Ok(tool_error("checkout was not confirmed").into());
                    }
                }
            }
        }
        Ok(self.checkout_now(args).await.into())
    }
}

impl CartServer {
    /// The first round of a confirmed checkout: an elicitation, and the
    /// cart's summary sealed as request state.
    async fn ask_to_confirm(&self, codec: &RequestStateCodec, cart_id: &str) -> Result<CallToolResponse, ErrorData> {
        let cart = match self.carts.get(cart_id).await {
            Ok(Some(cart)) => cart,
            Ok(None) => return Ok(tool_error(format!("unknown cart_id: {cart_id}")).into()),
            Err(e) => return Ok(store_error(cart_id, e).into()),
        };
        let summary = json!({ "cart_id": cart_id, "lines": cart.lines.len() });
        let sealed = match codec.encode(&summary, cart_id, Some("checkout"), CONFIRM_TTL).await {
            Ok(s) => s,
            Err(e) => return Ok(tool_error(format!("cannot seal the confirmation: {e}")).into()),
        };
        let schema = ElicitationSchema::builder()
            .required_bool("confirm")
            .build()
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let ask = ElicitRequest::new(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!("Check out cart {cart_id} with {} line(s)?", cart.lines.len()),
            requested_schema: schema,
        });
        let requests = [(CONFIRM.to_string(), InputRequest::Elicitation(ask))]
            .into_iter()
            .collect();
        Ok(CallToolResponse::InputRequired(InputRequiredResult::new(
            Some(requests),
            Some(sealed),
        )))
    }

    async fn checkout_now(&self, args: CartIdArgs) -> CallToolResult {
        let candidate = handlestore_client::id::new_handle_id("order");
        let mut empty = false;
        let res = self
            .carts
            .update(&args.cart_id, &mut |cart: &mut Cart| {
                empty = cart.lines.is_empty() && cart.order_id.is_none();
                if cart.order_id.is_none() && !empty {
                    cart.order_id = Some(candidate.clone());
                }
            })
            .await;
        let cart = match res {
            Ok(_) if empty => return tool_error(format!("cart {} is empty", args.cart_id)),
            Ok(Some(cart)) => cart,
            Ok(None) => return tool_error(format!("unknown cart_id: {}", args.cart_id)),
            Err(e) => return store_error(&args.cart_id, e),
        };
        let Some(order_id) = cart.order_id.clone() else {
            return tool_error("checkout did not record an order; retry");
        };
        // The order record has the order's id, so whichever call recorded the
        // order writes it; a repeat finds it present (put is an upsert of the
        // same content).
        let order = Order {
            cart_id: args.cart_id.clone(),
            lines: cart.lines.clone(),
        };
        if let Err(e) = self.orders.put(&order_id, order, Ttl::Never).await {
            return store_error(&args.cart_id, e);
        }
        self.changed(&args.cart_id).await;
        CallToolResult::structured(json!({
            "cart_id": args.cart_id,
            "order_id": order_id,
            "lines": cart.lines.len(),
        }))
    }
}

impl CartServer {
    /// Tells listeners on every replica that a cart changed (best effort:
    /// the tool's answer does not wait on a listener). Over the cluster,
    /// the cart's write already did: its bus follows the cart store.
    async fn changed(&self, cart_id: &str) {
        let uri = format!("{CART_URI}{cart_id}");
        match &self.bus {
            Bus::Cluster(_) => {}
            Bus::Local(tx) => {
                let _ = tx.send(ResourceUpdate { uri, revision: 0 });
            }
            Bus::Redis(bus) => {
                if let Err(e) = bus.publish(&uri).await {
                    tracing::warn!(error = %e, %uri, "cart update not published");
                }
            }
        }
    }

    /// Sends a listener the updates of the carts it asked for, in order,
    /// until it leaves.
    async fn forward_updates(&self, ctx: &SubscriptionContext) -> Result<(), ErrorData> {
        use tokio::sync::broadcast::error::RecvError;
        let wanted = ctx.accepted().resource_subscriptions.clone().unwrap_or_default();
        let mut updates = match &self.bus {
            Bus::Cluster(bus) => bus
                .subscribe()
                .await
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
            Bus::Local(tx) => tx.subscribe(),
            Bus::Redis(bus) => bus.subscribe(),
        };
        loop {
            let update = tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                next = updates.recv() => next,
            };
            let uri = match update {
                Ok(update) => update.uri,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(skipped = n, "a slow listener skipped cart updates");
                    continue;
                }
                Err(RecvError::Closed) => return Ok(()),
            };
            if wanted.contains(&uri) {
                let note = Notification::new(ResourceUpdatedNotificationParam::new(uri));
                if ctx
                    .sink()
                    .send(ServerNotification::ResourceUpdatedNotification(note))
                    .await
                    .is_err()
                {
                    return Ok(());
                }
            }
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CartServer {
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let unknown = || ErrorData::resource_not_found(format!("unknown resource {}", request.uri), None);
        let id = request.uri.strip_prefix(CART_URI).ok_or_else(unknown)?;
        let cart = match self.carts.get(id).await {
            Ok(Some(cart)) => cart,
            Ok(None) | Err(Error::InvalidArgument(_)) => return Err(unknown()),
            Err(e) => return Err(ErrorData::internal_error(format!("cart store unavailable: {e}"), None)),
        };
        let text = serde_json::to_string(&cart).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let contents = ResourceContents::text(text, request.uri.clone()).with_mime_type("application/json");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    /// Listeners may follow carts (`cart://<id>`), nothing else.
    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let carts = requested
            .resource_subscriptions
            .as_ref()?
            .iter()
            .filter(|uri| uri.starts_with(CART_URI))
            .cloned()
            .collect();
        let mut accepted = SubscriptionFilter::new();
        accepted.resource_subscriptions = Some(carts);
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.forward_updates(&context).await
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_subscribe()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "handlestore-cart-server",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "A shopping cart. create_cart returns a cart_id; pass it to add_item, get_cart and checkout.",
            )
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = <Args as clap::Parser>::parse();
    let (carts, orders, bus) = stores(&args)?;
    let mut config = StreamableHttpServerConfig::default().with_legacy_session_mode(false);
    config = if args.allowed_hosts.iter().any(|h| h == "*") {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_hosts(args.allowed_hosts.clone())
    };
    let ct = config.cancellation_token.clone();
    // Stateless: the factory runs per request and shares the stores.
    let confirm = if args.confirm_checkout {
        Some(Arc::new(confirm_codec(&args).await?))
    } else {
        None
    };
    let tools = CartServer::tool_router();
    let factory = move || {
        Ok(CartServer::new(
            carts.clone(),
            orders.clone(),
            confirm.clone(),
            bus.clone(),
            tools.clone(),
        ))
    };
    let router = if args.legacy_sessions {
        sessions::router(&args, factory, config)?
    } else {
        let service = StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), config);
        axum::Router::new().nest_service("/mcp", service)
    };
    // No Nagle delay: a tool answer goes out as soon as it is written.
    let listener = tokio::net::TcpListener::bind(args.listen).await?.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let store = match (args.memory, &args.redis) {
        (true, _) => "memory",
        (false, Some(_)) => "redis",
        (false, None) => "handlestore",
    };
    tracing::info!(listen = %args.listen, store, "cart server ready at /mcp");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            ct.cancel();
        })
        .await?;
    Ok(())
}

type Stores = (Arc<dyn HandleStore<Cart>>, Arc<dyn HandleStore<Order>>, Bus);

/// Where carts and orders live, and how their updates travel, as the flags
/// say: this process's memory, Redis, or the cluster.
fn stores(args: &Args) -> anyhow::Result<Stores> {
    if args.memory {
        let opts = MemoryOptions {
            default_ttl: Some(args.cart_ttl),
            prefix: "cart".into(),
            gc_interval: Some(Duration::from_secs(60)),
        };
        return Ok((
            Arc::new(MemoryHandleStore::with_options(opts)),
            Arc::new(MemoryHandleStore::with_options(MemoryOptions::default())),
            Bus::Local(tokio::sync::broadcast::channel(1024).0),
        ));
    }
    if let Some(url) = &args.redis {
        use redis_store::RedisHandleStore;
        return Ok((
            Arc::new(RedisHandleStore::new(url, "cart", "cart", Some(args.cart_ttl))?),
            Arc::new(RedisHandleStore::new(url, "order", "", None)?),
            Bus::Redis(Arc::new(redis_bus::RedisBus::start(url)?)),
        ));
    }
    if args.endpoints.is_empty() {
        anyhow::bail!("give --endpoints (or HANDLESTORE_ENDPOINTS), --memory or --redis");
    }
    let client = cluster_client(args)?;
    Ok((
        Arc::new(
            client
                .handle_store::<Cart>("cart")
                .prefix("cart")
                .default_ttl(args.cart_ttl)
                .build(),
        ),
        Arc::new(client.handle_store::<Order>("order").build()),
        Bus::Cluster(cart_updates(&client)),
    ))
}

/// The codec for checkout confirmations: the cluster's replicated key ring
/// (created if the namespace has none), so every replica verifies what
/// another sealed; with --memory a key of this process (one replica only).
/// Legacy sessions: over a cluster, shared by every replica.
mod sessions {
    use super::*;
    use handlestore_client::rmcp_seams::{BindSessions, ClusterEventStore, ClusterSessionStore};
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use sha2::{Digest, Sha256};

    /// How often a replica tells an SSE client to reconnect when a stream
    /// ends; the client then resumes with `Last-Event-ID`.
    const SSE_RETRY: Duration = Duration::from_secs(1);

    pub fn router(
        args: &Args,
        factory: impl Fn() -> Result<CartServer, std::io::Error> + Send + Sync + 'static,
        config: StreamableHttpServerConfig,
    ) -> anyhow::Result<axum::Router> {
        let mut config = config.with_legacy_session_mode(true);
        config.sse_retry = Some(SSE_RETRY);
        if args.memory {
            let service = StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
            return Ok(axum::Router::new().nest_service("/mcp", service));
        }
        let client = cluster_client(args)?;
        let store = ClusterSessionStore::new(&client).with_ttl(args.session_ttl);
        config.session_store = Some(Arc::new(store.clone()));
        // Events in the cluster; a resumption on another replica follows
        // the stream live and answers for it if this replica dies.
        let events = ClusterEventStore::new(&client).with_ttl(args.session_ttl);
        let service = events.streamable_http_service(factory, LocalSessionManager::default(), config);
        let bound = tower::Layer::layer(&BindSessions::new(store, principal), service);
        Ok(axum::Router::new().nest_service("/mcp", bound))
    }

    /// Who the caller is: here, whoever holds the bearer token (a digest of
    /// it, so the token itself is never stored). A real server names the
    /// user its OAuth validation found.
    fn principal(parts: &http::request::Parts) -> Option<String> {
        let auth = parts.headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
        let token = auth.strip_prefix("Bearer ")?;
        let digest = Sha256::digest(token.as_bytes());
        Some(data_encoding::HEXLOWER.encode(&digest[..16]))
    }
}

/// The cluster's bus of cart updates: every change to a cart handle, its
/// watch started now (in the background: the cluster may not be up yet)
/// so that the first listener misses nothing.
fn cart_updates(client: &Client) -> ResourceBus {
    let bus = ResourceBus::following_store(client, "cart", CART_URI);
    let warm = bus.clone();
    tokio::spawn(async move {
        if let Err(e) = warm.subscribe().await {
            tracing::warn!(error = %e, "cart updates not followed yet (the first listener retries)");
        }
    });
    bus
}

async fn confirm_codec(args: &Args) -> anyhow::Result<RequestStateCodec> {
    if args.memory {
        let key = RingKey {
            id: "local".into(),
            primary: true,
            created_ms: 0,
            secret: rand::random::<[u8; 32]>().to_vec(),
        };
        return Ok(RequestStateCodec::with_keys(&[key], Mode::Signed)?);
    }
    let client = cluster_client(args)?;
    match client.keyring_rotate(true).await {
        Ok(id) => tracing::info!(key = %id, "created the namespace's key ring"),
        Err(Error::AlreadyExists(_)) => {}
        Err(e) => return Err(e.into()),
    }
    Ok(RequestStateCodec::from_cluster(&client, Mode::Signed)
        .await?
        .with_refresh_interval(args.keyring_refresh))
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {},
                _ = term.recv() => {},
            }
        }
        _ => std::future::pending().await,
    }
}
