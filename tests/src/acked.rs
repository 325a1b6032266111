//! Writes under load, and what a test checks of them after a fault (the
//! cluster tier's crash tests and the system tier's power-loss tests): every
//! acknowledged write on every node, nothing that was not written.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::TestCluster;
use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use handlestore_proto::limits::DEFAULT_NAMESPACE;
use serde_json::{Value, json};

/// Clients minting handles in a loop until stopped, remembering every
/// acknowledged one. An error means "unknown outcome": the write may or may
/// not be applied, so it is counted as failed, never as acknowledged.
pub struct Minters {
    acked: Arc<Mutex<HashMap<String, Value>>>,
    stop: Arc<AtomicBool>,
    writers: Vec<tokio::task::JoinHandle<u64>>,
    pace: Arc<Mutex<Pace>>,
}

/// When writes were acknowledged: how long the clients, together, went
/// without an acknowledgement at most.
struct Pace {
    last: Instant,
    longest: Duration,
}

impl Pace {
    fn acked(&mut self, now: Instant) {
        self.longest = self.longest.max(now - self.last);
        self.last = now;
    }

    /// The longest gap, counting the one still open.
    fn longest(&self, now: Instant) -> Duration {
        self.longest.max(now - self.last)
    }
}

impl Minters {
    pub fn start(store: &Arc<ClusterHandleStore<Value>>, clients: usize) -> Self {
        let acked: Arc<Mutex<HashMap<String, Value>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let pace = Arc::new(Mutex::new(Pace {
            last: Instant::now(),
            longest: Duration::ZERO,
        }));
        let writers = (0..clients)
            .map(|w| {
                let (store, acked, stop, pace) = (store.clone(), acked.clone(), stop.clone(), pace.clone());
                tokio::spawn(async move {
                    let (mut n, mut failed) = (0u64, 0u64);
                    while !stop.load(Ordering::Relaxed) {
                        let value = json!({"writer": w, "n": n});
                        match store.mint(value.clone(), Ttl::Default).await {
                            Ok(id) => {
                                acked.lock().expect("lock").insert(id, value);
                                pace.lock().expect("lock").acked(Instant::now());
                            }
                            Err(_) => failed += 1,
                        }
                        n += 1;
                    }
                    failed
                })
            })
            .collect();
        Self {
            acked,
            stop,
            writers,
            pace,
        }
    }

    /// The longest the clients went, together, without a write
    /// acknowledged, since they started (the gap still open counted).
    pub fn longest_gap(&self) -> Duration {
        self.pace.lock().expect("lock").longest(Instant::now())
    }

    /// Stops every client at once, dropping the writes in flight (their
    /// outcome stays unknown and they are not retried); returns the
    /// acknowledged writes.
    pub fn abort(self) -> HashMap<String, Value> {
        self.stop.store(true, Ordering::Relaxed);
        for w in &self.writers {
            w.abort();
        }
        self.acked.lock().expect("lock").clone()
    }

    pub fn acked_so_far(&self) -> usize {
        self.acked.lock().expect("lock").len()
    }

    /// Stops every client; returns the acknowledged writes and the number
    /// of writes with an unknown outcome.
    pub async fn stop(self) -> (HashMap<String, Value>, u64) {
        self.stop.store(true, Ordering::Relaxed);
        let mut failed = 0;
        for w in self.writers {
            failed += w.await.expect("writer");
        }
        let acked = self.acked.lock().expect("lock").clone();
        (acked, failed)
    }
}

/// Fails naming the acknowledged writes that `store` (`whose` data, for
/// the message) does not return as written, read at `consistency`.
pub async fn assert_read_back(
    store: &ClusterHandleStore<Value>,
    acked: &HashMap<String, Value>,
    consistency: Consistency,
    whose: &str,
) {
    let mut missing = Vec::new();
    for (id, value) in acked {
        let got = store.get_with(id, consistency).await.expect("read");
        if got.as_ref() != Some(value) {
            missing.push(id.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "{whose} lacks {} of {} acknowledged writes, e.g. {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
}

/// Waits until every node has applied what `leader` has, then reads
/// `acked` back from each node's own copy (namespace `ns`).
pub async fn assert_on_every_node(cluster: &TestCluster, leader: u64, ns: &str, acked: &HashMap<String, Value>) {
    let applied = cluster.status(leader).await.expect("status").applied_index;
    for node in [1, 2, 3] {
        cluster
            .wait_applied(node, applied, Duration::from_secs(30))
            .await
            .expect("caught up");
        let on = cluster.client_for(node).handle_store::<Value>(ns).build();
        assert_read_back(&on, acked, Consistency::Stale, &format!("node {node}")).await;
    }
}

/// How many handles of store `ns` node `id` holds, read from its own
/// copy: every acknowledged write, and of the writes with an unknown
/// outcome (`failed`) any number, nothing else.
pub async fn assert_held(cluster: &TestCluster, id: u64, ns: &str, acked: &HashMap<String, Value>, failed: u64) -> u64 {
    let on = cluster.client_for(id).handle_store::<Value>(ns).build();
    let len = on.len_with(Consistency::Stale).await.expect("len");
    assert!(
        len >= acked.len() as u64 && len <= acked.len() as u64 + failed,
        "node {id} holds {len} handles, outside [{}, {}]",
        acked.len(),
        acked.len() as u64 + failed
    );
    len
}

/// After a fault: every node catches up with the leader and holds every
/// acknowledged write of store `ns`, nothing beyond the writes with an
/// unknown outcome (`failed`), the same number of handles as the others,
/// and a usage count of the default namespace (kept apart, added to at
/// each apply) equal to what it holds: a batch applied twice would count
/// its handles twice. The store must be the namespace's only data.
pub async fn assert_whole(cluster: &TestCluster, ns: &str, acked: &HashMap<String, Value>, failed: u64) {
    let leader = cluster.wait_leader(Duration::from_secs(30)).await.expect("leader");
    assert_on_every_node(cluster, leader, ns, acked).await;
    let mut held = Vec::new();
    for node in [1, 2, 3] {
        let len = assert_held(cluster, node, ns, acked, failed).await;
        let status = cluster.status(node).await.expect("status");
        let counted = status
            .namespaces
            .iter()
            .find(|n| n.name == DEFAULT_NAMESPACE)
            .map_or(0, |n| n.entries);
        assert_eq!(counted, len, "node {node}'s usage count of the namespace");
        held.push(len);
    }
    assert!(held.windows(2).all(|w| w[0] == w[1]), "the nodes hold {held:?} handles");
}
