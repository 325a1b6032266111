//! [`Resumable`]: rmcp's session manager (`NeverSessionManager` for a
//! stateless server, `LocalSessionManager` for legacy sessions) with the
//! cluster's event store wired in so that every stream keeps its origin's
//! liveness record naming the requests it answers: what a replica that
//! resumes the stream needs to follow it and, if its origin dies, to answer
//! for it (docs/dev/resume.md).
//!
//! rmcp tells an event store only a stream id and an event. The manager
//! learns the rest where rmcp lets it:
//! - stateless: rmcp asks the manager for the event store in the request's
//!   task; with [`super::RecordRequests`] around the service, the manager
//!   hands out a store bound to the POST's request ids, which the task that
//!   stores the stream's events holds until the stream ends;
//! - sessions: the manager opens the request's stream itself (the session
//!   worker stores its priming event, whose id names the stream), records
//!   the request's id on it, and only then hands the request to the
//!   session. The stream is kept alive while the session lives here.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::session::store::{EventId, EventStore, EventStoreError, EventStream};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, SessionManager};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;

use super::contract::parse_event_id;
use super::event_store::ClusterEventStore;
use super::follow::Received;
use super::origin::Binding;
use super::requests::{self, RecordRequests, Recorded};

/// A session manager whose streams keep their liveness record; see the
/// module. Build it with [`Resumable::new`], or the whole service with
/// [`ClusterEventStore::streamable_http_service`].
pub struct Resumable<M> {
    inner: M,
    events: ClusterEventStore,
    /// One guard per session served here: its streams are kept alive while
    /// it is held.
    sessions: Mutex<HashMap<SessionId, Arc<()>>>,
}

impl<M: Manager> Resumable<M> {
    /// `inner` with `events` as its event store.
    pub fn new(events: ClusterEventStore, inner: M) -> Self {
        Self {
            inner: inner.with_store(Arc::new(events.clone())),
            events,
            sessions: Mutex::default(),
        }
    }

    fn session_guard(&self, id: &SessionId) -> Weak<()> {
        match self.sessions.lock() {
            Ok(mut sessions) => Arc::downgrade(sessions.entry(id.clone()).or_default()),
            Err(_) => Weak::new(),
        }
    }
}

impl ClusterEventStore {
    /// rmcp's Streamable HTTP service with this store wired in: the
    /// session manager (a `NeverSessionManager` for a stateless server, a
    /// `LocalSessionManager` for legacy sessions) wrapped in [`Resumable`],
    /// and the service in [`RecordRequests`]. Serve the result at `/mcp`.
    pub fn streamable_http_service<S, M>(
        &self,
        factory: impl Fn() -> Result<S, std::io::Error> + Send + Sync + 'static,
        manager: M,
        config: StreamableHttpServerConfig,
    ) -> Recorded<StreamableHttpService<S, Resumable<M>>>
    where
        S: rmcp::ServerHandler + Send + 'static,
        M: Manager,
    {
        let limit = config.max_request_body_bytes;
        let manager = Arc::new(Resumable::new(self.clone(), manager));
        tower::Layer::layer(
            &RecordRequests::new(limit),
            StreamableHttpService::new(factory, manager, config),
        )
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NeverSessionManager {}
    impl Sealed for super::LocalSessionManager {}
}

/// The rmcp session managers [`Resumable`] wraps: `NeverSessionManager`
/// and `LocalSessionManager`.
pub trait Manager: SessionManager + sealed::Sealed {
    #[doc(hidden)]
    fn with_store(self, store: Arc<dyn EventStore>) -> Self;

    /// A request's stream, its requests recorded before the request runs.
    #[doc(hidden)]
    fn tracked_stream(
        &self,
        events: &ClusterEventStore,
        alive: Weak<()>,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<EventStream, Self::Error>> + Send;
}

impl Manager for NeverSessionManager {
    fn with_store(self, store: Arc<dyn EventStore>) -> Self {
        self.with_event_store(store)
    }

    async fn tracked_stream(
        &self,
        _events: &ClusterEventStore,
        _alive: Weak<()>,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<EventStream, Self::Error> {
        let stream = self.create_stream(id, message).await?;
        Ok(Box::pin(stream))
    }
}

impl Manager for LocalSessionManager {
    fn with_store(self, store: Arc<dyn EventStore>) -> Self {
        self.with_event_store(store)
    }

    /// As `LocalSessionManager::create_stream`, with the stream's token
    /// read off its priming event (stored and queued once the channel is
    /// established) and the request recorded on it before the session
    /// gets the request. Without a priming event (`sse_retry: None`) the
    /// stream is not tracked: its liveness record lapses.
    async fn tracked_stream(
        &self,
        events: &ClusterEventStore,
        alive: Weak<()>,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<EventStream, Self::Error> {
        let handle = self.sessions.read().await.get(id).cloned();
        let handle = handle.ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        let mut receiver = handle.establish_request_wise_channel().await?;
        let priming = receiver.inner.try_recv().ok();
        let token = priming.as_ref().and_then(|e| e.event_id.as_deref());
        match token.and_then(|t| parse_event_id(t).ok()) {
            Some((token, _)) => {
                let requests = request_ids(&message);
                events.track(token, &Binding { requests, alive }).await;
            }
            None => tracing::debug!("a session stream without a priming event is not tracked"),
        }
        handle.push_message(message, receiver.http_request_id).await?;
        Ok(Box::pin(futures::stream::iter(priming).chain(Received(receiver.inner))))
    }
}

/// The id of a request, as sent (none for other messages).
fn request_ids(message: &ClientJsonRpcMessage) -> Vec<Value> {
    match message {
        ClientJsonRpcMessage::Request(r) => serde_json::to_value(&r.id).into_iter().collect(),
        _ => Vec::new(),
    }
}

impl<M: Manager> SessionManager for Resumable<M> {
    type Error = M::Error;
    type Transport = M::Transport;

    fn create_session(&self) -> impl Future<Output = Result<(SessionId, Self::Transport), Self::Error>> + Send {
        self.inner.create_session()
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    /// Its streams get no more events from here: their records lapse (or
    /// are deleted at the next refresh).
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(id);
        }
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let alive = self.session_guard(id);
        self.inner.tracked_stream(&self.events, alive, id, message).await
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    /// Inside a POST that [`RecordRequests`] read: a store bound to its
    /// requests, held by the task that stores the stream's events (so the
    /// stream is kept alive until that task ends).
    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        let store: Arc<dyn EventStore> = match requests::current() {
            Some(requests) => Arc::new(Bound {
                store: self.events.clone(),
                requests,
                alive: Arc::new(()),
            }),
            None => Arc::new(self.events.clone()),
        };
        Some(store)
    }
}

/// The event store of one stateless request.
struct Bound {
    store: ClusterEventStore,
    requests: Vec<Value>,
    alive: Arc<()>,
}

#[async_trait::async_trait]
impl EventStore for Bound {
    async fn store_event(&self, stream_id: &str, event: &ServerSseMessage) -> Result<EventId, EventStoreError> {
        let binding = Binding {
            requests: self.requests.clone(),
            alive: Arc::downgrade(&self.alive),
        };
        Ok(self.store.append(stream_id, event, Some(&binding)).await?)
    }

    async fn replay_events_after(&self, last_event_id: &str) -> Result<EventStream, EventStoreError> {
        self.store.replay_events_after(last_event_id).await
    }
}
