//! The origin's side of a stream: what the replica that runs a stream
//! knows of it while it appends, and the liveness record it keeps
//! (`live/<token>` = `{"requests": [ids]}`): written in the batch of the
//! stream's first event (with `requests/<token>`, the same ids kept as long
//! as the events, for a follower that starts after the record is gone),
//! unless that event completes the stream; written again every
//! [`LIVE_REFRESH`](super::contract::LIVE_REFRESH) by compare-and-set on its last revision while the
//! stream can still get events from this process; written expired in the
//! batch of the event that completes the stream. A follower takes the
//! record's absence as the end of the origin's writes.
//!
//! Whether the stream can still get events from this process is a guard
//! the adapter holds (an `Arc<()>`; the origin keeps a `Weak`): the
//! request's event store in stateless mode, the session in session mode.
//! A stream without a guard gets its record with the first event and no
//! refresh, so it lapses after [`LIVE_TTL`](super::contract::LIVE_TTL).

use std::sync::Weak;

use serde_json::{Value, json};

use super::completion::Pending;

/// What the adapter knows of a stream: the requests it answers and the
/// guard that lives while the stream can get events from this process.
#[derive(Debug, Clone)]
pub(super) struct Binding {
    pub requests: Vec<Value>,
    pub alive: Weak<()>,
}

/// A stream this process appends to.
pub(super) struct Origin {
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
    /// Writes it, alive for [`LIVE_TTL`](super::contract::LIVE_TTL).
    Write,
    /// Writes it expired: the event completes the stream.
    Gone,
}

pub(super) struct OriginState {
    pub pending: Pending,
    alive: Option<Weak<()>>,
    /// The revision of the record as this process last wrote it (`None`:
    /// it wrote none, or ended it): a refresh is a compare-and-set on it,
    /// so a record ended or expired meanwhile stays so.
    pub live_revision: Option<u64>,
    /// This process stored an event of the stream: the next is not the
    /// first it appends, so it writes no record.
    appended: bool,
    /// A refresher runs for this stream.
    pub refreshing: bool,
    /// Complete, or released without its answer: nothing to keep alive.
    pub done: bool,
}

impl Origin {
    pub fn new(token: &str, binding: Option<&Binding>) -> Self {
        let mut state = OriginState {
            pending: Pending::new(Vec::new()),
            alive: None,
            live_revision: None,
            appended: false,
            refreshing: false,
            done: false,
        };
        if let Some(b) = binding {
            state.bind(b);
        }
        Self {
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

    /// The value of `live/<token>` and `requests/<token>`.
    pub fn record(&self) -> Value {
        json!({ "requests": self.pending.requests() })
    }

    /// What the batch of an event carrying `message` does to the record:
    /// the first event this process appends to the stream writes it (a
    /// stream continued after a restore gets a record from its new origin).
    pub fn live_item(&self, message: Option<&Value>) -> LiveItem {
        if self.pending.completes(message) {
            if self.live_revision.is_some() {
                LiveItem::Gone
            } else {
                LiveItem::Untouched
            }
        } else if !self.appended {
            LiveItem::Write
        } else {
            LiveItem::Untouched
        }
    }

    /// Records a stored event and what its batch (committed at
    /// `revision`) did to the record.
    pub fn stored(&mut self, message: Option<&Value>, item: LiveItem, revision: u64) {
        let complete = self.pending.add(message);
        self.appended = true;
        match item {
            LiveItem::Write => self.live_revision = Some(revision),
            LiveItem::Gone => self.live_revision = None,
            LiveItem::Untouched => {}
        }
        self.done |= complete;
    }

    /// Should a refresher start now?
    pub fn wants_refresher(&self) -> bool {
        self.live_revision.is_some() && !self.done && !self.refreshing && self.alive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

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
        let origin = Origin::new("T", Some(&binding));
        let mut state = origin.state.try_lock().expect("unlocked");
        assert_eq!(state.record(), json!({"requests": [1]}));
        assert_eq!(state.live_item(None), LiveItem::Write);
        state.stored(None, LiveItem::Write, 5);
        assert_eq!(state.live_revision, Some(5));
        assert!(state.wants_refresher());
        let note = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}});
        assert_eq!(state.live_item(Some(&note)), LiveItem::Untouched);
        state.stored(Some(&note), LiveItem::Untouched, 6);
        assert_eq!(
            state.live_revision,
            Some(5),
            "only a write of the record moves its revision"
        );
        assert_eq!(state.live_item(Some(&response(1))), LiveItem::Gone);
        state.stored(Some(&response(1)), LiveItem::Gone, 7);
        assert!(state.done && state.live_revision.is_none() && !state.wants_refresher());
    }

    #[test]
    fn a_stream_answered_by_its_first_event_never_gets_a_record() {
        let origin = Origin::new("T", None);
        let mut state = origin.state.try_lock().expect("unlocked");
        assert_eq!(state.live_item(Some(&response(9))), LiveItem::Untouched);
        state.stored(Some(&response(9)), LiveItem::Untouched, 1);
        assert!(state.done);
    }

    #[test]
    fn only_the_first_event_writes_the_record() {
        let origin = Origin::new("T", None);
        let mut state = origin.state.try_lock().expect("unlocked");
        state.stored(None, LiveItem::Untouched, 1);
        assert_eq!(state.live_item(None), LiveItem::Untouched);
    }

    #[test]
    fn without_a_held_guard_nothing_is_kept_alive() {
        let origin = Origin::new("T", None);
        let mut state = origin.state.try_lock().expect("unlocked");
        state.stored(None, LiveItem::Write, 1);
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
