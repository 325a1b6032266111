//! What a node holds for watchers' clients: each watcher's responses that
//! its connection has not taken yet, counted in bytes against the
//! watcher's share and against the node's budget for all of them
//! (`--watch-memory-mb`, of which the recent changes kept for live
//! delivery, [`state::recent`](crate::state::recent), take a part of their own).
//!
//! A response counts from the moment it is queued until the transport
//! asks for the one after it (the last one taken may still sit in the
//! connection's buffers). A watcher with more to send than its share
//! allows waits for its client to take something; if the client takes
//! nothing for [`PATIENCE`], the watcher is cut off: its queue is dropped
//! at once and the stream ends with `RESOURCE_EXHAUSTED` (`slow_watcher`),
//! whether the client reads again or not. When all watchers together pass
//! the node's budget, the one holding most is cut off at once. Either way
//! the client resumes from the revision it reached (the error says which).

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use handlestore_proto::watch_out::WatchOut;
use tokio::sync::watch;
use tonic::Status;

/// How long a watcher whose share is full waits for its client to take
/// something before it is cut off.
pub const PATIENCE: Duration = Duration::from_secs(1);
/// What a queued response costs beyond its encoding.
pub const OVERHEAD: usize = 64;
/// Pages of history read at once on a node.
const HISTORY_READS: usize = 4;

type Item = Result<WatchOut, Status>;

/// Makes the error a watcher cut off for falling behind gets.
pub type Slow = dyn Fn() -> Status + Send + Sync;

/// The node's budget for what watchers hold, and the watchers.
pub struct WatchBudget {
    /// Bytes all watchers may hold together.
    limit: usize,
    /// Bytes one watcher may hold.
    share: usize,
    used: AtomicUsize,
    cut: AtomicU64,
    next_id: AtomicU64,
    watchers: Mutex<HashMap<u64, Weak<Shared>>>,
    /// Pages of history read at once, over all watchers (a page is held
    /// in memory, uncounted, until it is queued).
    history_reads: tokio::sync::Semaphore,
}

/// Why a watcher stopped sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Its client went away (or the watcher ended the stream itself).
    Gone,
    /// It was cut off for falling behind (the error is queued already).
    Cut,
}

struct Shared {
    id: u64,
    budget: Arc<WatchBudget>,
    queue: Mutex<Queue>,
    /// Set once the stream ended (cut, or its client gone); the watcher's
    /// task waits on it beside its other work.
    ended: watch::Sender<Option<Ended>>,
    /// Bumped whenever the client takes a response or releases the last
    /// one it took (room was made).
    taken: watch::Sender<u64>,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<(Item, usize)>,
    /// Bytes of the queued items and of the last one taken.
    held: usize,
    in_flight: usize,
    /// No more items come: end the stream once the queue is empty.
    done: bool,
    waker: Option<Waker>,
}

