//! The Watch service (watch.proto): a watcher first catches up from the
//! history ([`state::history`](crate::state::history)), then follows the recent changes the state
//! store keeps after each applied batch ([`state::recent`](crate::state::recent)). It subscribes
//! to those before it reads how far this node has applied, so every change
//! is either read from the history or found among the recent ones (the
//! position drops repeats); one that fell behind what is kept reads the
//! history again from where it was.
//!
//! A node's memory for watch delivery is bounded in bytes
//! (`--watch-memory-mb`): the recent changes take a quarter, kept whatever
//! the watchers do; what each watcher queues for its client is counted
//! against its share and the rest of the budget (`outbox`), and a watcher
//! whose client takes nothing while its share is full is cut off with
//! `slow_watcher`, as is one that falls behind the history kept.

mod memo;
mod outbox;

use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use handlestore_proto::watch_out::WatchOut;
use handlestore_proto::watch_out::server::watch_server;
use tokio::sync::watch;
use tokio::time::Instant;
use tonic::{Code, Request, Response, Status};

use super::{Api, Credentials, Decision, Need, blocking, validate};
use crate::state::history::{Event, Page};
use crate::state::keys;
use crate::state::recent::{Batch, Since};
use crate::status;
pub use outbox::{Outbox, OutboxStream, WatchBudget};
use pb::Access;

/// Values read from the history for one response, at most.
pub const PAGE_BYTES: usize = crate::config::WATCH_PAGE_BYTES;
/// How often an idle watch with progress notifications hears the
/// revision it reached.
const PROGRESS_EVERY: Duration = handlestore_proto::limits::WATCH_PROGRESS_EVERY;

pub struct WatchService {
    api: Arc<Api>,
    memo: Arc<memo::Memo>,
}

impl WatchService {
    pub fn new(api: Arc<Api>) -> Self {
        Self {
            api,
            memo: Arc::default(),
        }
    }
}

/// The node's Watch server.
pub type WatchServer = watch_server::WatchServer<WatchService>;

/// What a watch follows.
#[derive(Debug, Clone)]
enum Scope {
    Prefix(String),
    Key(String),
    Store(String),
    Handle { store: String, id: String },
}

#[derive(Debug, Clone)]
struct Target {
    ns: String,
    scope: Scope,
    /// The data keys it follows: those under this prefix, or (`exact`)
    /// this one.
    data_key: Vec<u8>,
    exact: bool,
}

impl Target {
    fn parse(r: &pb::WatchRequest, l: &crate::config::Limits) -> Result<Self, Status> {
        use pb::watch_request::Target as T;
        let ns = validate::namespace(&r.namespace, l)?;
        let scope = match r.target.clone() {
            Some(T::Prefix(p)) => validate::state_prefix(&p, l).map(|()| Scope::Prefix(p))?,
            Some(T::Key(k)) => validate::state_key(&k, l).map(|()| Scope::Key(k))?,
            Some(T::Store(s)) => validate::store(&s, l).map(|()| Scope::Store(s))?,
            Some(T::Handle(h)) => {
                validate::store(&h.store, l)?;
                validate::handle_id(&h.id)?;
                Scope::Handle {
                    store: h.store,
                    id: h.id,
                }
            }
            None => return Err(status::invalid("a watch needs a target: prefix, key, store or handle")),
        };
        let (data_key, exact) = match &scope {
            Scope::Prefix(p) => (keys::state_key(&ns, p), false),
            Scope::Key(k) => (keys::state_key(&ns, k), true),
            Scope::Store(s) => (keys::handle_store_prefix(&ns, s), false),
            Scope::Handle { store, id } => (keys::handle_key(&ns, store, id), true),
        };
        Ok(Self {
            ns,
            scope,
            data_key,
            exact,
        })
    }

