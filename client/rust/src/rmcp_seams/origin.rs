//! The origin's side of a stream: what the replica that runs a stream
//! knows of it while it appends, and the liveness record it keeps
//! (`live/<token>` = `{"requests": [ids]}`): written in the batch of the
//! stream's first event, written again every [`LIVE_REFRESH`] while the
//! stream can still get events from this process, and written expired in
//! the batch of the event that completes the stream. A follower takes the
//! record's absence as the end of the origin's writes.
//!
//! Whether the stream can still get events from this process is a guard
//! the adapter holds (an `Arc<()>`; the origin keeps a `Weak`): the
//! request's event store in stateless mode, the session in session mode.
//! A stream without a guard gets its record with the first event and no
//! refresh, so it lapses after [`LIVE_TTL`].

use std::sync::{Arc, Weak};

use serde_json::{Value, json};

use super::completion::Pending;
use super::contract::{LIVE_REFRESH, LIVE_TTL};

/// What the adapter knows of a stream: the requests it answers and the
/// guard that lives while the stream can get events from this process.
#[derive(Debug, Clone)]
pub(super) struct Binding {
    pub requests: Vec<Value>,
    pub alive: Weak<()>,
}

/// A stream this process appends to.
pub(super) struct Origin {
    pub stream_id: String,
    pub token: String,
    /// Held across an append's batch and a refresh's write, so a refresh
    /// never lands after the batch that completes the stream.
    pub state: tokio::sync::Mutex<OriginState>,
}

/// What an event's batch does to the liveness record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LiveItem {
    /// Nothing.
    Untouched,
    /// Writes it, alive for [`LIVE_TTL`].
    Write,
    /// Writes it expired: the event completes the stream.
    Gone,
}

pub(super) struct OriginState {
    pub pending: Pending,
    alive: Option<Weak<()>>,
    /// This process wrote the record and has not ended it.
    pub live: bool,
    /// A refresher runs for this stream.
    pub refreshing: bool,
    /// Complete, or released without its answer: nothing to keep alive.
    pub done: bool,
}

impl Origin {
    pub fn new(stream_id: &str, token: &str, requests: Vec<Value>, binding: Option<&Binding>) -> Self {
        let mut state = OriginState {
            pending: Pending::new(requests),
            alive: None,
            live: false,
            refreshing: false,
            done: false,
        };
        if let Some(b) = binding {
            state.bind(b);
        }
        Self {
            stream_id: stream_id.to_string(),
            token: token.to_string(),
            state: tokio::sync::Mutex::new(state),
        }
    }
}

impl OriginState {
    /// Takes the adapter's requests (unless some were recorded already)
    /// and guard.
    pub fn bind(&mut self, binding: &Binding) {
        if self.pending.requests().is_empty() && !binding.requests.is_empty() {
            self.pending = Pending::new(binding.requests.clone());
        }
        self.alive = Some(binding.alive.clone());
    }

    /// Has a guard, still held: the stream can get more events from here.
    pub fn alive(&self) -> bool {
        self.alive.as_ref().is_some_and(|w| w.strong_count() > 0)
    }

    /// The record's value.
    pub fn record(&self) -> Value {
        json!({ "requests": self.pending.requests() })
    }

    /// What the batch of an event carrying `message` does to the record.
    pub fn live_item(&self, message: Option<&Value>) -> LiveItem {
        if self.pending.completes(message) {
            if self.live { LiveItem::Gone } else { LiveItem::Untouched }
        } else if self.live || self.done {
            LiveItem::Untouched
        } else {
            LiveItem::Write
        }
    }

    /// Records a stored event and what its batch did to the record.
    pub fn stored(&mut self, message: Option<&Value>, item: LiveItem) {
        let complete = self.pending.add(message);
        match item {
            LiveItem::Write => self.live = true,
            LiveItem::Gone => self.live = false,
            LiveItem::Untouched => {}
        }
        self.done |= complete;
    }

    /// Should a refresher start now?
    pub fn wants_refresher(&self) -> bool {
        self.live && !self.done && !self.refreshing && self.alive()
    }
}

/// Keeps `origin`'s record alive while its guard is held and the stream is
/// not complete; when the guard goes first, deletes the record, so a
/// follower answers for the stream at once instead of after [`LIVE_TTL`].
pub(super) async fn refresh(store: super::event_store::ClusterEventStore, origin: Arc<Origin>) {
    loop {
        tokio::time::sleep(LIVE_REFRESH).await;
        let mut state = origin.state.lock().await;
        if state.done {
            break;
        }
        if !state.alive() {
            state.done = true;
            if state.live {
                store.release(&origin.token).await;
                state.live = false;
            }
            break;
        }
        store.write_live(&origin.token, state.record(), LIVE_TTL).await;
    }
    store.forget(&origin);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(id: u64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": {}})
    }

    #[test]
    fn the_record_is_written_with_the_first_event_and_ended_with_the_answer() {
        let guard = Arc::new(());
        let binding = Binding {
            requests: vec![json!(1)],
            alive: Arc::downgrade(&guard),
        };
        let origin = Origin::new("s", "T", Vec::new(), Some(&binding));
        let mut state = origin.state.try_lock().expect("unlocked");
        assert_eq!(state.record(), json!({"requests": [1]}));
        assert_eq!(state.live_item(None), LiveItem::Write);
        state.stored(None, LiveItem::Write);
        assert!(state.wants_refresher());
        let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}});
        assert_eq!(state.live_item(Some(&note)), LiveItem::Untouched);
        state.stored(Some(&note), LiveItem::Untouched);
        assert_eq!(state.live_item(Some(&response(1))), LiveItem::Gone);
        state.stored(Some(&response(1)), LiveItem::Gone);
        assert!(state.done && !state.live && !state.wants_refresher());
    }

    #[test]
    fn a_stream_answered_by_its_first_event_never_gets_a_record() {
        let origin = Origin::new("s", "T", Vec::new(), None);
        let mut state = origin.state.try_lock().expect("unlocked");
        assert_eq!(state.live_item(Some(&response(9))), LiveItem::Untouched);
        state.stored(Some(&response(9)), LiveItem::Untouched);
        assert!(state.done);
    }

    #[test]
    fn without_a_held_guard_nothing_is_kept_alive() {
        let origin = Origin::new("s", "T", Vec::new(), None);
        let mut state = origin.state.try_lock().expect("unlocked");
        state.stored(None, LiveItem::Write);
        assert!(!state.wants_refresher(), "no guard");
        let guard = Arc::new(());
        state.bind(&Binding {
            requests: vec![json!("a")],
            alive: Arc::downgrade(&guard),
        });
        assert!(state.wants_refresher());
        drop(guard);
        assert!(!state.alive());
    }
}