impl WatchBudget {
    /// All watchers hold at most `limit` bytes, one at most `share`.
    pub fn new(limit: usize, share: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            share: share.min(limit).max(1),
            used: AtomicUsize::new(0),
            cut: AtomicU64::new(0),
            next_id: AtomicU64::new(0),
            watchers: Mutex::new(HashMap::new()),
            history_reads: tokio::sync::Semaphore::new(HISTORY_READS),
        })
    }

    /// Waits for a turn to read a page of history.
    pub async fn history_read(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.history_reads.acquire().await.ok()
    }

    /// A new watcher's outbox, and the stream its client reads.
    pub fn open(self: &Arc<Self>) -> (Outbox, OutboxStream) {
        let shared = Arc::new(Shared {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            budget: self.clone(),
            queue: Mutex::new(Queue::default()),
            ended: watch::channel(None).0,
            taken: watch::channel(0).0,
        });
        self.registry().insert(shared.id, Arc::downgrade(&shared));
        (Outbox { shared: shared.clone() }, OutboxStream { shared })
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Weak<Shared>>> {
        self.watchers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes held for watchers now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Watches open now.
    pub fn watchers(&self) -> usize {
        self.registry().len()
    }

    /// Watchers cut off since start.
    pub fn cut_count(&self) -> u64 {
        self.cut.load(Ordering::Relaxed)
    }

    /// While all watchers hold more than the budget, cuts off the one that
    /// holds most.
    fn enforce(&self, why: &Slow) {
        while self.used() > self.limit {
            // Ended streams cannot be cut further (what they hold leaves
            // as their clients take it, or go).
            let held = |s: &Shared| {
                let q = s.lock();
                if q.done { 0 } else { q.held }
            };
            let largest = self
                .registry()
                .values()
                .filter_map(Weak::upgrade)
                .max_by_key(|s| held(s));
            match largest {
                Some(s) if held(&s) > 0 => s.cut(why()),
                _ => return,
            }
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn release(&self, q: &mut Queue, bytes: usize) {
        q.held -= bytes;
        self.budget.used.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Drops what is queued, queues `error` alone and ends the stream: a
    /// watcher cut off for falling behind.
    fn cut(&self, error: Status) {
        if self.end_now(error) {
            self.budget.cut.fetch_add(1, Ordering::Relaxed);
            self.ended.send_replace(Some(Ended::Cut));
        }
    }

    /// Drops what is queued, queues `error` alone and ends the stream;
    /// false if it had ended already.
    fn end_now(&self, error: Status) -> bool {
        {
            let mut q = self.lock();
            if q.done {
                return false;
            }
            let queued: usize = q.items.drain(..).map(|(_, n)| n).sum();
            self.release(&mut q, queued);
            q.items.push_back((Err(error), 0));
            q.done = true;
            if let Some(w) = q.waker.take() {
                w.wake();
            }
        }
        true
    }
}

/// The watcher's end: queues responses for its client.
pub struct Outbox {
    shared: Arc<Shared>,
}

impl Outbox {
    /// Whether, and why, the stream ended.
    pub fn ended(&self) -> Option<Ended> {
        *self.shared.ended.borrow()
    }

    /// Resolves once the stream ended (cut off, or its client gone).
    pub async fn wait_ended(&self) -> Ended {
        let mut rx = self.shared.ended.subscribe();
        match rx.wait_for(Option::is_some).await {
            Ok(e) => e.unwrap_or(Ended::Gone),
            Err(_) => Ended::Gone,
        }
    }

    /// Whether about `bytes` more fit in the watcher's share now (anything
    /// fits an empty queue).
    pub fn fits(&self, bytes: usize) -> bool {
        let held = self.shared.lock().held;
        held == 0 || held + bytes <= self.shared.budget.share
    }

    /// Queues responses at once, whatever the room (the caller made sure
    /// there is, without holding them meanwhile); past the node's budget,
    /// the watcher holding most is cut off.
    pub fn push_all(&self, responses: Vec<WatchOut>, slow: &Slow) -> Result<(), Ended> {
        {
            let mut q = self.shared.lock();
            if let Some(e) = self.ended() {
                return Err(e);
            }
            for response in responses {
                let bytes = prost::Message::encoded_len(&response) + OVERHEAD;
                q.items.push_back((Ok(response), bytes));
                q.held += bytes;
                self.shared.budget.used.fetch_add(bytes, Ordering::Relaxed);
            }
            if let Some(w) = q.waker.take() {
                w.wake();
            }
        }
        self.shared.budget.enforce(slow);
        self.ended().map_or(Ok(()), Err)
    }

    /// Waits until about `bytes` more fit in the watcher's share: while it
    /// is full, the client must take something every [`PATIENCE`], or the
    /// watcher is cut off with `slow()`'s error.
    pub async fn wait_for_room(&self, bytes: usize, slow: &Slow) -> Result<(), Ended> {
        let mut taken = self.shared.taken.subscribe();
        loop {
            let fits = self.fits(bytes);
            if let Some(e) = self.ended() {
                return Err(e);
            }
            if fits {
                return Ok(());
            }
            let waited = tokio::select! {
                changed = tokio::time::timeout(PATIENCE, taken.changed()) => changed,
                e = self.wait_ended() => return Err(e),
            };
            if !matches!(waited, Ok(Ok(()))) {
                self.shared.cut(slow());
                return Err(Ended::Cut);
            }
        }
    }

    /// Ends the stream with `error` at once, dropping what is queued (the
    /// node is stopping: a client that reads nothing must not hold it up).
    pub fn end_now(&self, error: Status) {
        self.shared.end_now(error);
    }

    /// Ends the stream with `error` after what is queued.
    pub fn finish_with(&self, error: Status) {
        let mut q = self.shared.lock();
        if q.done {
            return;
        }
        q.items.push_back((Err(error), 0));
        q.done = true;
        if let Some(w) = q.waker.take() {
            w.wake();
        }
    }
}

impl Drop for Outbox {
    /// The watcher is done: the stream ends once its queue is taken.
    fn drop(&mut self) {
        let mut q = self.shared.lock();
        q.done = true;
        if let Some(w) = q.waker.take() {
            w.wake();
        }
    }
}

/// The client's end: what tonic sends.
pub struct OutboxStream {
    shared: Arc<Shared>,
}

impl futures::Stream for OutboxStream {
    type Item = Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let s = &self.shared;
        let mut q = s.lock();
        // Asked for the next one: the last one taken has left our hands.
        let in_flight = std::mem::take(&mut q.in_flight);
        s.release(&mut q, in_flight);
        let popped = q.items.pop_front();
        let item = match popped {
            Some((item, bytes)) => {
                q.in_flight = bytes;
                Poll::Ready(Some(item))
            }
            None if q.done => Poll::Ready(None),
            None => {
                q.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        };
        drop(q);
        // Room was made if a response was taken or the last one released:
        // a watcher waiting for room with nothing queued (a response larger
        // than half its share) must hear the release too, or it is cut.
        if item.is_ready() || in_flight > 0 {
            s.taken.send_modify(|n| *n += 1);
        }
        item
    }
}

impl Drop for OutboxStream {
    /// The client went away (or the stream ended): everything it held is
    /// released, and the watcher stops.
    fn drop(&mut self) {
        let s = &self.shared;
        {
            let mut q = s.lock();
            let held = q.held;
            s.release(&mut q, held);
            q.items.clear();
            q.in_flight = 0;
            q.done = true;
        }
        s.budget.registry().remove(&s.id);
        s.ended.send_if_modified(|e| {
            let first = e.is_none();
            if first {
                *e = Some(Ended::Gone);
            }
            first
        });
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use handlestore_proto::v1 as pb;

    use super::*;

    fn response(bytes: usize) -> pb::WatchResponse {
        pb::WatchResponse {
            events: vec![pb::WatchEvent {
                value: Some(pb::StateValue {
                    kind: Some(pb::state_value::Kind::Bytes(vec![0; bytes])),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn slow() -> Status {
        handlestore_proto::reason::Reason::SlowWatcher.status("slow")
    }

    /// As a watcher sends: room first, then the response.
    async fn send(out: &Outbox, response: pb::WatchResponse) -> Result<(), Ended> {
        out.wait_for_room(prost::Message::encoded_len(&response), &slow).await?;
        out.push_all(vec![response.into()], &slow)
    }

    #[tokio::test]
    async fn a_watcher_whose_client_takes_nothing_is_cut_and_its_queue_dropped() {
        let budget = WatchBudget::new(100_000, 10_000);
        let (out, mut stream) = budget.open();
        for _ in 0..3 {
            send(&out, response(3_000)).await.expect("within the share");
        }
        assert!(budget.used() > 9_000);
        let e = send(&out, response(3_000)).await.expect_err("the share is full");
        assert_eq!(e, Ended::Cut);
        assert_eq!(budget.used(), 0, "the queue was dropped at once");
        assert_eq!(budget.cut_count(), 1);
        let first = stream.next().await.expect("an item");
        assert_eq!(
            first.expect_err("only the error is left").code(),
            tonic::Code::ResourceExhausted
        );
        assert!(stream.next().await.is_none(), "then the stream ends");
    }

    #[tokio::test]
    async fn a_reading_client_makes_room() {
        let budget = WatchBudget::new(100_000, 10_000);
        let (out, mut stream) = budget.open();
        let reader = tokio::spawn(async move {
            let mut n = 0;
            while let Some(item) = stream.next().await {
                item.expect("no error");
                n += 1;
            }
            n
        });
        for _ in 0..50 {
            send(&out, response(3_000)).await.expect("room is made");
        }
        drop(out);
        assert_eq!(reader.await.expect("reader"), 50);
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.watchers(), 0);
    }

    #[tokio::test]
    async fn a_response_over_half_the_share_waits_for_the_release_of_the_last() {
        // The client holds the first response; the watcher waits for room
        // for the second with nothing else queued. The client's next read
        // releases the first and finds nothing: that release is the room
        // the watcher waits for (else it is cut after PATIENCE).
        let budget = WatchBudget::new(100_000, 10_000);
        let (out, mut stream) = budget.open();
        send(&out, response(6_000))
            .await
            .expect("an empty queue takes anything");
        stream.next().await.expect("an item").expect("no error");
        let (sent, second) = tokio::join!(send(&out, response(6_000)), async {
            tokio::task::yield_now().await;
            stream.next().await
        });
        sent.expect("the release made room");
        second.expect("an item").expect("the second response, not a cut");
        assert_eq!(budget.cut_count(), 0);
    }

    #[tokio::test]
    async fn past_the_node_budget_the_largest_holder_is_cut() {
        let budget = WatchBudget::new(10_000, 8_000);
        let (idle, _idle_stream) = budget.open();
        send(&idle, response(6_000)).await.expect("fits");
        let (other, mut other_stream) = budget.open();
        send(&other, response(2_000)).await.expect("fits");
        send(&other, response(3_000)).await.expect("fits its share");
        assert_eq!(idle.ended(), Some(Ended::Cut), "the largest holder went");
        assert_eq!(other.ended(), None);
        assert!(budget.used() <= 10_000);
        assert!(other_stream.next().await.expect("item").is_ok());
    }

    #[tokio::test]
    async fn a_client_gone_releases_everything_and_ends_the_watcher() {
        let budget = WatchBudget::new(100_000, 10_000);
        let (out, stream) = budget.open();
        send(&out, response(1_000)).await.expect("fits");
        drop(stream);
        assert_eq!(budget.used(), 0);
        assert_eq!(out.wait_ended().await, Ended::Gone);
        assert!(send(&out, response(1)).await.is_err());
    }
}