    /// What reading it needs.
    fn need(&self) -> Need<'_> {
        match &self.scope {
            Scope::Prefix(p) => Need::prefix(&self.ns, Access::Read, p),
            Scope::Key(k) => Need::key(&self.ns, Access::Read, k),
            Scope::Store(s) | Scope::Handle { store: s, .. } => Need::store(&self.ns, Access::Read, s),
        }
    }

    /// The scope's kind, as a number (for `memo::Key`).
    fn kind(&self) -> u8 {
        match self.scope {
            Scope::Prefix(_) => 0,
            Scope::Key(_) => 1,
            Scope::Store(_) => 2,
            Scope::Handle { .. } => 3,
        }
    }

    fn store(&self) -> Option<&str> {
        match &self.scope {
            Scope::Store(s) | Scope::Handle { store: s, .. } => Some(s),
            _ => None,
        }
    }

    fn matches(&self, key: &[u8]) -> bool {
        if self.exact {
            key == self.data_key.as_slice()
        } else {
            key.starts_with(&self.data_key)
        }
    }

    /// The name of a data key this target matches, as a client knows it
    /// (the state key, or the handle id).
    fn name_of<'k>(&self, key: &'k [u8]) -> std::borrow::Cow<'k, str> {
        let skip = match self.store() {
            Some(s) => keys::handle_store_prefix(&self.ns, s).len(),
            None => keys::state_ns_prefix(&self.ns).len(),
        };
        String::from_utf8_lossy(key.get(skip..).unwrap_or_default())
    }
}

/// One watch being served.
struct Watcher {
    api: Arc<Api>,
    creds: Credentials,
    target: Target,
    decision: Decision,
    /// Whether the decision lets it see every change its target matches,
    /// so that it may send responses shared with other watchers (`memo`).
    shares: bool,
    memo: Arc<memo::Memo>,
    keys_only: bool,
    progress: bool,
    /// The next revision to deliver.
    position: u64,
    /// Wakes when a batch is applied (and keeps recent changes kept).
    changes: watch::Receiver<u64>,
    /// The recent changes' generation the history was read in.
    generation: u64,
    /// True once the node is stopping: a client that reads nothing must
    /// not hold the node up.
    stopping: watch::Receiver<bool>,
    out: Outbox,
    last_sent: Instant,
}

/// Why following live changes stopped.
enum Followed {
    /// Read the history again (lagged, or a snapshot replaced the state).
    CatchUp,
    /// The client went away.
    Gone,
}

#[tonic::async_trait]
impl watch_server::Watch for WatchService {
    type WatchStream = OutboxStream;

    #[tracing::instrument(level = "debug", skip_all)]
    async fn watch(&self, request: Request<pb::WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let target = Target::parse(&r, &self.api.limits)?;
        // Subscribed before the read point: whatever is applied after it is
        // kept among the recent changes, or read from the history.
        let changes = self.api.state.recent().subscribe();
        let at = self.api.reads.ready(None).await?;
        let decision = self.api.guard.check_some(&creds, &target.need())?;
        let position = match r.start_revision {
            0 => at.revision + 1,
            from => from,
        };
        let floor = blocking({
            let state = self.api.state.clone();
            move || crate::state::history::floor(state.db())
        })
        .await?;
        if position < floor {
            return Err(compacted(position, floor));
        }
        let (out, stream) = self.api.watches.open();
        let created = pb::WatchResponse {
            revision: position - 1,
            created: true,
            ..Default::default()
        };
        // The first response always fits: the queue is empty.
        if out.push_all(vec![created.into()], &move || cut_off(position)).is_err() {
            return Err(status::internal("the watch ended before it started"));
        }
        let watcher = Watcher {
            api: self.api.clone(),
            creds,
            shares: shares(&target, &decision),
            target,
            decision,
            memo: self.memo.clone(),
            keys_only: r.keys_only,
            progress: r.progress_notify,
            position,
            changes,
            generation: self.api.state.recent().generation(),
            stopping: self.api.state.stopping(),
            out,
            last_sent: Instant::now(),
        };
        tokio::spawn(watcher.run());
        Ok(Response::new(stream))
    }
}

impl Watcher {
    async fn run(mut self) {
        loop {
            let followed = match self.catch_up().await {
                Ok(true) => self.follow().await,
                Ok(false) => Ok(Followed::Gone),
                Err(e) => Err(e),
            };
            match followed {
                Ok(Followed::CatchUp) => continue,
                Ok(Followed::Gone) => return,
                Err(e) if e.code() == Code::Unavailable => {
                    // Stopping: at once, whatever the client has read.
                    self.out.end_now(e);
                    return;
                }
                Err(e) => {
                    self.out.finish_with(e);
                    return;
                }
            }
        }
    }

