//! rmcp's `EventStore` trait on [`ClusterEventStore`]: storing is
//! `event_store`'s append, replaying is `follow`'s.

use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::store::{EventId, EventStore, EventStoreError, EventStream};

use super::event_store::ClusterEventStore;

#[async_trait::async_trait]
impl EventStore for ClusterEventStore {
    /// Stores an event of a stream nobody told the store about: its
    /// liveness record is written with its first event and lapses after
    /// `live.ttl_ms` unless the adapter tracks it ([`super::Resumable`]).
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> std::result::Result<EventId, EventStoreError> {
        Ok(self.append(stream_id, event, None).await?)
    }

    /// The events after `last_event_id`, then the stream live until it is
    /// complete, the client goes, or its origin stopped (see `follow`).
    async fn replay_events_after(&self, last_event_id: &str) -> std::result::Result<EventStream, EventStoreError> {
        Ok(super::follow::replay(self.clone(), last_event_id).await?)
    }
}
