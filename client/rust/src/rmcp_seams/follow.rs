//! A resumption served by a replica that may not run the stream: the
//! stored events after `Last-Event-ID`, then, unless the stream is
//! complete, the stream live. The follower watches the stream's events and
//! its origin's liveness record (docs/dev/resume.md) and sends every later
//! event once, in order, until
//! - the stream is complete (its answer went out): the response ends;
//! - the client goes (rmcp drops the stream): the watches close;
//! - the liveness record is gone (deleted or expired): it sends what is
//!   stored and, if the stream is still not complete, the origin stopped
//!   before answering: it appends one `origin_lost` error per request not
//!   yet answered, by compare-and-set on the head at the last event it
//!   sent, and sends them. If the append loses, someone else appended: it
//!   sends what is stored and decides again.
//!
//! The requests come from the liveness record or, once it is gone, from
//! `requests/<token>`. Whether the stream is complete comes from the
//! completion rule applied to its stored events (those before
//! `Last-Event-ID` too), so a resumption after the answer ends at once
//! and is never taken for a dead origin's. A stream whose requests nobody
//! recorded (an adapter that did not say) cannot be answered for: its
//! resumption ends after what is stored, and rmcp's client reconnects and
//! polls.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::store::EventStream;
use serde_json::Value;
use tokio::sync::mpsc;

use super::completion::Pending;
use super::contract::{event_id, origin_lost, parse_event_id};
use super::event_store::{ClusterEventStore, Head, Replayed};
use crate::error::{Error, Result};
use crate::state_tool::{StateTool, StateValue};
use crate::watch::{ChangeKind, Watch, WatchOptions, WatchTarget};

/// Events buffered between the follower and the response.
const BUFFER: usize = 64;

/// Serves a resumption after `last_event_id` (see the module).
pub(super) async fn replay(store: ClusterEventStore, last_event_id: &str) -> Result<EventStream> {
    let (token, after) = parse_event_id(last_event_id)?;
    let stream_id = store.stream_of(token).await?;
    let live = store.live(token).await?;
    let requests = match &live {
        Some(record) => requests_in(record),
        None => store.requests_of(token).await?,
    };
    let mut follower = Follower {
        pending: Pending::new(requests),
        store,
        token: token.to_string(),
        stream_id,
        sent: after,
    };
    let stored = follower.events().await?;
    let first = follower.take(stored);
    // Nothing more can come: a stream from before `tokens/` (no head to
    // follow), or one complete.
    let Some(stream_id) = follower.stream_id.clone() else {
        return Ok(Box::pin(futures::stream::iter(first)));
    };
    if live.is_none() && !follower.pending.is_complete() {
        // The origin writes no more: an answer the client had before it
        // resumed may have completed the stream.
        follower.count_through(after).await?;
    }
    if follower.pending.is_complete() {
        return Ok(Box::pin(futures::stream::iter(first)));
    }
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(async move {
        for event in first {
            if tx.send(event).await.is_err() {
                return;
            }
        }
        if let Err(e) = follower.follow(&stream_id, &tx).await {
            tracing::warn!(error = %e, "a resumed stream stopped following its origin; the client reconnects");
        }
    });
    Ok(Box::pin(Received(rx)))
}

/// Events from a channel, as rmcp wants a stream (`Send + Sync`).
pub(super) struct Received(pub mpsc::Receiver<ServerSseMessage>);

impl Stream for Received {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ServerSseMessage>> {
        self.0.poll_recv(cx)
    }
}

struct Follower {
    store: ClusterEventStore,
    token: String,
    /// `None`: the stream has no `tokens/` record.
    stream_id: Option<String>,
    /// The sequence number of the last event sent.
    sent: u64,
    /// The requests and the responses sent.
    pending: Pending,
}

/// What became of a stream whose origin stopped writing.
enum Ended {
    /// Answered for (or nothing to answer for): send these and end.
    Answered(Vec<ServerSseMessage>),
    /// More was stored meanwhile (the head is at least at this sequence
    /// number): send it and decide again.
    More(u64),
}

impl Follower {
    /// The stored events after the last one sent.
    async fn events(&self) -> Result<Vec<Replayed>> {
        self.store.events_after(&self.token, self.sent).await
    }

    /// Lets the completion rule see the events up to `seq`, which the
    /// client had before it resumed.
    async fn count_through(&mut self, seq: u64) -> Result<()> {
        for event in self.store.events_between(&self.token, 0, seq).await? {
            self.pending.add(event.message.as_ref());
        }
        Ok(())
    }

    /// Takes `events` as sent: the completion rule sees them.
    fn take(&mut self, events: Vec<Replayed>) -> Vec<ServerSseMessage> {
        events
            .into_iter()
            .map(|e| {
                self.pending.add(e.message.as_ref());
                self.sent = self.sent.max(e.seq);
                e.sse
            })
            .collect()
    }