    /// Delivers the history from the position through what this node has
    /// applied, a page at a time as the client makes room for it. False if
    /// the client went away.
    async fn catch_up(&mut self) -> Result<bool, Status> {
        loop {
            // Before the read: a snapshot installed meanwhile makes the
            // recent changes say so.
            self.generation = self.api.state.recent().generation();
            let through = self.api.state.applied_index();
            if self.position > through {
                return Ok(true);
            }
            if !self.room_for(PAGE_BYTES).await? {
                return Ok(false);
            }
            let page = {
                let _turn = self.api.watches.history_read().await;
                let (state, from) = (self.api.state.clone(), self.position);
                blocking(move || state.read_history(from, through, PAGE_BYTES)).await?
            };
            match page {
                Page::Compacted { floor } => return Err(slow(self.position, floor)),
                Page::Events { events, through } => {
                    if !self.deliver(&events, through)? || !self.progress_if_quiet().await {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// A long catch-up that finds nothing for this watcher still tells it
    /// how far it got, so its client does not take the silence for a lost
    /// node. False if the client went away.
    async fn progress_if_quiet(&mut self) -> bool {
        if !self.progress || self.last_sent.elapsed() < PROGRESS_EVERY {
            return true;
        }
        let progress = pb::WatchResponse {
            revision: self.position - 1,
            ..Default::default()
        };
        self.last_sent = Instant::now();
        let position = self.position;
        self.room_for(0).await.unwrap_or(false)
            && self
                .out
                .push_all(vec![progress.into()], &move || cut_off(position))
                .is_ok()
    }

    /// Delivers live changes, a batch at a time, until the watcher must
    /// catch up again, the client goes away, or the node stops. A batch is
    /// let go while the watcher waits for room (and found again after), so
    /// a watcher whose client is slow holds nothing of the recent changes.
    async fn follow(&mut self) -> Result<Followed, Status> {
        loop {
            match self.api.state.recent().since(self.position, self.generation) {
                Since::Gone => return Ok(Followed::CatchUp),
                Since::UpToDate { through } => {
                    self.position = self.position.max(through + 1);
                    if !self.wait_for_changes().await? {
                        return Ok(Followed::Gone);
                    }
                }
                Since::Next(batch) => {
                    let need = self.need(&batch.events);
                    if !self.out.fits(need) {
                        drop(batch);
                        if !self.room_for(need).await? {
                            return Ok(Followed::Gone);
                        }
                        continue;
                    }
                    if !self.deliver_live(&batch)? {
                        return Ok(Followed::Gone);
                    }
                }
            }
        }
    }

    /// Waits for the next applied batch, sending progress while quiet.
    /// False if the client went away (or the watcher was cut off).
    async fn wait_for_changes(&mut self) -> Result<bool, Status> {
        loop {
            let quiet_until = self.last_sent + PROGRESS_EVERY;
            tokio::select! {
                changed = self.changes.changed() => return match changed {
                    Ok(()) => Ok(true),
                    Err(_) => Err(stopping(self.position)),
                },
                () = until_stopping(&mut self.stopping) => return Err(stopping(self.position)),
                () = tokio::time::sleep_until(quiet_until), if self.progress => {
                    if !self.progress_if_quiet().await {
                        return Ok(false);
                    }
                }
                _ = self.out.wait_ended() => return Ok(false),
            }
        }
    }

    /// Waits until the watcher's share has room for about `bytes` more
    /// (see `outbox`). False if it was cut off meanwhile or the client
    /// went away; an error if the node is stopping.
    async fn room_for(&mut self, bytes: usize) -> Result<bool, Status> {
        let position = self.position;
        let slow = move || cut_off(position);
        tokio::select! {
            room = self.out.wait_for_room(bytes, &slow) => Ok(room.is_ok()),
            () = until_stopping(&mut self.stopping) => Err(stopping(position)),
        }
    }

    /// About the bytes this watcher would queue for these changes.
    fn need(&self, events: &[Event]) -> usize {
        events
            .iter()
            .filter(|e| e.revision >= self.position && self.target.matches(&e.key))
            .map(|e| {
                let value = if self.keys_only { 0 } else { e.record.value.len() };
                e.key.len() + value + outbox::OVERHEAD
            })
            .sum()
    }

    /// Queues the changes at or after the position that the watcher may
    /// see (the caller made room for them), and moves the position past
    /// `through`. False if the watcher ended (its client went away, or it
    /// was cut off).
    fn deliver(&mut self, events: &[Event], through: u64) -> Result<bool, Status> {
        self.recheck()?;
        let (responses, sent) = self.build(events, through);
        self.queue(responses.into_iter().map(WatchOut::from).collect(), sent, through)
    }

    /// As `deliver`, for a batch of the recent changes: a watcher that may
    /// see all of it sends the responses every such watcher of its target
    /// sends, built and encoded once (`memo`).
    fn deliver_live(&mut self, batch: &Batch) -> Result<bool, Status> {
        self.recheck()?;
        let whole = batch.events.first().is_none_or(|e| e.revision >= self.position);
        if !(self.shares && whole) {
            return self.deliver(&batch.events, batch.revision);
        }
        let t = &self.target;
        let key = memo::Key {
            generation: self.generation,
            through: batch.revision,
            kind: t.kind(),
            data_key: t.data_key.clone(),
            exact: t.exact,
            keys_only: self.keys_only,
        };
        let shared = self.memo.get_or_build(key, || {
            let (responses, events) = self.build(&batch.events, batch.revision);
            memo::Responses {
                responses: responses.iter().map(WatchOut::encoded).collect(),
                events,
            }
        });
        self.queue(shared.responses.to_vec(), shared.events, batch.revision)
    }

    /// The responses that carry the changes at or after the position that
    /// the watcher may see, and how many changes they carry.
    fn build(&self, events: &[Event], through: u64) -> (Vec<pb::WatchResponse>, usize) {
        let events: Vec<pb::WatchEvent> = events
            .iter()
            .filter(|e| e.revision >= self.position && self.visible(e))
            .map(|e| self.event(e))
            .collect();
        let sent = events.len();
        (responses(events, through, PAGE_BYTES), sent)
    }

    /// Queues responses carrying `sent` changes, and moves the position
    /// past `through`.
    fn queue(&mut self, batch: Vec<WatchOut>, sent: usize, through: u64) -> Result<bool, Status> {
        self.position = through + 1;
        crate::observe::metrics::recorders()
            .watch_events_sent
            .inc_by(sent as u64);
        if batch.is_empty() {
            return Ok(self.out.ended().is_none());
        }
        self.last_sent = Instant::now();
        let position = self.position;
        Ok(self.out.push_all(batch, &move || cut_off(position)).is_ok())
    }

    /// Decides again once the auth state changed: a watch lasts, grants
    /// may not.
    fn recheck(&mut self) -> Result<(), Status> {
        if !std::ptr::eq(Arc::as_ptr(&self.api.state.auth()), self.decision.view()) {
            self.decision = self.api.guard.check_some(&self.creds, &self.target.need())?;
            self.shares = shares(&self.target, &self.decision);
        }
        Ok(())
    }

    /// Whether the watcher may see this change: its key matches, and the
    /// caller may read it (a key it has a grant on; in an owner-bound
    /// store, a handle it owns).
    fn visible(&self, e: &Event) -> bool {
        let t = &self.target;
        if !t.matches(&e.key) {
            return false;
        }
        let d = &self.decision;
        match t.store() {
            None => d.allows(&Need::key(&t.ns, Access::Read, &t.name_of(&e.key))),
            Some(store) => !d.view().owner_bound(&t.ns, store) || d.sees_owner(&t.need(), &e.record.owner),
        }
    }

    fn event(&self, e: &Event) -> pb::WatchEvent {
        let put = e.kind == pb::EventKind::Put;
        let value = (put && !self.keys_only).then(|| pb::StateValue {
            kind: Some(if e.record.json {
                pb::state_value::Kind::Json(String::from_utf8_lossy(&e.record.value).into_owned())
            } else {
                pb::state_value::Kind::Bytes(e.record.value.clone())
            }),
        });
        pb::WatchEvent {
            kind: e.kind as i32,
            revision: e.revision,
            store: self.target.store().unwrap_or_default().to_string(),
            key: self.target.name_of(&e.key).into_owned(),
            value,
            create_revision: if put { e.record.create_revision } else { 0 },
            expires_at_ms: if put { e.record.expires_at_ms } else { 0 },
        }
    }
}

/// Whether a watcher of `target` allowed by `d` sees every change the
/// target matches (what `Watcher::visible` lets through): a grant on the
/// whole prefix, or a store that is not owner-bound (or whose handles of
/// every owner the caller sees).
fn shares(target: &Target, d: &Decision) -> bool {
    let t = target;
    match (&t.scope, t.store()) {
        (Scope::Prefix(p), _) => d.allows(&Need::prefix(&t.ns, Access::Read, p)),
        (Scope::Key(k), _) => d.allows(&Need::key(&t.ns, Access::Read, k)),
        (_, Some(store)) => !d.view().owner_bound(&t.ns, store) || d.sees_all_owners(&t.need()),
        (_, None) => false,
    }
}

/// The responses that carry `events` (in revision order, through revision
/// `through`): about `max_bytes` each, whole revisions only, so that one
/// applied batch of many large writes never makes a message past the
/// gRPC limits. None for no events.
fn responses(events: Vec<pb::WatchEvent>, through: u64, max_bytes: usize) -> Vec<pb::WatchResponse> {
    let mut out = Vec::new();
    let mut current: Vec<pb::WatchEvent> = Vec::new();
    let mut bytes = 0usize;
    for e in events {
        if let Some(last) = current.last()
            && bytes >= max_bytes
            && last.revision != e.revision
        {
            let revision = last.revision;
            out.push(pb::WatchResponse {
                events: std::mem::take(&mut current),
                revision,
                created: false,
            });
            bytes = 0;
        }
        bytes += prost::Message::encoded_len(&e);
        current.push(e);
    }
    if !current.is_empty() {
        out.push(pb::WatchResponse {
            events: current,
            revision: through,
            created: false,
        });
    }
    out
}

/// Resolves once the node is stopping.
async fn until_stopping(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|s| *s).await;
}

/// The node is stopping: resume elsewhere.
fn stopping(position: u64) -> Status {
    status::unavailable(
        Reason::Shutdown,
        format!("node is shutting down; resume from revision {position}"),
        None,
    )
}

/// A watcher whose client took nothing while its share of the node's
/// watch memory was full.
fn cut_off(position: u64) -> Status {
    Reason::SlowWatcher.status_with(
        format!(
            "this watch fell behind: its client took nothing for {:?} while its share of the node's watch \
             memory was full (--watch-memory-mb); resume from the revision after the last one received \
             (it had reached revision {})",
            outbox::PATIENCE,
            position.saturating_sub(1)
        ),
        pb::ErrorDetail {
            current_revision: position.saturating_sub(1),
            ..Default::default()
        },
    )
}

/// A watch from before the history this node keeps.
fn compacted(from: u64, floor: u64) -> Status {
    Reason::Compacted.status_with(
        format!(
            "revision {from} is compacted: this node's watch history starts at revision {floor} \
             (read the current state, then watch from its revision + 1)"
        ),
        pb::ErrorDetail {
            compact_revision: floor,
            ..Default::default()
        },
    )
}

/// A watcher that fell behind the history kept while it was served.
fn slow(position: u64, floor: u64) -> Status {
    Reason::SlowWatcher.status_with(
        format!(
            "this watch fell behind: it was at revision {position}, and the watch history now starts at \
             revision {floor} (consume faster, or keep more history with --watch-history)"
        ),
        pb::ErrorDetail {
            compact_revision: floor,
            current_revision: position.saturating_sub(1),
            ..Default::default()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(revision: u64, value_len: usize) -> pb::WatchEvent {
        pb::WatchEvent {
            revision,
            value: Some(pb::StateValue {
                kind: Some(pb::state_value::Kind::Bytes(vec![0; value_len])),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn large_batches_go_in_several_responses_of_whole_revisions() {
        let events = vec![event(5, 600), event(5, 600), event(6, 10), event(7, 1000), event(8, 10)];
        let out = responses(events, 9, 1000);
        let shape: Vec<(Vec<u64>, u64)> = out
            .iter()
            .map(|r| (r.events.iter().map(|e| e.revision).collect(), r.revision))
            .collect();
        assert_eq!(shape, vec![(vec![5, 5], 5), (vec![6, 7], 7), (vec![8], 9)]);
        assert!(responses(Vec::new(), 9, 1000).is_empty());
        assert_eq!(responses(vec![event(3, 1)], 4, 1000)[0].revision, 4);
    }
}
