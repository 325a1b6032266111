//! The event store on the cluster (rmcp's trait on it is in `seam`):
//! every SSE event a replica sends is committed before its id goes out,
//! and a client that reconnects with `Last-Event-ID` to any replica gets
//! what it missed, then the stream live until it completes (`follow`).
//!
//! Layout, in the client's namespace under a prefix (`mcp/events`; the
//! contract is `proto/vectors/mcp_events.json`):
//! - `streams/<digest of the stream id>`: the stream's head, `{token,
//!   seq}`: a random 128-bit token drawn when the stream's first event is
//!   stored, and the last sequence number.
//! - `tokens/<token>`: the stream id, so a follower finds the head.
//! - `events/<token>/<bucket>/<seq>`: one event (the JSON-RPC message and
//!   the retry hint), in sequence order.
//! - `live/<token>`: the origin's liveness record, `{"requests": [ids]}`
//!   (`origin`).
//! - `requests/<token>`: the same ids, kept as long as the events, for a
//!   follower that starts after the liveness record is gone.
//!
//! Whether a stream is complete is never stored: a follower applies the
//! completion rule (`completion`) to the stored events.
//!
//! An event id is `<token>.<seq>`: unguessable (the token), unique across
//! replicas (one atomic batch moves the head by compare-and-set and writes
//! the event), and it names its stream, so a replay is one range read.
//! Every key expires after the TTL; a stream keeps at most its last
//! `max_events` (whole buckets of older events are deleted as it grows).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::common::server_side_http::ServerSseMessage;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::contract::{self, BUCKET, EVENTS_PREFIX, LIVE_ENDED_TTL, LIVE_REFRESH, LIVE_TTL, Layout, event_id};
use super::origin::{Binding, LiveItem, Origin};
use crate::cluster::Client;
use crate::cluster_state::ClusterStateTool;
use crate::error::{Error, Result};
use crate::state_tool::{DeleteOptions, ListOptions, StateTool, StateValue, StoreItem, StoreOptions};
use crate::ttl::Ttl;

/// Events expire after this long.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);
/// Events kept per stream.
pub const DEFAULT_MAX_EVENTS: u64 = 1000;
/// Streams remembered per replica before the memory is cleared (streams
/// kept alive stay).
const STREAMS_CAP: usize = 10_000;
/// Compare-and-set rounds before an append gives up.
const APPEND_ATTEMPTS: usize = 16;
/// Events read per page of a replay.
const REPLAY_PAGE: u32 = 100;

/// Events shared by every replica; cheap to clone.
#[derive(Clone)]
pub struct ClusterEventStore {
    pub(super) client: Client,
    pub(super) state: ClusterStateTool,
    pub(super) layout: Layout,
    ttl: Duration,
    max_events: u64,
    memory: Arc<Mutex<Memory>>,
}

/// What this replica knows of the streams it appends to.
#[derive(Default)]
struct Memory {
    /// By stream id: the head as last written or read.
    heads: HashMap<String, Head>,
    /// By token: the streams this replica is the origin of.
    origins: HashMap<String, Arc<Origin>>,
}

/// A stream's head.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(super) struct Head {
    pub token: String,
    pub seq: u64,
    /// The head key's revision; `None` before the stream exists.
    #[serde(skip)]
    pub revision: Option<u64>,
}

impl Head {
    /// A new stream's, with a fresh token.
    fn new() -> Self {
        Self {
            token: contract::new_token(),
            seq: 0,
            revision: None,
        }
    }
}

/// One stored event.
#[derive(Serialize, Deserialize)]
struct Stored {
    message: Option<ServerJsonRpcMessage>,
    retry_ms: Option<u64>,
}

/// An event as read back: its sequence number, its message as JSON (for
/// the completion rule) and as rmcp sends it.
pub(super) struct Replayed {
    pub seq: u64,
    pub message: Option<Value>,
    pub sse: ServerSseMessage,
}

impl ClusterEventStore {
    /// Events under [`EVENTS_PREFIX`] in `client`'s namespace.
    pub fn new(client: &Client) -> Self {
        Self {
            client: client.clone(),
            state: client.state_tool(),
            layout: Layout {
                prefix: EVENTS_PREFIX.to_string(),
            },
            ttl: DEFAULT_EVENT_TTL,
            max_events: DEFAULT_MAX_EVENTS,
            memory: Arc::default(),
        }
    }

    /// How long events are kept (at least a second).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// How many of a stream's latest events are kept (at least one
    /// bucket, 100).
    pub fn with_max_events(mut self, n: u64) -> Self {
        self.max_events = n.max(BUCKET);
        self
    }