    /// Sends the stream live until it ends (see the module).
    async fn follow(&mut self, stream_id: &str, tx: &mpsc::Sender<ServerSseMessage>) -> Result<()> {
        let (mut events, mut live_watch) = self.watches().await?;
        let mut live = self.store.live(&self.token).await?;
        // Where the last `More` found this follower: still there next time
        // means the events it was told of are gone (trimmed, expired).
        let mut stalled_at = None;
        loop {
            if let Some(record) = &live {
                self.learn_requests(record);
            }
            let batch = self.events().await?;
            for event in self.take(batch) {
                if tx.send(event).await.is_err() {
                    return Ok(());
                }
            }
            if self.pending.is_complete() {
                return Ok(());
            }
            if live.is_none() {
                match self.origin_stopped(stream_id).await? {
                    Ended::More(head) => {
                        if stalled_at == Some(self.sent) {
                            self.sent = self.sent.max(head);
                        }
                        stalled_at = Some(self.sent);
                        continue;
                    }
                    Ended::Answered(answers) => {
                        for event in answers {
                            let _ = tx.send(event).await;
                        }
                        return Ok(());
                    }
                }
            }
            tokio::select! {
                _ = tx.closed() => return Ok(()),
                batch = events.next() => { batch?; }
                batch = live_watch.next() => {
                    for change in batch?.changes {
                        live = match change.kind {
                            ChangeKind::Put => Some(json_of(change.value)),
                            ChangeKind::Delete | ChangeKind::Expire => None,
                        };
                    }
                }
            }
        }
    }

    /// Watches of the stream's events (a wake-up: what changed is read
    /// after the last event sent) and of its liveness record, from now:
    /// opened before the reads they guard, so nothing slips between.
    async fn watches(&self) -> Result<(Watch, Watch)> {
        let client = &self.store.client;
        let layout = &self.store.layout;
        let keys_only = WatchOptions {
            keys_only: true,
            ..Default::default()
        };
        tokio::try_join!(
            client.watch(WatchTarget::prefix(layout.stream_prefix(&self.token)), keys_only),
            client.watch(WatchTarget::key(layout.live_key(&self.token)), WatchOptions::default()),
        )
    }

    /// Session mode records the requests after the first event: a record
    /// naming them replaces an empty list.
    fn learn_requests(&mut self, record: &Value) {
        let requests = requests_in(record);
        if self.pending.requests().is_empty() && !requests.is_empty() {
            self.pending = Pending::new(requests);
        }
    }

    /// The liveness record is gone and every event stored is sent: answers
    /// for the requests the origin left unanswered, unless it completed
    /// the stream or more was stored meanwhile.
    async fn origin_stopped(&mut self, stream_id: &str) -> Result<Ended> {
        let head = self.store.read_head(stream_id).await?;
        if head.revision.is_none() || head.token != self.token {
            return Ok(Ended::Answered(Vec::new()));
        }
        if head.seq > self.sent {
            return Ok(Ended::More(head.seq));
        }
        let requests = match self.pending.requests() {
            [] => self.store.requests_of(&self.token).await?,
            known => known.to_vec(),
        };
        if requests.is_empty() {
            // Nobody recorded what the stream answers: nothing to answer for.
            return Ok(Ended::Answered(Vec::new()));
        }
        // What the whole stream answered, not only what this resumption sent.
        let mut whole = Pending::new(requests);
        for event in self.store.events_after(&self.token, 0).await? {
            whole.add(event.message.as_ref());
        }
        let answers: Vec<Value> = whole.unanswered().iter().map(origin_lost).collect();
        if answers.is_empty() {
            return Ok(Ended::Answered(Vec::new()));
        }
        match self.append(stream_id, &head, &answers).await {
            Ok(events) => Ok(Ended::Answered(events)),
            Err(Error::Conflict { .. } | Error::NotFound(_)) => Ok(Ended::More(head.seq)),
            Err(e) => Err(e),
        }
    }

    /// Appends `answers` after `head` in one batch (the head by
    /// compare-and-set): the events as sent.
    async fn append(&self, stream_id: &str, head: &Head, answers: &[Value]) -> Result<Vec<ServerSseMessage>> {
        let next = Head {
            seq: head.seq + answers.len() as u64,
            revision: None,
            ..head.clone()
        };
        let mut items = vec![
            self.store.head_item(stream_id, head, &next),
            self.store.token_item(stream_id, &self.token),
        ];
        let mut events = Vec::with_capacity(answers.len());
        for (seq, answer) in (head.seq + 1..).zip(answers) {
            items.push(self.store.event_item(&self.token, seq, answer));
            let message = serde_json::from_value(answer.clone()).map_err(|e| Error::Codec(e.to_string()))?;
            let mut sse = ServerSseMessage::default();
            sse.event_id = Some(event_id(&self.token, seq));
            sse.message = Some(Arc::new(message));
            events.push(sse);
        }
        self.store.state.batch_store(items).await?;
        Ok(events)
    }
}

/// The ids a `live/` or `requests/` record names (none if unreadable).
fn requests_in(record: &Value) -> Vec<Value> {
    record
        .get("requests")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn json_of(value: Option<StateValue>) -> Value {
    match value {
        Some(StateValue::Json(v)) => v,
        _ => Value::Null,
    }
}

impl ClusterEventStore {
    /// The stream id `tokens/<token>` names (`None`: no such record).
    async fn stream_of(&self, token: &str) -> Result<Option<String>> {
        let entry = self.state.retrieve(&self.layout.token_key(token)).await?;
        Ok(entry.and_then(|e| match e.value {
            Some(StateValue::Json(Value::String(id))) => Some(id),
            _ => None,
        }))
    }

    /// The requests `requests/<token>` names (none without the record).
    async fn requests_of(&self, token: &str) -> Result<Vec<Value>> {
        let entry = self.state.retrieve(&self.layout.requests_key(token)).await?;
        Ok(entry.map(|e| requests_in(&json_of(e.value))).unwrap_or_default())
    }

    /// The liveness record of the stream `token` names, if it is alive.
    async fn live(&self, token: &str) -> Result<Option<Value>> {
        let entry = self.state.retrieve(&self.layout.live_key(token)).await?;
        Ok(entry.map(|e| json_of(e.value)))
    }
}
