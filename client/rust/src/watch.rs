//! Watching changes: [`Client::watch`] opens a watch on one node and, when
//! that node fails, stops or goes quiet, resumes on another from the
//! revision after the last one delivered, so a consumer sees every change
//! once, in revision order, whichever node serves it.
//!
//! ```no_run
//! # async fn demo(client: handlestore_client::Client) -> handlestore_client::Result<()> {
//! use handlestore_client::watch::{WatchOptions, WatchTarget};
//! let mut watch = client.watch(WatchTarget::prefix("carts/"), WatchOptions::default()).await?;
//! loop {
//!     let batch = watch.next().await?;
//!     for change in batch.changes {
//!         println!("{} {:?} {}", change.revision, change.kind, change.key);
//!     }
//! }
//! # }
//! ```

use std::time::Duration;

use handlestore_proto::limits::WATCH_PROGRESS_EVERY;
use handlestore_proto::v1 as pb;
use pb::watch_client::WatchClient;
use tokio::time::Instant;

use crate::cluster::Client;
use crate::cluster_state::value_from_pb;
use crate::error::{Error, Result};
use crate::retry::{give_up, resumable};
use crate::state_tool::StateValue;
use crate::stubs::MAX_MESSAGE;

/// A watch that hears nothing (not even progress) for this long takes its
/// node for lost.
const SILENCE: Duration = WATCH_PROGRESS_EVERY.saturating_mul(3);

/// What to watch, in the client's namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchTarget {
    /// State keys under a prefix ("" = all of them).
    Prefix(String),
    /// One state key.
    Key(String),
    /// Every handle of a store.
    Store(String),
    /// One handle.
    Handle { store: String, id: String },
}

impl WatchTarget {
    pub fn prefix(p: impl Into<String>) -> Self {
        WatchTarget::Prefix(p.into())
    }

    pub fn key(k: impl Into<String>) -> Self {
        WatchTarget::Key(k.into())
    }

    pub fn store(s: impl Into<String>) -> Self {
        WatchTarget::Store(s.into())
    }

    pub fn handle(store: impl Into<String>, id: impl Into<String>) -> Self {
        WatchTarget::Handle {
            store: store.into(),
            id: id.into(),
        }
    }

    fn to_pb(&self) -> pb::watch_request::Target {
        use pb::watch_request::Target as T;
        match self.clone() {
            WatchTarget::Prefix(p) => T::Prefix(p),
            WatchTarget::Key(k) => T::Key(k),
            WatchTarget::Store(s) => T::Store(s),
            WatchTarget::Handle { store, id } => T::Handle(pb::HandleRef { store, id }),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// The first revision to deliver (inclusive); None = the changes after
    /// now (a linearizable read point).
    pub from: Option<u64>,
    /// Also return batches without changes when the watch is idle, with
    /// the revision it reached (every couple of seconds).
    pub progress: bool,
    /// Leave values out of puts.
    pub keys_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Put,
    Delete,
    /// Removed because its TTL ran out.
    Expire,
}

/// One change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub kind: ChangeKind,
    /// The revision of the change (the changes of one write share it).
    pub revision: u64,
    /// The handle store, for changes to handles.
    pub store: Option<String>,
    /// The state key, or the handle id.
    pub key: String,
    /// Puts: the new value (None with `keys_only`). Handles' values are
    /// bytes (their JSON, for `ClusterHandleStore`).
    pub value: Option<StateValue>,
    /// Puts: the entry's creation revision and expiry (unix ms, 0 = never).
    pub create_revision: u64,
    pub expires_at_ms: u64,
}

/// The changes of whole revisions, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchBatch {
    /// Every change through this revision has been delivered.
    pub revision: u64,
    /// Empty for a progress notice.
    pub changes: Vec<Change>,
}

/// A running watch; see the module docs.
pub struct Watch {
    client: Client,
    request: pb::WatchRequest,
    progress: bool,
    /// The next revision to deliver.
    position: u64,
    stream: Option<tonic::Streaming<pb::WatchResponse>>,
    node: usize,
}

impl Client {
    /// Starts watching `target`: returns once a node has established the
    /// watch, so every change after this call (or from `opts.from`) is
    /// delivered.
    pub async fn watch(&self, target: WatchTarget, opts: WatchOptions) -> Result<Watch> {
        let request = pb::WatchRequest {
            namespace: self.namespace().to_string(),
            target: Some(target.to_pb()),
            start_revision: opts.from.unwrap_or(0),
            progress_notify: true,
            keys_only: opts.keys_only,
        };
        let mut watch = Watch {
            client: self.clone(),
            request,
            progress: opts.progress,
            position: opts.from.unwrap_or(0),
            stream: None,
            node: self.watch_node(),
        };
        watch.connect().await?;
        Ok(watch)
    }
}