    /// Another key prefix (several servers in one namespace).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.layout.prefix = prefix.into();
        self
    }

    /// Appends `event` to `stream_id`: the event's id. `binding` is what
    /// the adapter knows of the stream (its requests, its guard).
    pub(super) async fn append(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
        binding: Option<&Binding>,
    ) -> Result<String> {
        let message = event.message.as_deref().map(to_json).transpose()?;
        let stored = json!({ "message": message, "retry_ms": event.retry.map(|d| d.as_millis() as u64) });
        let mut head = self.cached_head(stream_id);
        for _ in 0..APPEND_ATTEMPTS {
            let origin = self.origin(&head, binding);
            let mut state = origin.state.lock().await;
            if let Some(b) = binding {
                state.bind(b);
            }
            let item = state.live_item(message.as_ref());
            let next = Head {
                token: head.token.clone(),
                seq: head.seq + 1,
                revision: None,
            };
            let record = state.record();
            match self.try_append(stream_id, &head, &next, &stored, (item, record)).await {
                Ok(revision) => {
                    state.stored(message.as_ref(), item, revision);
                    let (done, refresher) = (state.done, state.wants_refresher());
                    state.refreshing |= refresher;
                    drop(state);
                    self.advanced(stream_id, &next, revision).await;
                    if done {
                        self.forget(&origin);
                    } else if refresher {
                        tokio::spawn(self.clone().refresh(origin));
                    }
                    return Ok(event_id(&next.token, next.seq));
                }
                Err(Error::Conflict { .. } | Error::NotFound(_)) => head = self.read_head(stream_id).await?,
                Err(e) => return Err(e),
            }
        }
        Err(Error::unavailable(format!(
            "event stream {stream_id}: {APPEND_ATTEMPTS} appends lost to other writers"
        )))
    }

    /// One atomic batch: the head moves from `head` to `next` (created if
    /// the stream is new), the event is written at `next.seq` with the
    /// stream's token record, and the liveness record as `live` says (with
    /// `requests/<token>` when it is first written).
    async fn try_append(
        &self,
        stream_id: &str,
        head: &Head,
        next: &Head,
        event: &Value,
        live: (LiveItem, Value),
    ) -> Result<u64> {
        let ttl = Ttl::After(self.ttl);
        let mut items = vec![
            self.head_item(stream_id, head, next),
            StoreItem {
                key: self.layout.event_key(&next.token, next.seq),
                value: StateValue::Json(event.clone()),
                ttl,
                expected_revision: None,
            },
            self.token_item(stream_id, &next.token),
        ];
        let (item, record) = live;
        match item {
            LiveItem::Untouched => {}
            LiveItem::Write => {
                items.push(self.requests_item(&next.token, record.clone()));
                items.push(self.live_item(&next.token, record, LIVE_TTL, None));
            }
            LiveItem::Gone => items.push(self.live_item(&next.token, record, LIVE_ENDED_TTL, None)),
        }
        self.state.batch_store(items).await
    }

    /// The head moving from `head` to `next`, by compare-and-set.
    pub(super) fn head_item(&self, stream_id: &str, head: &Head, next: &Head) -> StoreItem {
        let value = json!({ "token": next.token, "seq": next.seq });
        StoreItem {
            key: self.layout.head_key(stream_id),
            value: StateValue::Json(value),
            ttl: Ttl::After(self.ttl),
            expected_revision: Some(head.revision.unwrap_or(0)),
        }
    }

    /// `tokens/<token>`: the stream id, written with every event so it
    /// lives as long as the stream's latest one.
    pub(super) fn token_item(&self, stream_id: &str, token: &str) -> StoreItem {
        StoreItem {
            key: self.layout.token_key(token),
            value: StateValue::Json(Value::String(stream_id.to_string())),
            ttl: Ttl::After(self.ttl),
            expected_revision: None,
        }
    }

    /// `live/<token>` = `record` for `ttl`, by compare-and-set on
    /// `expected` when given.
    fn live_item(&self, token: &str, record: Value, ttl: Duration, expected: Option<u64>) -> StoreItem {
        StoreItem {
            key: self.layout.live_key(token),
            value: StateValue::Json(record),
            ttl: Ttl::After(ttl),
            expected_revision: expected,
        }
    }

    /// `requests/<token>` = `record`, expiring with the stream.
    fn requests_item(&self, token: &str, record: Value) -> StoreItem {
        StoreItem {
            key: self.layout.requests_key(token),
            value: StateValue::Json(record),
            ttl: Ttl::After(self.ttl),
            expected_revision: None,
        }
    }

    /// An event's item, expiring with the stream.
    pub(super) fn event_item(&self, token: &str, seq: u64, message: &Value) -> StoreItem {
        StoreItem {
            key: self.layout.event_key(token, seq),
            value: StateValue::Json(json!({ "message": message, "retry_ms": null })),
            ttl: Ttl::After(self.ttl),
            expected_revision: None,
        }
    }

    /// The origin state of the stream `head` names: this replica's, or a
    /// new one.
    fn origin(&self, head: &Head, binding: Option<&Binding>) -> Arc<Origin> {
        let Ok(mut memory) = self.memory.lock() else {
            return Arc::new(Origin::new(&head.token, binding));
        };
        if let Some(origin) = memory.origins.get(&head.token) {
            return origin.clone();
        }
        if memory.origins.len() >= STREAMS_CAP {
            // Streams kept alive are held by their refresher too.
            memory.origins.retain(|_, o| Arc::strong_count(o) > 1);
        }
        let origin = Arc::new(Origin::new(&head.token, binding));
        memory.origins.insert(head.token.clone(), origin.clone());
        origin
    }

    /// Forgets a stream this replica no longer keeps alive.
    pub(super) fn forget(&self, origin: &Arc<Origin>) {
        if let Ok(mut memory) = self.memory.lock()
            && memory
                .origins
                .get(&origin.token)
                .is_some_and(|o| Arc::ptr_eq(o, origin))
        {
            memory.origins.remove(&origin.token);
        }
    }

    /// Records the new head and, when a bucket fills, deletes the bucket
    /// that fell out of the window (best effort: the TTL removes it anyway).
    async fn advanced(&self, stream_id: &str, next: &Head, revision: u64) {
        let head = Head {
            revision: Some(revision),
            ..next.clone()
        };
        if let Ok(mut memory) = self.memory.lock() {
            if memory.heads.len() >= STREAMS_CAP {
                memory.heads.clear();
            }
            memory.heads.insert(stream_id.to_string(), head);
        }
        let buckets = self.max_events.div_ceil(BUCKET);
        if next.seq.is_multiple_of(BUCKET) && next.seq / BUCKET > buckets {
            let old = next.seq / BUCKET - buckets - 1;
            let prefix = self.layout.bucket_prefix(&next.token, old);
            if let Err(e) = self.state.delete(&prefix, DeleteOptions::prefix(BUCKET as u32)).await {
                tracing::debug!(error = %e, "old events not deleted yet");
            }
        }
    }

    /// The head this replica last saw, or a new stream's.
    fn cached_head(&self, stream_id: &str) -> Head {
        let cached = self.memory.lock().ok().and_then(|m| m.heads.get(stream_id).cloned());
        cached.unwrap_or_else(Head::new)
    }

    /// The stream's head as stored (a new stream's if it has none).
    pub(super) async fn read_head(&self, stream_id: &str) -> Result<Head> {
        let Some(entry) = self.state.retrieve(&self.layout.head_key(stream_id)).await? else {
            return Ok(Head::new());
        };
        let head = match entry.value {
            Some(StateValue::Json(v)) => serde_json::from_value::<Head>(v).ok(),
            _ => None,
        };
        let head = head.ok_or_else(|| Error::Codec(format!("event stream {stream_id}: unreadable head")))?;
        Ok(Head {
            revision: Some(entry.mod_revision),
            ..head
        })
    }

    /// The events of the stream `token` names after `seq`, in order.
    pub(super) async fn events_after(&self, token: &str, seq: u64) -> Result<Vec<Replayed>> {
        self.events_between(token, seq, contract::MAX_SEQ).await
    }

    /// The events of the stream `token` names after `after` and up to
    /// `upto`, in order.
    pub(super) async fn events_between(&self, token: &str, after: u64, upto: u64) -> Result<Vec<Replayed>> {
        let prefix = self.layout.stream_prefix(token);
        let mut page_token = Some(crate::key::page_token(&self.layout.event_key(token, after)));
        let mut events = Vec::new();
        while let Some(from) = page_token {
            let opts = ListOptions {
                limit: REPLAY_PAGE,
                page_token: Some(from),
                with_values: true,
            };
            let page = self.state.list(&prefix, opts).await?;
            for entry in page.entries {
                events.extend(decode_event(token, &entry.key, entry.value));
            }
            if events.last().is_some_and(|e| e.seq >= upto) {
                events.retain(|e| e.seq <= upto);
                break;
            }
            page_token = page.next_page_token;
        }
        Ok(events)
    }

    /// Writes `live/<token>` again (a refresh), by compare-and-set on
    /// `revision`: its new revision.
    pub(super) async fn write_live(&self, token: &str, record: Value, revision: u64) -> Result<u64> {
        let opts = StoreOptions {
            ttl: Ttl::After(LIVE_TTL),
            expected_revision: Some(revision),
        };
        self.state
            .store(&self.layout.live_key(token), record.into(), opts)
            .await
    }

    /// Deletes `live/<token>` as written at `revision`: the stream gets no
    /// more events from here.
    pub(super) async fn release(&self, token: &str, revision: u64) {
        let opts = DeleteOptions {
            expected_revision: Some(revision),
            ..DeleteOptions::default()
        };
        if let Err(e) = self.state.delete(&self.layout.live_key(token), opts).await {
            tracing::debug!(error = %e, "stream liveness not deleted; it expires");
        }
    }

    /// Session mode: the adapter learned which requests the stream `token`
    /// answers after its first event was stored (rmcp's session worker
    /// stores the priming event), before the request runs. One batch
    /// writes them to the liveness record (by compare-and-set on the first
    /// event's batch) and to `requests/<token>`; the record is kept alive
    /// from now on while `binding`'s guard is.
    pub(super) async fn track(&self, token: &str, binding: &Binding) {
        let origin = self.memory.lock().ok().and_then(|m| m.origins.get(token).cloned());
        let Some(origin) = origin else {
            tracing::debug!("a stream tracked after this replica forgot it");
            return;
        };
        let mut state = origin.state.lock().await;
        if state.done {
            return;
        }
        state.bind(binding);
        let Some(revision) = state.live_revision else {
            tracing::debug!("a stream tracked without its liveness record");
            return;
        };
        let items = vec![
            self.live_item(token, state.record(), LIVE_TTL, Some(revision)),
            self.requests_item(token, state.record()),
        ];
        match self.state.batch_store(items).await {
            Ok(revision) => state.live_revision = Some(revision),
            Err(Error::Conflict { .. } | Error::NotFound(_)) => state.live_revision = None,
            Err(e) => tracing::warn!(error = %e, "the requests of a stream not recorded"),
        }
        let refresher = state.wants_refresher();
        state.refreshing |= refresher;
        drop(state);
        if refresher {
            tokio::spawn(self.clone().refresh(origin));
        }
    }

    /// Keeps `origin`'s record alive while its guard is held and the stream is
    /// not complete; when the guard goes first, deletes the record, so a
    /// follower answers for the stream at once instead of after [`LIVE_TTL`].
    async fn refresh(self, origin: Arc<Origin>) {
        loop {
            tokio::time::sleep(LIVE_REFRESH).await;
            let mut state = origin.state.lock().await;
            let Some(revision) = state.live_revision.filter(|_| !state.done) else {
                break;
            };
            if !state.alive() {
                state.done = true;
                state.live_revision = None;
                self.release(&origin.token, revision).await;
                break;
            }
            match self.write_live(&origin.token, state.record(), revision).await {
                Ok(revision) => state.live_revision = Some(revision),
                // Ended or expired: it stays so, and a follower answers for it.
                Err(Error::Conflict { .. } | Error::NotFound(_)) => {
                    state.live_revision = None;
                    break;
                }
                Err(e) => tracing::warn!(error = %e, "stream liveness not refreshed"),
            }
        }
        self.forget(&origin);
    }
}

fn to_json(message: &ServerJsonRpcMessage) -> Result<Value> {
    serde_json::to_value(message).map_err(|e| Error::Codec(e.to_string()))
}

/// A stored event as rmcp sends it (skipped if unreadable).
fn decode_event(token: &str, key: &str, value: Option<StateValue>) -> Option<Replayed> {
    let seq: u64 = key.rsplit('/').next()?.parse().ok()?;
    let Some(StateValue::Json(v)) = value else { return None };
    let message = v.get("message").filter(|m| !m.is_null()).cloned();
    let stored: Stored = serde_json::from_value(v).ok()?;
    // The type is non-exhaustive: fill a default one.
    let mut sse = ServerSseMessage::default();
    sse.event_id = Some(event_id(token, seq));
    sse.message = stored.message.map(Arc::new);
    sse.retry = stored.retry_ms.map(Duration::from_millis);
    Some(Replayed { seq, message, sse })
}
