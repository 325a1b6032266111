//! Replicated expiry: a handle expires on every node, Len drops, and a
//! leader change neither resets nor cancels the TTL.

use std::time::{Duration, Instant};

use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use handlestore_tests::TestCluster;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn expiry_is_replicated_and_survives_a_leader_change() {
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("ttl").build();
    let ttl = Duration::from_secs(5);
    let start = Instant::now();
    let mut short = Vec::new();
    for i in 0..20 {
        short.push(store.mint(json!(i), Ttl::After(ttl)).await.expect("mint"));
    }
    let keep = store.mint(json!("forever"), Ttl::Never).await.expect("mint");
    assert_eq!(store.len().await.expect("len"), 21);

    // Depose the leader well before the TTL ends.
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    cluster.kill(leader);
    let new_leader = cluster.wait_leader(Duration::from_secs(15)).await.expect("new leader");
    assert_ne!(leader, new_leader);
    let elapsed = start.elapsed();
    assert!(
        elapsed < ttl,
        "the election took {elapsed:?}, longer than the TTL; the test proves nothing"
    );
    // Still alive before the TTL (the new leader did not expire early).
    assert_eq!(store.get(&short[0]).await.expect("get"), Some(json!(0)));

    // Past the original TTL, measured from the mint: gone, although the
    // leader changed in between (a TTL that reset on leader change would
    // still be alive here).
    tokio::time::sleep((start + ttl + Duration::from_millis(500)).saturating_duration_since(Instant::now())).await;
    cluster.restart(leader).expect("restart");
    let target = cluster.status(new_leader).await.expect("status").applied_index;
    cluster
        .wait_applied(leader, target, Duration::from_secs(30))
        .await
        .expect("caught up");
    for node in 1..=3 {
        let s = cluster.client_for(node).handle_store::<Value>("ttl").build();
        for id in &short {
            assert_eq!(
                s.get_with(id, Consistency::Stale).await.expect("get"),
                None,
                "{id} expired on node {node}"
            );
        }
        assert_eq!(
            s.get_with(&keep, Consistency::Stale).await.expect("get"),
            Some(json!("forever"))
        );
        assert_eq!(
            s.len_with(Consistency::Stale).await.expect("len"),
            1,
            "len dropped on node {node}"
        );
    }
    assert!(
        !store.delete(&short[1]).await.expect("delete"),
        "an expired handle did not exist"
    );
    assert!(
        !store.put(&short[2], json!("new"), Ttl::Never).await.expect("put"),
        "nor for put"
    );
}
