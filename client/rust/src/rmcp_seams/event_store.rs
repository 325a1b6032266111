//! rmcp's `EventStore` on the cluster: every SSE event a replica sends is
//! committed before its id goes out, so a client that reconnects with
//! `Last-Event-ID` to any replica gets what it missed.
//!
//! Layout, in the client's namespace under a prefix (`mcp/events`):
//! - `streams/<digest of the stream id>`: the stream's head, `{token, seq}`:
//!   a random 128-bit token drawn when the stream's first event is stored,
//!   and the last sequence number.
//! - `events/<token>/<bucket>/<seq>`: one event (the JSON-RPC message and
//!   the retry hint), in sequence order.
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
use rmcp::transport::streamable_http_server::session::store::{EventId, EventStore, EventStoreError, EventStream};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cluster::Client;
use crate::cluster_state::ClusterStateTool;
use crate::error::{Error, Result};
use crate::state_tool::{DeleteOptions, ListOptions, StateTool, StateValue, StoreItem};
use crate::ttl::Ttl;

/// The key prefix events live under, in the client's namespace.
pub const EVENTS_PREFIX: &str = "mcp/events";
/// Events expire after this long.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);
/// Events kept per stream.
pub const DEFAULT_MAX_EVENTS: u64 = 1000;
/// Events per bucket: the unit older events are deleted in.
const BUCKET: u64 = 100;
/// Heads remembered per replica before the memory is cleared.
const HEADS_CAP: usize = 10_000;
/// Compare-and-set rounds before an append gives up.
const APPEND_ATTEMPTS: usize = 16;
/// Events read per page of a replay.
const REPLAY_PAGE: u32 = 100;

/// Events shared by every replica; cheap to clone.
#[derive(Clone)]
pub struct ClusterEventStore {
    state: ClusterStateTool,
    prefix: String,
    ttl: Duration,
    max_events: u64,
    heads: Arc<Mutex<HashMap<String, Head>>>,
}

/// A stream's head as this replica last wrote or read it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Head {
    token: String,
    seq: u64,
    /// The head key's revision; `None` before the stream exists.
    #[serde(skip)]
    revision: Option<u64>,
}

/// One stored event.
#[derive(Serialize, Deserialize)]
struct Stored {
    message: Option<ServerJsonRpcMessage>,
    retry_ms: Option<u64>,
}

