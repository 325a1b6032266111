//! Crashes: kill -9 the leader while clients write; nothing acknowledged is
//! lost, and the killed node comes back from its data dir and catches up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use handlestore_tests::TestCluster;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn killing_the_leader_loses_no_acknowledged_write() {
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(cluster.client().handle_store("failover").build());
    let acked: Arc<Mutex<HashMap<String, Value>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..8 {
        let (store, acked, stop) = (store.clone(), acked.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0u64;
            let mut failed = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let value = json!({"writer": w, "n": n});
                // An error means "unknown outcome": it may or may not be
                // applied, so it is simply not counted as acknowledged.
                match store.mint(value.clone(), Ttl::Default).await {
                    Ok(id) => {
                        acked.lock().expect("lock").insert(id, value);
                    }
                    Err(_) => failed += 1,
                }
                n += 1;
            }
            failed
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let before_kill = acked.lock().expect("lock").len();
    cluster.kill(leader);
    tokio::time::sleep(Duration::from_secs(4)).await;
    stop.store(true, Ordering::Relaxed);
    let mut failed = 0;
    for w in writers {
        failed += w.await.expect("writer");
    }
    let acked = acked.lock().expect("lock").clone();
    eprintln!(
        "acknowledged {} writes ({before_kill} before the kill), {failed} failed",
        acked.len()
    );
    assert!(
        acked.len() > before_kill,
        "writes continued after the leader was killed"
    );

    let new_leader = cluster.wait_leader(Duration::from_secs(15)).await.expect("new leader");
    assert_ne!(new_leader, leader);
    for (id, value) in &acked {
        let got = store.get(id).await.expect("read after failover");
        assert_eq!(got.as_ref(), Some(value), "acknowledged handle {id} survived the crash");
    }
    // Writes with an unknown outcome may or may not have been applied;
    // nothing else may appear.
    let len = store.len().await.expect("len");
    assert!(
        len >= acked.len() as u64 && len <= acked.len() as u64 + failed,
        "len {len} is outside [{}, {}]",
        acked.len(),
        acked.len() as u64 + failed
    );

    // The killed node restarts from its data dir and catches up.
    cluster.restart(leader).expect("restart");
    let target = cluster.status(new_leader).await.expect("status").applied_index;
    cluster
        .wait_applied(leader, target, Duration::from_secs(30))
        .await
        .expect("caught up");
    let back = cluster.client_for(leader).handle_store::<Value>("failover").build();
    for (id, value) in &acked {
        let got = back
            .get_with(id, Consistency::Stale)
            .await
            .expect("stale read on the restarted node");
        assert_eq!(got.as_ref(), Some(value), "restarted node has {id}");
    }
}
