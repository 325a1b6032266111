//! Members known by DNS names, as a StatefulSet's pods are (issue 106):
//! each node in a network namespace of its own, its resolver a pod's
//! (search list, `ndots:5`) asking a DNS server of the test's own
//! (`handlestore_tests::dns`), which answers for a name only while the
//! test publishes it, NXDOMAIN before, as Kubernetes' DNS does for a pod
//! not created yet.
//!
//! Three members started at once while their names appear one by one form
//! the cluster, each saying once per name that it does not resolve yet,
//! and looking a missing name up about once a second, not once per call.
//! A member re-created on another address under its name (its old address
//! black-holed, as when its machine is lost, and its name missing for a
//! while) is reached again by every path its peers have to it: the
//! leader's replication, a leader transfer, a follower's forwarded writes;
//! no acknowledged write is lost. Needs root (network namespaces,
//! /etc/netns, port 53 on the test's bridge): skipped, saying why,
//! elsewhere.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use handlestore_client::{HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use handlestore_tests::acked::{Minters, assert_whole};
use handlestore_tests::netns::NetNs;
use serde_json::{Value, json};

/// How often a node looks a peer's name in use up again
/// (node/src/raft/net/names.rs, `REFRESH_EVERY`).
const REFRESH_EVERY: Duration = Duration::from_secs(2);
/// How long a name that did not resolve is taken as unresolved there
/// (`FAILED_FOR`).
const FAILED_FOR: Duration = Duration::from_secs(1);

pub(crate) fn skipped(what: &str) -> bool {
    match NetNs::available() {
        Ok(()) => false,
        Err(why) => {
            eprintln!("SKIPPED: {what}: {why}");
            true
        }
    }
}

fn ip_of(cluster: &TestCluster, id: u64) -> IpAddr {
    let addr = &cluster.node(id).addr;
    addr.rsplit_once(':').and_then(|(h, _)| h.parse().ok()).expect("an IP")
}