impl Watch {
    /// The next revision this watch delivers (resume a later watch from
    /// here).
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The next batch of changes (or, with `progress`, of none). Fails only
    /// for what resuming cannot fix: no node could take the watch within
    /// the client's deadline, the history moved past it
    /// ([`Error::Compacted`]), or the caller may no longer read what it
    /// watches. A node that cut this watch off for falling behind
    /// (`slow_watcher`: this consumer took nothing for a while) is asked
    /// again from the position.
    pub async fn next(&mut self) -> Result<WatchBatch> {
        loop {
            let Some(stream) = self.stream.as_mut() else {
                self.connect().await?;
                continue;
            };
            let lost = match tokio::time::timeout(SILENCE, stream.message()).await {
                Ok(Ok(Some(resp))) => match self.take(resp)? {
                    Some(batch) => return Ok(batch),
                    None => continue,
                },
                Ok(Ok(None)) => "the node ended the watch".to_string(),
                Ok(Err(s)) if resumable(&s) => s.message().to_string(),
                Ok(Err(s)) => return Err(give_up(s)),
                Err(_) => format!("nothing heard for {SILENCE:?}"),
            };
            tracing::debug!(node = self.node, position = self.position, "watch lost: {lost}");
            self.stream = None;
            self.node = (self.node + 1) % self.client.endpoints().len();
        }
    }

    /// The watch as a `Stream` of batches (ends after the first error).
    pub fn into_stream(self) -> impl futures::Stream<Item = Result<WatchBatch>> {
        futures::stream::unfold(Some(self), |watch| async move {
            let mut watch = watch?;
            match watch.next().await {
                Ok(b) => Some((Ok(b), Some(watch))),
                Err(e) => Some((Err(e), None)),
            }
        })
    }

    /// Opens the watch on a node, trying them in turn with backoff until
    /// the client's deadline passes.
    async fn connect(&mut self) -> Result<()> {
        let deadline = Instant::now() + self.client.deadline();
        let n = self.client.endpoints().len();
        let mut tries = 0u32;
        loop {
            let last = match self.open().await {
                Ok(()) => return Ok(()),
                // A node that cut a watch off as it opened (`slow_watcher`)
                // is asked again, as mid-stream.
                Err(s) if resumable(&s) => s,
                Err(s) => return Err(give_up(s)),
            };
            self.node = (self.node + 1) % n;
            let sleep = self.client.backoff(tries);
            tries += 1;
            if Instant::now() + sleep >= deadline {
                return Err(Error::Deadline {
                    deadline: self.client.deadline(),
                    last: format!("watch: {}", last.message()),
                });
            }
            tokio::time::sleep(sleep).await;
        }
    }

    /// Opens the watch on the current node from the position, and reads
    /// the answer that says it is established.
    async fn open(&mut self) -> std::result::Result<(), tonic::Status> {
        let channel = self
            .client
            .channel(self.node)
            .ok_or_else(|| tonic::Status::internal("no such endpoint"))?;
        let mut calls = WatchClient::new(channel).max_decoding_message_size(MAX_MESSAGE);
        let mut request = self.request.clone();
        if self.position > 0 {
            request.start_revision = self.position;
        }
        let opened = async {
            let mut stream = calls.watch(request).await?.into_inner();
            let created = stream
                .message()
                .await?
                .ok_or_else(|| tonic::Status::unavailable("the watch ended before it was established"))?;
            Ok::<_, tonic::Status>((stream, created))
        };
        let (stream, created) = tokio::time::timeout(SILENCE, opened)
            .await
            .map_err(|_| tonic::Status::deadline_exceeded("no answer to the watch"))??;
        if !created.created {
            return Err(tonic::Status::internal(
                "the node's first watch answer is not 'created'",
            ));
        }
        self.position = created.revision + 1;
        self.stream = Some(stream);
        Ok(())
    }

    /// The changes of a response not delivered yet (None if nothing is to
    /// be returned).
    fn take(&mut self, resp: pb::WatchResponse) -> Result<Option<WatchBatch>> {
        let from = self.position;
        self.position = self.position.max(resp.revision + 1);
        let changes = resp
            .events
            .into_iter()
            .filter(|e| e.revision >= from)
            .map(change_from_pb)
            .collect::<Result<Vec<_>>>()?;
        if changes.is_empty() && (!self.progress || resp.revision + 1 < from) {
            return Ok(None);
        }
        Ok(Some(WatchBatch {
            revision: resp.revision,
            changes,
        }))
    }
}

fn change_from_pb(e: pb::WatchEvent) -> Result<Change> {
    let kind = match pb::EventKind::try_from(e.kind) {
        Ok(pb::EventKind::Put) => ChangeKind::Put,
        Ok(pb::EventKind::Delete) => ChangeKind::Delete,
        Ok(pb::EventKind::Expire) => ChangeKind::Expire,
        Err(_) => return Err(Error::Other(format!("unknown change kind {}", e.kind))),
    };
    Ok(Change {
        kind,
        revision: e.revision,
        store: (!e.store.is_empty()).then_some(e.store),
        key: e.key,
        value: e.value.map(value_from_pb).transpose()?.flatten(),
        create_revision: e.create_revision,
        expires_at_ms: e.expires_at_ms,
    })
}
