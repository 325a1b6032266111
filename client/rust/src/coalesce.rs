//! Call coalescing: concurrent requests of one [`Client`] share calls.
//!
//! A kind of request (writes, point reads) has one [`Coalescer`] per
//! client and a [`Calls`] that sends a list of them in one call. At most
//! `max_calls` such calls are in flight per client. A request that finds a
//! call free is sent at once, alone, on the caller's task: a lone caller
//! waits for nothing. A request that finds them all busy waits in a queue,
//! and when a call finishes, everything queued by then leaves together in
//! the next one. Under load a call carries many requests, so the per-call
//! costs (HTTP/2 stream, headers, a task per request on the node, a
//! syscall per answer) are paid once per call rather than once per request.
//!
//! Each request gets its own answer or error. Only requests in flight at
//! the same time, and so with no order between them, are ever sent
//! together; one whose caller gave up while it waited is never sent.
//!
//! [`Client`]: crate::Client

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::error::{Error, Result};

/// How a kind of request is sent: one call for a list of them, answered
/// one by one in order (`Err` for the whole call when it failed as a
/// whole), and the client's queue for them.
pub(crate) trait Calls: Clone + Send + Sync + 'static {
    type Item: Send + 'static;
    type Answer: Send + 'static;
    /// What a request is called in errors ("write", "read").
    const WHAT: &'static str;
    fn coalescer(&self) -> &Coalescer<Self::Item, Self::Answer>;
    /// How long a request may wait for a free call.
    fn deadline(&self) -> Duration;
    fn send(&self, items: Vec<Self::Item>) -> impl Future<Output = Result<Vec<Result<Self::Answer>>>> + Send;
}

/// A coalescer's bounds: calls in flight, and requests and bytes per call
/// (a single request larger than `max_bytes` goes alone).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub max_calls: usize,
    pub max_items: usize,
    pub max_bytes: usize,
}

/// How many requests of a kind a client has sent, in how many calls
/// (retries of a call not counted again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CallStats {
    pub sent: u64,
    pub calls: u64,
}

/// The calls in flight and the requests waiting for one.
pub(crate) struct Coalescer<I, A> {
    bounds: Bounds,
    queue: Mutex<Queue<I, A>>,
    sent: AtomicU64,
    calls: AtomicU64,
}

struct Queue<I, A> {
    waiting: VecDeque<Waiting<I, A>>,
    in_flight: usize,
}

pub(crate) struct Waiting<I, A> {
    item: I,
    size: usize,
    done: oneshot::Sender<Result<A>>,
}