/// How many of node `id`'s log lines contain `text`.
pub(crate) fn said(cluster: &TestCluster, id: u64, text: &str) -> usize {
    cluster.log(id).lines().filter(|l| l.contains(text)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_started_at_once_form_the_cluster_as_their_names_appear_one_by_one() {
    if skipped("members started at once while their names appear") {
        return;
    }
    let cluster = TestCluster::builder(3)
        .names(true)
        .publish_names(false)
        .wait_leader(false)
        .start()
        .await
        .expect("cluster");
    let started = Instant::now();
    let mut published = HashMap::new();
    for id in 1..=3 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        cluster.publish(id);
        published.insert(id, Instant::now());
    }
    cluster
        .wait_leader(Duration::from_secs(30))
        .await
        .expect("the cluster forms once the names resolve");
    for id in 1..=3 {
        let carts = cluster.client_for(id).handle_store::<String>("cart").build();
        let handle = carts.mint("{}".into(), Ttl::Default).await;
        handle.unwrap_or_else(|e| panic!("a write through node {id}: {e}"));
    }
    for id in 1..=3 {
        for peer in (1..=3).filter(|p| *p != id) {
            let name = format!("hs-{peer}.hs-peers");
            let missing = published[&peer] - started;
            let asked = cluster.dns().lookups(ip_of(&cluster, id), &name, started);
            eprintln!("node {id} looked {name} up {asked} times; it was missing for {missing:?}");
            let bound = (missing.as_secs_f64() / FAILED_FOR.as_secs_f64() * 1.5) as usize + 4;
            assert!(
                asked <= bound,
                "node {id} looked {name} up {asked} times while it was missing for {missing:?} (at most {bound})"
            );
        }
        // The name published last was missing for 6 s: said once, and
        // once that it resolves (a follower may look it up again only at
        // its next probe of node 3).
        if id != 3 {
            let text = "peer address hs-3.hs-peers:7401 does not resolve";
            assert_eq!(said(&cluster, id, text), 1, "node {id}: {text}");
            let back = "peer address hs-3.hs-peers:7401 resolves again";
            let deadline = Instant::now() + Duration::from_secs(10);
            while said(&cluster, id, back) == 0 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(said(&cluster, id, back), 1, "node {id}: {back}");
        }
    }
}

/// Hands leadership to node `to` and waits until every member sees it.
pub(crate) async fn lead(cluster: &TestCluster, to: u64) {
    let leader = cluster.wait_leader(Duration::from_secs(30)).await.expect("leader");
    if leader != to {
        let mut admin = cluster.leader_admin().await.expect("the leader's admin");
        let handed = admin.transfer_leader(pb::TransferLeaderRequest { to }).await;
        handed.unwrap_or_else(|e| panic!("node {leader} could not hand leadership to node {to}: {e}"));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while cluster.wait_leader(Duration::from_secs(10)).await.expect("leader") != to {
        assert!(Instant::now() < deadline, "node {to} does not lead");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Mints `n` handles through node `id` alone (forwarded by a follower to
/// the leader), each within `within`; returns them.
async fn mint_through(cluster: &TestCluster, id: u64, n: usize, within: Duration) -> HashMap<String, Value> {
    let carts = cluster.client_for(id).handle_store::<Value>("cart").build();
    let mut out = HashMap::new();
    for i in 0..n {
        let value = json!({"through": id, "n": i});
        let took = Instant::now();
        let minted = tokio::time::timeout(within, carts.mint(value.clone(), Ttl::Default)).await;
        let handle = minted
            .unwrap_or_else(|_| panic!("a write through node {id} took over {within:?}"))
            .unwrap_or_else(|e| panic!("a write through node {id}: {e}"));
        assert!(took.elapsed() < within);
        out.insert(handle, value);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_recreated_on_another_address_under_its_name_is_reached_again() {
    if skipped("a member re-created on another address under its name") {
        return;
    }
    let mut cluster = TestCluster::builder(3).names(true).start().await.expect("cluster");
    // Every path from the others to node 3 used once: node 1 hands it
    // leadership, nodes 1 and 2 forward writes to it, node 1 leads again.
    lead(&cluster, 1).await;
    lead(&cluster, 3).await;
    let mut acked = mint_through(&cluster, 1, 3, Duration::from_secs(5)).await;
    acked.extend(mint_through(&cluster, 2, 3, Duration::from_secs(5)).await);
    lead(&cluster, 1).await;
    let store = Arc::new(cluster.client().handle_store::<Value>("cart").build());
    let minters = Minters::start(&store, 2);

    // Node 3's machine is lost: its address goes silent (no FIN reaches
    // anyone) and its name is gone while its pod is re-created elsewhere,
    // with its volume.
    let old = cluster.node(3).addr.clone();
    cluster.cut(3).expect("cut node 3 off");
    cluster.kill(3);
    cluster.unpublish(3);
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.readdress(3).expect("a new address");
    cluster.restart(3).expect("node 3 again");
    cluster.publish(3);
    let published = Instant::now();
    eprintln!("node 3 moved from {old} to {}", cluster.node(3).addr);

    let applied = cluster.status(1).await.expect("the leader's status").applied_index;
    cluster
        .wait_applied(3, applied, Duration::from_secs(30))
        .await
        .expect("node 3 catches up at its new address");
    // By now every node has looked its name up again and seen it move.
    tokio::time::sleep((published + REFRESH_EVERY + Duration::from_secs(1)).saturating_duration_since(Instant::now()))
        .await;
    lead(&cluster, 3).await;
    acked.extend(mint_through(&cluster, 2, 20, Duration::from_secs(3)).await);
    acked.extend(mint_through(&cluster, 1, 20, Duration::from_secs(3)).await);

    let (written, failed) = minters.stop().await;
    eprintln!(
        "{} writes acknowledged under load, {failed} with an unknown outcome",
        written.len()
    );
    acked.extend(written);
    assert_whole(&cluster, "cart", &acked, failed).await;
}
