//! Founding a new cluster (`--initial-cluster`): any majority of the
//! initial members forms it, whichever they are; a member absent at the
//! start joins it when it arrives; a restart never founds again. (A member
//! whose clock is off at the start is in clock.rs, with the other clock
//! tests.)

use std::time::{Duration, Instant};

use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use handlestore_tests::TestCluster;
use serde_json::{Value, json};

const FOUNDED: &str = "founding a new cluster";

fn founded(cluster: &TestCluster, n: u64) -> usize {
    cluster.log(n).matches(FOUNDED).count()
}

/// Node 1 is not started with the others: nodes 2 and 3 form the cluster
/// and take writes; node 1 arrives a minute later and joins it (it
/// follows, it has every write, it founds nothing). Then all three stop and
/// start again: nobody founds a cluster again, and the data is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_2_and_3_found_the_cluster_node_1_joins_a_minute_late_and_a_restart_founds_nothing() {
    let started = Instant::now();
    let mut cluster = TestCluster::builder(3)
        .absent(1)
        .start()
        .await
        .expect("nodes 2 and 3 form a cluster without node 1");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    assert_ne!(leader, 1);
    assert!(
        founded(&cluster, 2) + founded(&cluster, 3) >= 1,
        "{}",
        cluster.log_tail(2, 20)
    );
    let store: ClusterHandleStore<Value> = cluster.client_for(leader).handle_store("found").build();
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(store.mint(json!(i), Ttl::Never).await.expect("mint without node 1"));
    }

    tokio::time::sleep(Duration::from_secs(60).saturating_sub(started.elapsed())).await;
    cluster.restart(1).expect("node 1 arrives");
    let applied = cluster.status(leader).await.expect("status").applied_index;
    cluster
        .wait_applied(1, applied, Duration::from_secs(30))
        .await
        .expect("node 1 catches up");
    let s = cluster.status(1).await.expect("status");
    assert_eq!(s.leader_id, leader, "node 1 follows the cluster's leader: {s:?}");
    assert_eq!(founded(&cluster, 1), 0, "node 1 joined, it founded nothing");
    assert!(s.members.iter().any(|m| m.id == 1 && m.voter), "{s:?}");
    let on_1: ClusterHandleStore<Value> = cluster
        .client_for(1)
        .handle_store("found")
        .consistency(Consistency::Linearizable)
        .build();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(on_1.get(id).await.expect("get"), Some(json!(i)));
    }

    let before: Vec<usize> = (1..=3).map(|n| founded(&cluster, n)).collect();
    for n in 1..=3 {
        cluster.stop(n).expect("stop");
    }
    for n in 1..=3 {
        cluster.restart(n).expect("start again");
    }
    cluster
        .wait_leader(Duration::from_secs(30))
        .await
        .expect("a leader again");
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("found").build();
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(
            store.get(id).await.expect("get"),
            Some(json!(i)),
            "kept across the restart"
        );
    }
    let after: Vec<usize> = (1..=3).map(|n| founded(&cluster, n)).collect();
    assert_eq!(before, after, "a restart founds nothing");
}

/// A healthy cluster's first start, with the log filter a node uses when
/// `RUST_LOG` is not set: a leader is elected and writes go, and no node
/// logs a warning or an error (an operator who greps for them finds none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_first_start_logs_no_warning_or_error() {
    let filter = handlestore_node::cli::node_log_filter();
    let mut builder = TestCluster::builder(3);
    for id in 1..=3 {
        builder = builder.node_env(id, "RUST_LOG", &filter);
    }
    let cluster = builder.start().await.expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("quiet").build();
    for n in 0..20 {
        store.mint(json!({"n": n}), Ttl::Default).await.expect("mint");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    for id in 1..=3 {
        let log = cluster.log(id);
        let loud: Vec<&str> = log
            .lines()
            .filter(|l| l.contains(" WARN ") || l.contains("ERROR "))
            .collect();
        assert!(loud.is_empty(), "node {id} (leader {leader}) logged: {loud:#?}");
    }
}
