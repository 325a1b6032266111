//! The Watch service (watch.proto): a watcher first catches up from the
//! history (`state::history`), then follows the changes the state store
//! publishes after each applied batch. It subscribes to those before it
//! reads how far this node has applied, so every change is either read
//! from the history or received live (the position drops repeats).
//!
//! Memory per watcher is bounded: a few responses queue for the client
//! (then its task waits), and a watcher whose live changes overflowed the
//! shared buffer reads the history again from where it was; only one that
//! falls behind the history kept is ended (`slow_watcher`).

use std::sync::Arc;
use std::time::Duration;

use handlestore_proto::reason;
use handlestore_proto::v1 as pb;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Response, Status};

use super::{Api, Credentials, Decision, Need, blocking, validate};
use crate::state::history::{Event, Notice, Page};
use crate::state::keys;
use crate::status;
use pb::Access;

/// Values read from the history for one response, at most (whole
/// revisions always go together).
const PAGE_BYTES: usize = 1 << 20;
/// Responses queued for one watcher's client before its task waits.
const QUEUE: usize = 8;
/// How often an idle watch with progress notifications hears the
/// revision it reached.
const PROGRESS_EVERY: Duration = handlestore_proto::limits::WATCH_PROGRESS_EVERY;

pub struct WatchService {
    api: Arc<Api>,
}

impl WatchService {
    pub fn new(api: Arc<Api>) -> Self {
        Self { api }
    }
}

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
    keys_only: bool,
    progress: bool,
    /// The next revision to deliver.
    position: u64,
    changes: broadcast::Receiver<Notice>,
    /// True once the node is stopping: a client that reads nothing must
    /// not hold the node up.
    stopping: watch::Receiver<bool>,
    out: mpsc::Sender<Result<pb::WatchResponse, Status>>,
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
impl pb::watch_server::Watch for WatchService {
    type WatchStream = ReceiverStream<Result<pb::WatchResponse, Status>>;

    #[tracing::instrument(level = "debug", skip_all)]
    async fn watch(&self, request: Request<pb::WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let target = Target::parse(&r, &self.api.limits)?;
        // Subscribed before the read point: nothing applied after it is
        // missed.
        let changes = self.api.state.subscribe_changes();
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
        let (out, rx) = mpsc::channel(QUEUE);
        let created = pb::WatchResponse {
            revision: position - 1,
            created: true,
            ..Default::default()
        };
        out.try_send(Ok(created)).map_err(|_| status::internal("watch queue"))?;
        let watcher = Watcher {
            api: self.api.clone(),
            creds,
            target,
            decision,
            keys_only: r.keys_only,
            progress: r.progress_notify,
            position,
            changes,
            stopping: self.api.state.stopping(),
            out,
            last_sent: Instant::now(),
        };
        tokio::spawn(watcher.run());
        Ok(Response::new(ReceiverStream::new(rx)))
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
                Err(e) => {
                    self.queue(Err(e)).await;
                    return;
                }
            }
        }
    }

    /// Delivers the history from the position through what this node has
    /// applied. False if the client went away.
    async fn catch_up(&mut self) -> Result<bool, Status> {
        loop {
            let through = self.api.state.applied_index();
            if self.position > through {
                return Ok(true);
            }
            let (state, from) = (self.api.state.clone(), self.position);
            match blocking(move || state.read_history(from, through, PAGE_BYTES)).await? {
                Page::Compacted { floor } => return Err(slow(self.position, floor)),
                Page::Events { events, through } => {
                    if !self.deliver(&events, through).await? || !self.progress_if_quiet().await {
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
        self.send(progress).await
    }

    /// Delivers live changes until the watcher must catch up again, the
    /// client goes away, or the node stops.
    async fn follow(&mut self) -> Result<Followed, Status> {
        loop {
            let quiet_until = self.last_sent + PROGRESS_EVERY;
            tokio::select! {
                notice = self.changes.recv() => match notice {
                    Ok(Notice::Applied { revision, events }) => {
                        if revision >= self.position && !self.deliver(&events, revision).await? {
                            return Ok(Followed::Gone);
                        }
                    }
                    Ok(Notice::Installed) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        return Ok(Followed::CatchUp);
                    }
                    Ok(Notice::Closed) | Err(broadcast::error::RecvError::Closed) => {
                        return Err(status::unavailable(
                            reason::SHUTDOWN,
                            format!("node is shutting down; resume from revision {}", self.position),
                            None,
                        ));
                    }
                },
                () = tokio::time::sleep_until(quiet_until), if self.progress => {
                    if !self.progress_if_quiet().await {
                        return Ok(Followed::Gone);
                    }
                }
                () = self.out.closed() => return Ok(Followed::Gone),
            }
        }
    }

    /// Sends the changes at or after the position that the watcher may
    /// see, and moves the position past `through`. False if the client
    /// went away.
    async fn deliver(&mut self, events: &[Event], through: u64) -> Result<bool, Status> {
        self.recheck()?;
        let events: Vec<pb::WatchEvent> = events
            .iter()
            .filter(|e| e.revision >= self.position && self.visible(e))
            .map(|e| self.event(e))
            .collect();
        self.position = through + 1;
        for response in responses(events, through, PAGE_BYTES) {
            if !self.send(response).await {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Queues a response for the client; false if the client went away
    /// or the node is stopping (the stream then ends, and the client
    /// resumes elsewhere).
    async fn send(&mut self, response: pb::WatchResponse) -> bool {
        self.last_sent = Instant::now();
        self.queue(Ok(response)).await
    }

    async fn queue(&mut self, item: Result<pb::WatchResponse, Status>) -> bool {
        tokio::select! {
            sent = self.out.send(item) => sent.is_ok(),
            _ = self.stopping.wait_for(|s| *s) => false,
        }
    }

    /// Decides again once the auth state changed: a watch lasts, grants
    /// may not.
    fn recheck(&mut self) -> Result<(), Status> {
        if !std::ptr::eq(Arc::as_ptr(&self.api.state.auth()), self.decision.view()) {
            self.decision = self.api.guard.check_some(&self.creds, &self.target.need())?;
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

/// A watch from before the history this node keeps.
fn compacted(from: u64, floor: u64) -> Status {
    status::with_detail(
        Code::OutOfRange,
        format!(
            "revision {from} is compacted: this node's watch history starts at revision {floor} \
             (read the current state, then watch from its revision + 1)"
        ),
        pb::ErrorDetail {
            reason: reason::COMPACTED.into(),
            compact_revision: floor,
            ..Default::default()
        },
    )
}

/// A watcher that fell behind the history kept while it was served.
fn slow(position: u64, floor: u64) -> Status {
    status::with_detail(
        Code::ResourceExhausted,
        format!(
            "this watch fell behind: it was at revision {position}, and the watch history now starts at \
             revision {floor} (consume faster, or keep more history with --watch-history)"
        ),
        pb::ErrorDetail {
            reason: reason::SLOW_WATCHER.into(),
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
