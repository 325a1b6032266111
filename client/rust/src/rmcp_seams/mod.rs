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
//!   before their ids go out, replayed after `Last-Event-ID` on any replica.
//!
//! ```no_run
//! # async fn demo(client: handlestore_client::Client) {
//! use std::sync::Arc;
//! use handlestore_client::rmcp_seams::{BindSessions, ClusterEventStore, ClusterSessionStore};
//! use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, session::local::LocalSessionManager};
//!
//! let sessions = ClusterSessionStore::new(&client);
//! let mut config = StreamableHttpServerConfig::default();
//! config.session_store = Some(Arc::new(sessions.clone()));
//! let manager = LocalSessionManager::default().with_event_store(Arc::new(ClusterEventStore::new(&client)));
//! // Who the caller is: your server's authentication decides.
//! let bind = BindSessions::new(sessions, |parts| {
//!     parts.headers.get("x-user").and_then(|v| v.to_str().ok()).map(String::from)
//! });
//! # let _ = (config, manager, bind);
//! # }
//! ```

mod binding;
mod event_store;
pub mod principal;
mod session_store;

pub use binding::{BindSessions, Bound, PrincipalFn};
pub use event_store::{ClusterEventStore, DEFAULT_EVENT_TTL, DEFAULT_MAX_EVENTS, EVENTS_PREFIX};
pub use session_store::{ClusterSessionStore, DEFAULT_SESSION_TTL, SESSIONS_PREFIX};