impl<I, A> Coalescer<I, A> {
    pub(crate) fn new(bounds: Bounds) -> Self {
        Self {
            bounds: Bounds {
                max_calls: bounds.max_calls.max(1),
                ..bounds
            },
            queue: Mutex::new(Queue {
                waiting: VecDeque::new(),
                in_flight: 0,
            }),
            sent: AtomicU64::new(0),
            calls: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> CallStats {
        CallStats {
            sent: self.sent.load(Ordering::Relaxed),
            calls: self.calls.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue<I, A>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn count(&self, n: usize) {
        self.sent.fetch_add(n as u64, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
    }
}

/// Sends one request of `c`'s kind, alone or with others, and returns its
/// answer. `size` is its encoded size, for the bytes bound.
pub(crate) async fn send_one<C: Calls>(c: &C, item: C::Item, size: usize) -> Result<C::Answer> {
    match take_call_or_queue(c, item, size) {
        Ok(item) => {
            // This request goes now, on this task. When the call ends (or
            // this future is dropped), the call passes to a drain of
            // whatever queued meanwhile.
            let _slot = Slot(c.clone());
            c.coalescer().count(1);
            c.send(vec![item])
                .await?
                .pop()
                .unwrap_or_else(|| Err(Error::Other(format!("the node answered no result for the {}", C::WHAT))))
        }
        Err(rx) => wait(c, rx).await,
    }
}

/// Counts a call for this request if one is free and nothing waits (and
/// gives the request back to be sent now); else queues it.
fn take_call_or_queue<C: Calls>(
    c: &C,
    item: C::Item,
    size: usize,
) -> std::result::Result<C::Item, oneshot::Receiver<Result<C::Answer>>> {
    let co = c.coalescer();
    let max = co.bounds.max_calls;
    let mut q = co.lock();
    if q.in_flight < max && q.waiting.is_empty() {
        q.in_flight += 1;
        return Ok(item);
    }
    let (done, rx) = oneshot::channel();
    q.waiting.push_back(Waiting { item, size, done });
    // Requests queue only while every call is busy, and a call that ends
    // drains the queue; this covers a queue found without a call.
    if q.in_flight < max {
        q.in_flight += 1;
        drop(q);
        spawn_drain(c);
    }
    Err(rx)
}

async fn wait<C: Calls>(c: &C, rx: oneshot::Receiver<Result<C::Answer>>) -> Result<C::Answer> {
    match tokio::time::timeout(c.deadline(), rx).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => Err(Error::Other(format!(
            "the {} was dropped before it was answered",
            C::WHAT
        ))),
        Err(_) => Err(Error::Deadline {
            deadline: c.deadline(),
            last: "waiting for a free call (every call of this client is busy)".into(),
        }),
    }
}

/// Starts a task that sends what is queued, call after call, until the
/// queue is empty; the caller has counted its call in `in_flight`.
fn spawn_drain<C: Calls>(c: &C) {
    let c = c.clone();
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn(async move { drain(&c).await });
        }
        Err(_) => {
            // No runtime to send them on (a client dropped outside one):
            // the queued requests are answered with an error, never lost
            // silently.
            let mut q = c.coalescer().lock();
            q.in_flight -= 1;
            for w in q.waiting.drain(..) {
                let _ = w.done.send(Err(Error::Other(format!(
                    "no async runtime to send the {} on",
                    C::WHAT
                ))));
            }
        }
    }
}

async fn drain<C: Calls>(c: &C) {
    let co = c.coalescer();
    loop {
        let batch = {
            let mut q = co.lock();
            let batch = take_batch(&mut q.waiting, co.bounds);
            if batch.is_empty() {
                q.in_flight -= 1;
                return;
            }
            batch
        };
        co.count(batch.len());
        let (items, dones): (Vec<_>, Vec<_>) = batch.into_iter().map(|w| (w.item, w.done)).unzip();
        match c.send(items).await {
            Ok(answers) => {
                for (done, a) in dones.into_iter().zip(answers) {
                    let _ = done.send(a);
                }
            }
            Err(e) => {
                for done in dones {
                    let _ = done.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Takes the next call's requests off the queue: in order, up to the
/// bounds, at least one; requests whose caller has given up are dropped
/// unsent.
fn take_batch<I, A>(waiting: &mut VecDeque<Waiting<I, A>>, b: Bounds) -> Vec<Waiting<I, A>> {
    let mut batch = Vec::new();
    let mut bytes = 0;
    while let Some(w) = waiting.front() {
        if w.done.is_closed() {
            waiting.pop_front();
            continue;
        }
        if !batch.is_empty() && (batch.len() >= b.max_items || bytes + w.size > b.max_bytes) {
            break;
        }
        bytes += w.size;
        batch.extend(waiting.pop_front());
    }
    batch
}

/// A call slot held by a request sent on its caller's task. On drop, the
/// slot goes to a drain of the queue if anything waits, else it is freed.
struct Slot<C: Calls>(C);

impl<C: Calls> Drop for Slot<C> {
    fn drop(&mut self) {
        let mut q = self.0.coalescer().lock();
        if q.waiting.is_empty() {
            q.in_flight -= 1;
        } else {
            drop(q);
            spawn_drain(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds {
        max_calls: 8,
        max_items: 256,
        max_bytes: 4 << 20,
    };

    fn waiting(n: usize, size: usize) -> (Waiting<usize, ()>, oneshot::Receiver<Result<()>>) {
        let (done, rx) = oneshot::channel();
        (Waiting { item: n, size, done }, rx)
    }

    #[test]
    fn a_call_takes_requests_in_order_within_its_bounds_and_skips_the_abandoned() {
        let mut queue = VecDeque::new();
        let mut receivers = Vec::new();
        for i in 0..B.max_items * 2 {
            let (w, rx) = waiting(i, 100);
            queue.push_back(w);
            // Every third caller has given up.
            if i % 3 != 0 {
                receivers.push(rx);
            }
        }
        let first = take_batch(&mut queue, B);
        assert_eq!(first.len(), B.max_items);
        assert!(first.iter().all(|w| !w.done.is_closed()));
        assert!(first.windows(2).all(|p| p[0].item < p[1].item));
        let second = take_batch(&mut queue, B);
        assert!(!second.is_empty() && queue.is_empty());
        assert_eq!(first.len() + second.len(), receivers.len());

        // By bytes: a request that would pass the bound waits for the next
        // call; one larger than the bound goes alone.
        let max = B.max_bytes;
        let (a, _ra) = waiting(0, max / 2);
        let (b, _rb) = waiting(1, max / 2 + 1);
        let (c, _rc) = waiting(2, max * 2);
        let (d, _rd) = waiting(3, 10);
        queue.extend([a, b, c, d]);
        let sizes = |q: &mut VecDeque<Waiting<usize, ()>>| take_batch(q, B).iter().map(|w| w.size).collect::<Vec<_>>();
        assert_eq!(sizes(&mut queue), [max / 2]);
        assert_eq!(sizes(&mut queue), [max / 2 + 1]);
        assert_eq!(sizes(&mut queue), [max * 2]);
        assert_eq!(sizes(&mut queue), [10]);
        assert!(take_batch(&mut queue, B).is_empty());
    }
}