impl ClusterEventStore {
    /// Events under [`EVENTS_PREFIX`] in `client`'s namespace.
    pub fn new(client: &Client) -> Self {
        Self {
            state: client.state_tool(),
            prefix: EVENTS_PREFIX.to_string(),
            ttl: DEFAULT_EVENT_TTL,
            max_events: DEFAULT_MAX_EVENTS,
            heads: Arc::default(),
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
        self.prefix = prefix.into();
        self
    }

    fn head_key(&self, stream_id: &str) -> String {
        let digest = Sha256::digest(stream_id.as_bytes());
        let name = data_encoding::BASE32_NOPAD.encode(&digest[..16]);
        format!("{}/streams/{name}", self.prefix)
    }

    fn stream_prefix(&self, token: &str) -> String {
        format!("{}/events/{token}/", self.prefix)
    }

    fn event_key(&self, token: &str, seq: u64) -> String {
        format!("{}{:012}/{seq:020}", self.stream_prefix(token), seq / BUCKET)
    }

    fn bucket_prefix(&self, token: &str, bucket: u64) -> String {
        format!("{}{bucket:012}/", self.stream_prefix(token))
    }

    /// Appends `event` to `stream_id`: the event's id.
    async fn append(&self, stream_id: &str, event: &ServerSseMessage) -> Result<String> {
        let stored = Stored {
            message: event.message.as_deref().cloned(),
            retry_ms: event.retry.map(|d| d.as_millis() as u64),
        };
        let value = serde_json::to_value(&stored).map_err(|e| Error::Codec(e.to_string()))?;
        let mut head = self.cached_head(stream_id);
        for _ in 0..APPEND_ATTEMPTS {
            let next = Head {
                token: head.token.clone(),
                seq: head.seq + 1,
                revision: None,
            };
            match self.try_append(stream_id, &head, &next, &value).await {
                Ok(revision) => {
                    self.advanced(stream_id, &next, revision).await;
                    return Ok(format!("{}.{}", next.token, next.seq));
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
    /// the stream is new), and the event is written at `next.seq`.
    async fn try_append(&self, stream_id: &str, head: &Head, next: &Head, value: &serde_json::Value) -> Result<u64> {
        let ttl = Ttl::After(self.ttl);
        let head_value = json!({ "token": next.token, "seq": next.seq });
        let head_item = StoreItem {
            key: self.head_key(stream_id),
            value: StateValue::Json(head_value),
            ttl,
            expected_revision: Some(head.revision.unwrap_or(0)),
        };
        let event_item = StoreItem {
            key: self.event_key(&next.token, next.seq),
            value: StateValue::Json(value.clone()),
            ttl,
            expected_revision: None,
        };
        self.state.batch_store(vec![head_item, event_item]).await
    }

    /// Records the new head and, when a bucket fills, deletes the bucket
    /// that fell out of the window (best effort: the TTL removes it anyway).
    async fn advanced(&self, stream_id: &str, next: &Head, revision: u64) {
        let head = Head {
            revision: Some(revision),
            ..next.clone()
        };
        if let Ok(mut heads) = self.heads.lock() {
            if heads.len() >= HEADS_CAP {
                heads.clear();
            }
            heads.insert(stream_id.to_string(), head);
        }
        let buckets = self.max_events.div_ceil(BUCKET);
        if next.seq.is_multiple_of(BUCKET) && next.seq / BUCKET > buckets {
            let old = next.seq / BUCKET - buckets - 1;
            let prefix = self.bucket_prefix(&next.token, old);
            if let Err(e) = self.state.delete(&prefix, DeleteOptions::prefix(BUCKET as u32)).await {
                tracing::debug!(error = %e, "old events not deleted yet");
            }
        }
    }

    /// The head this replica last saw, or a new stream's.
    fn cached_head(&self, stream_id: &str) -> Head {
        let cached = self.heads.lock().ok().and_then(|h| h.get(stream_id).cloned());
        cached.unwrap_or_else(new_head)
    }

    async fn read_head(&self, stream_id: &str) -> Result<Head> {
        let Some(entry) = self.state.retrieve(&self.head_key(stream_id)).await? else {
            return Ok(new_head());
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

    /// The events of `last_event_id`'s stream after it, in order.
    async fn after(&self, last_event_id: &str) -> Result<Vec<ServerSseMessage>> {
        let (token, seq) = parse_event_id(last_event_id)?;
        let prefix = self.stream_prefix(token);
        let mut page_token = Some(crate::key::page_token(&self.event_key(token, seq)));
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
            page_token = page.next_page_token;
        }
        Ok(events)
    }
}

fn new_head() -> Head {
    let bytes: [u8; 16] = rand::random();
    Head {
        token: data_encoding::BASE32_NOPAD.encode(&bytes),
        seq: 0,
        revision: None,
    }
}

/// `<token>.<seq>`, as [`ClusterEventStore`] mints them.
fn parse_event_id(id: &str) -> Result<(&str, u64)> {
    let malformed = || {
        Error::InvalidArgument(format!(
            "malformed event id {:?}",
            id.chars().take(80).collect::<String>()
        ))
    };
    let (token, seq) = id.split_once('.').ok_or_else(malformed)?;
    let token_ok = token.len() == 26
        && token
            .bytes()
            .all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(&b));
    // Digits only, without leading zeros: one id per event ("+7" and "07"
    // would parse as 7 too).
    let canonical = seq.bytes().all(|b| b.is_ascii_digit()) && (seq == "0" || !seq.starts_with('0'));
    let seq = seq.parse::<u64>().ok().filter(|_| canonical).ok_or_else(malformed)?;
    if !token_ok {
        return Err(malformed());
    }
    Ok((token, seq))
}

/// A stored event as rmcp sends it (skipped if unreadable).
fn decode_event(token: &str, key: &str, value: Option<StateValue>) -> Option<ServerSseMessage> {
    let seq: u64 = key.rsplit('/').next()?.parse().ok()?;
    let Some(StateValue::Json(v)) = value else { return None };
    let stored: Stored = serde_json::from_value(v).ok()?;
    // The type is non-exhaustive: fill a default one.
    let mut event = ServerSseMessage::default();
    event.event_id = Some(format!("{token}.{seq}"));
    event.message = stored.message.map(Arc::new);
    event.retry = stored.retry_ms.map(Duration::from_millis);
    Some(event)
}

#[async_trait::async_trait]
impl EventStore for ClusterEventStore {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> std::result::Result<EventId, EventStoreError> {
        Ok(self.append(stream_id, event).await?)
    }

    async fn replay_events_after(&self, last_event_id: &str) -> std::result::Result<EventStream, EventStoreError> {
        let events = self.after(last_event_id).await?;
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_parse_back_and_garbage_is_refused() {
        let head = new_head();
        let id = format!("{}.{}", head.token, 42);
        assert_eq!(parse_event_id(&id).expect("parses"), (head.token.as_str(), 42));
        for bad in [
            "",
            "x",
            "ABC.1",
            &format!("{}.", head.token),
            &format!("{}.-1", head.token),
            &format!("{}.+1", head.token),
            &format!("{}.01", head.token),
            &format!("{}.18446744073709551616", head.token),
            "a.b.c",
        ] {
            assert!(parse_event_id(bad).is_err(), "{bad:?}");
        }
        let lower = format!("{}.1", head.token.to_lowercase());
        assert!(parse_event_id(&lower).is_err());
    }

    #[test]
    fn event_keys_sort_in_sequence_order_and_are_valid() {
        let store = ClusterEventStore::new(&Client::builder(["http://127.0.0.1:1"]).build().expect("client"));
        let token = new_head().token;
        let keys: Vec<String> = [1, 9, 99, 100, 101, 1000, 12345]
            .iter()
            .map(|&s| store.event_key(&token, s))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        for k in &keys {
            assert!(crate::key::validate_key(k, crate::key::MAX_KEY_LEN).is_ok(), "{k}");
        }
        assert!(
            store
                .event_key(&token, 250)
                .starts_with(&store.bucket_prefix(&token, 2))
        );
    }
}

/// A `Last-Event-ID` is whatever a client sends: never a panic, and only
/// ids this store mints are taken, each as the one event it names.
#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use super::parse_event_id;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_string_is_refused_or_names_exactly_itself(id in "\\PC{0,64}|[A-Z2-7]{26}\\.[-+0-9]{0,22}") {
            if let Ok((token, seq)) = parse_event_id(&id) {
                prop_assert_eq!(format!("{token}.{seq}"), id);
            }
        }

        #[test]
        fn every_minted_id_parses_back(seq in any::<u64>()) {
            let token = super::new_head().token;
            let id = format!("{token}.{seq}");
            prop_assert_eq!(parse_event_id(&id).ok(), Some((token.as_str(), seq)));
        }
    }
}
