//! The rmcp (official Rust MCP SDK) seams on the cluster, behind the cargo
//! feature `rmcp`: what a multi-replica Streamable HTTP server needs so
//! that any replica can serve any request.
//!
//! - [`ClusterSessionStore`]: rmcp's `SessionStore`. Legacy
//!   `Mcp-Session-Id` sessions restored on any replica, with a sliding TTL.
//! - [`BindSessions`]: a tower layer that binds each session to the
//!   principal that created it, so another user's session id restores
//!   nothing and is refused on every replica.
//! - [`ClusterEventStore`]: rmcp's `EventStore`. SSE events committed
//!   before their ids go out; a resumption on any replica replays what is
//!   stored after `Last-Event-ID`, then follows the stream live until it
//!   is answered, and answers for it (`origin_lost`) if the replica that
//!   ran it died.
//! - [`Resumable`] and [`RecordRequests`]: the session manager wrapper and
//!   the layer that tell the event store which requests a stream answers
//!   and how long its replica keeps it alive
//!   ([`ClusterEventStore::streamable_http_service`] wires both).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # fn demo<S: rmcp::ServerHandler + Send + 'static>(
//! #     client: handlestore_client::Client,
//! #     factory: impl Fn() -> std::io::Result<S> + Send + Sync + 'static,
//! # ) {
//! use handlestore_client::rmcp_seams::{BindSessions, ClusterEventStore, ClusterSessionStore};
//! use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, session::local::LocalSessionManager};
//!
//! let sessions = ClusterSessionStore::new(&client);
//! let mut config = StreamableHttpServerConfig::default();
//! config.session_store = Some(Arc::new(sessions.clone()));
//! let events = ClusterEventStore::new(&client);
//! let service = events.streamable_http_service(factory, LocalSessionManager::default(), config);
//! // Who the caller is: your server's authentication decides.
//! let bind = BindSessions::new(sessions, |parts| {
//!     parts.headers.get("x-user").and_then(|v| v.to_str().ok()).map(String::from)
//! });
//! let mcp = tower::Layer::layer(&bind, service); // serve it at /mcp
//! # let _ = mcp;
//! # }
//! ```

mod binding;
mod completion;
pub mod contract;
mod event_store;
mod follow;
mod manager;
mod origin;
pub mod principal;
mod requests;
mod seam;
mod session_store;

pub use binding::{BindSessions, Bound, PrincipalFn};
pub use contract::EVENTS_PREFIX;
pub use event_store::{ClusterEventStore, DEFAULT_EVENT_TTL, DEFAULT_MAX_EVENTS};
pub use manager::{Manager, Resumable};
pub use requests::{RecordRequests, Recorded};
pub use session_store::{ClusterSessionStore, DEFAULT_SESSION_TTL, SESSIONS_PREFIX};
