//! Reads on the leader's lease (`--read-lease`, node/src/raft/reads/lease.rs):
//! the leader answers linearizable reads without a quorum round while its
//! lease holds (counted in `handlestore_server_reads_on_lease_total`); with
//! `--read-lease false` every read takes a round. Reads on the lease see
//! every write acknowledged before them, on the leader and on a follower,
//! across leader transfers. The stale-read check under faults is the chaos
//! suite's (`IsolateLeader`, tests/tests/system/chaos.rs).

use std::time::Duration;

use handlestore_client::{HandleStore, Ttl};
use handlestore_tests::TestCluster;

const LEADER_WITHIN: Duration = Duration::from_secs(30);

/// Node `id`'s count of read rounds answered on its lease.
async fn reads_on_lease(cluster: &TestCluster, id: u64) -> u64 {
    cluster
        .metric(id, "handlestore_server_reads_on_lease_total")
        .await
        .unwrap_or_else(|| panic!("node {id} serves no reads_on_lease counter")) as u64
}

/// `n` linearizable gets of one handle, one after another, through the
/// leader; returns the leader.
async fn sequential_gets(cluster: &TestCluster, n: usize) -> u64 {
    let leader = cluster.wait_leader(LEADER_WITHIN).await.expect("leader");
    let carts = cluster.client_for(leader).handle_store::<String>("cart").build();
    let id = carts.mint("x".into(), Ttl::Never).await.expect("mint");
    for _ in 0..n {
        assert_eq!(carts.get(&id).await.expect("get").as_deref(), Some("x"));
    }
    leader
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_answers_reads_on_its_lease() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = sequential_gets(&cluster, 50).await;
    // The first read (or one after an idle spell) takes a round; the rest
    // of a run of reads a millisecond apart fall within the lease (about
    // a second in tests).
    let on_lease = reads_on_lease(&cluster, leader).await;
    assert!(on_lease >= 25, "only {on_lease} of 50 reads were answered on the lease");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_lease_every_read_takes_a_quorum_round() {
    let cluster = TestCluster::builder(3)
        .args(["--read-lease", "false"])
        .start()
        .await
        .expect("cluster");
    let leader = sequential_gets(&cluster, 50).await;
    for id in 1..=3 {
        assert_eq!(reads_on_lease(&cluster, id).await, 0, "node {id} (leader {leader})");
    }
}

/// After each transfer (which suspends the old leader's lease before the
/// target campaigns), a write acknowledged by the new leader is seen by a
/// linearizable read on every node, the old leader first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_on_the_lease_see_every_write_across_transfers() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let writer = cluster.client().handle_store::<u64>("reg").build();
    let id = writer.mint(0, Ttl::Never).await.expect("mint");
    for round in 1..=4u64 {
        let old = cluster.wait_leader(LEADER_WITHIN).await.expect("leader");
        // The old leader holds a lease from these reads.
        let pinned = cluster.client_for(old).handle_store::<u64>("reg").build();
        assert_eq!(pinned.get(&id).await.expect("get"), Some(round - 1));
        let out = cluster.cli(&["member", "transfer-leader"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        writer.put(&id, round, Ttl::Never).await.expect("put");
        let mut order: Vec<u64> = vec![old];
        order.extend((1..=3).filter(|n| *n != old));
        for node in order {
            let seen = cluster
                .client_for(node)
                .handle_store::<u64>("reg")
                .build()
                .get(&id)
                .await
                .expect("get");
            assert_eq!(
                seen,
                Some(round),
                "node {node} (old leader {old}) after transfer {round}"
            );
        }
    }
}
