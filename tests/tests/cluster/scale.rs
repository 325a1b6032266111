//! Scaling and restarting members as a StatefulSet does (issue 106), with
//! members known by DNS names (`names.rs` has the kit: network namespaces,
//! a pod's resolver, a DNS server of the test's own), under a writing
//! load:
//!
//! - 3 -> 5 -> 3 the chart's way: nodes 4 and 5 start at once with
//!   `--initial-cluster-state existing --join <founders>` and join by
//!   themselves; `member shrink --to 3`, run from a pod of its own, removes
//!   them (node 5 leading: it hands leadership over first); their processes
//!   stop. Nothing acknowledged is lost, and writes are acknowledged
//!   throughout (the longest gap is printed and bounded, generously).
//! - a joining node that crashes once added as a learner, before it asks
//!   to be a voter (a failpoint), finishes its join when restarted, without
//!   asking to be added again.
//! - a rolling restart from the highest ordinal down (SIGTERM, wait, the
//!   same data, wait until `/readyz` says ready, next), as a StatefulSet's
//!   update does: the longest gap between acknowledged writes is printed;
//!   every member stays.
//!
//! And, on loopback (no root needed), `member shrink` refusing what it
//! must and changing nothing when no member is above N.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use handlestore_client::{HandleStore, Ttl};
use handlestore_node::failpoints::{ENV as FAILPOINTS, JOIN_BEFORE_PROMOTE};
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use handlestore_tests::acked::{Minters, assert_whole};
use serde_json::Value;

use super::names::{lead, said, skipped};

/// Writes stop for an election at most (about a second here); past this
/// the cluster went without a quorum, or hung.
const NEVER_STOPS_FOR: Duration = Duration::from_secs(10);

/// The leader's members: voters and learners.
async fn members(cluster: &TestCluster) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let leader = cluster.wait_leader(Duration::from_secs(30)).await.expect("leader");
    let status = cluster.status(leader).await.expect("the leader's status");
    let ids = |voter: bool| {
        status
            .members
            .iter()
            .filter(|m| m.voter == voter)
            .map(|m| m.id)
            .collect()
    };
    (ids(true), ids(false))
}

/// Waits until the voters are `voters` and there is no learner.
async fn wait_voters(cluster: &TestCluster, voters: &[u64], within: Duration) {
    let want: BTreeSet<u64> = voters.iter().copied().collect();
    let deadline = Instant::now() + within;
    loop {
        let now = members(cluster).await;
        if now.0 == want && now.1.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "voters {:?} and learners {:?}, not voters {want:?}, after {within:?}",
            now.0,
            now.1
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaling_three_to_five_and_back_under_load_loses_nothing_and_keeps_acknowledging_writes() {
    if skipped("scaling 3 -> 5 -> 3") {
        return;
    }
    let mut cluster = TestCluster::builder(3).names(true).start().await.expect("cluster");
    let store = Arc::new(cluster.client().handle_store::<Value>("cart").build());
    let minters = Minters::start(&store, 2);
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Scale out: ordinals 3 and 4 (nodes 4 and 5) start at once, as with
    // `podManagementPolicy: Parallel`.
    for id in [4, 5] {
        assert_eq!(cluster.spawn_joining(&[]).expect("a joining node"), id);
    }
    wait_voters(&cluster, &[1, 2, 3, 4, 5], Duration::from_secs(60)).await;
    for id in [4, 5] {
        assert_eq!(said(&cluster, id, "joined the cluster: a voter now"), 1, "node {id}");
    }
    let scaled_out = minters.acked_so_far();
    eprintln!("5 voters; {scaled_out} writes acknowledged so far");

    // Scale in, with node 5 leading: it hands leadership over first.
    lead(&cluster, 5).await;
    let out = cluster.cli_in(1, &["member", "shrink", "--to", "3"]);
    let printed = stdout(&out);
    assert!(out.status.success(), "shrink: {}{}", printed, stderr(&out));
    eprint!("{printed}");
    let (handed, five, four) = (
        printed.find("node 5 led and goes").expect("a hand-over"),
        printed.find("removed node 5").expect("node 5 removed"),
        printed.find("removed node 4").expect("node 4 removed"),
    );
    assert!(handed < five && five < four, "hand over, then the highest first");
    wait_voters(&cluster, &[1, 2, 3], Duration::from_secs(10)).await;
    // The StatefulSet deletes their pods.
    cluster.stop(5).expect("node 5 stops");
    cluster.stop(4).expect("node 4 stops");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        minters.acked_so_far() > scaled_out,
        "writes acknowledged after the scale-in"
    );

    let gap = minters.longest_gap();
    let (written, failed) = minters.stop().await;
    eprintln!(
        "{} writes acknowledged, {failed} with an unknown outcome; the longest gap between acknowledged writes: {gap:?}",
        written.len()
    );
    assert!(gap < NEVER_STOPS_FOR, "no write acknowledged for {gap:?}");
    assert_whole(&cluster, "cart", &written, failed).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joining_node_that_crashes_once_a_learner_finishes_its_join_when_restarted() {
    if skipped("a joining node that crashes midway") {
        return;
    }
    let mut cluster = TestCluster::builder(3).names(true).start().await.expect("cluster");
    let carts = cluster.client().handle_store::<String>("cart").build();
    for _ in 0..100 {
        carts.mint("{}".into(), Ttl::Default).await.expect("a write");
    }

    let crash = format!("{JOIN_BEFORE_PROMOTE}=crash");
    let four = cluster.spawn_joining(&[(FAILPOINTS, &crash)]).expect("node 4");
    let ended = cluster.wait_exit(four, Duration::from_secs(60)).await;
    ended.expect("node 4 crashes once caught up, before it asks to be a voter");
    let (voters, learners) = members(&cluster).await;
    assert_eq!(
        (voters, learners),
        ([1, 2, 3].into(), [4].into()),
        "a learner, not a voter"
    );

    cluster.restart_with_env(four, &[]).expect("node 4 again, on its data");
    wait_voters(&cluster, &[1, 2, 3, 4], Duration::from_secs(60)).await;
    let asked = said(&cluster, four, "asking to be added as a learner");
    assert_eq!(asked, 1, "asked once, before the crash: a learner only promotes itself");
    assert_eq!(said(&cluster, four, "joined the cluster: a voter now"), 1);
    let applied = cluster.status(1).await.expect("status").applied_index;
    let caught_up = cluster.wait_applied(four, applied, Duration::from_secs(30)).await;
    caught_up.expect("node 4 holds the cluster's writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_under_load_keeps_every_member_and_every_acknowledged_write() {
    if skipped("a rolling restart") {
        return;
    }
    let mut cluster = TestCluster::builder(3).names(true).start().await.expect("cluster");
    let store = Arc::new(cluster.client().handle_store::<Value>("cart").build());
    let minters = Minters::start(&store, 2);
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A StatefulSet's rolling update: the highest ordinal first, each pod
    // ready before the next goes.
    for id in [3, 2, 1] {
        let took = Instant::now();
        cluster.stop(id).expect("SIGTERM");
        cluster.restart(id).expect("the same data");
        cluster.wait_ready(id, Duration::from_secs(60)).await.expect("ready");
        eprintln!("node {id} restarted and ready in {:?}", took.elapsed());
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let gap = minters.longest_gap();
    let (written, failed) = minters.stop().await;
    eprintln!(
        "{} writes acknowledged, {failed} with an unknown outcome; the longest gap between acknowledged writes: {gap:?}",
        written.len()
    );
    assert!(gap < Duration::from_secs(30), "writes hung for {gap:?}");
    wait_voters(&cluster, &[1, 2, 3], Duration::from_secs(10)).await;
    assert_whole(&cluster, "cart", &written, failed).await;
}

/// The voters and learners by `member list --json`'s order, for before
/// and after.
fn listed(cluster: &TestCluster) -> String {
    let out = cluster.cli(&["member", "list", "--json"]);
    assert!(out.status.success(), "member list: {}", stderr(&out));
    stdout(&out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shrink_refuses_what_it_must_and_changes_nothing_when_no_member_is_above_n() {
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let before = listed(&cluster);

    let out = cluster.cli(&["member", "shrink", "--to", "0"]);
    assert_eq!(out.status.code(), Some(2), "N below 1: {}", stderr(&out));
    assert!(stderr(&out).contains("--to"), "{}", stderr(&out));
    for n in ["3", "7"] {
        let out = cluster.cli(&["member", "shrink", "--to", n]);
        assert!(out.status.success(), "--to {n}: {}", stderr(&out));
        assert!(stdout(&out).contains("nothing to do"), "{}", stdout(&out));
    }
    assert_eq!(listed(&cluster), before, "nothing changed");

    // A learner above N: a member still joining.
    let four = cluster.spawn_extra().expect("node 4");
    let addr = cluster.node(four).addr.clone();
    let out = cluster.cli(&["member", "add", &four.to_string(), &addr]);
    assert!(out.status.success(), "member add: {}", stderr(&out));
    let with_learner = listed(&cluster);
    let out = cluster.cli(&["member", "shrink", "--to", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("node 4 is a learner"), "{}", stderr(&out));
    assert_eq!(listed(&cluster), with_learner, "nothing changed");

    // No voter would stay: node 1 is gone, and N is 1.
    let mut admin = cluster.leader_admin().await.expect("the leader");
    let removed = admin
        .change_membership(pb::ChangeMembershipRequest {
            voters: vec![2, 3],
            retain: false,
        })
        .await;
    removed.expect("node 1 removed");
    cluster.stop(1).expect("node 1 stops");
    let without_one = listed(&cluster);
    let out = cluster.cli(&["member", "shrink", "--to", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("without a voter"), "{}", stderr(&out));
    assert_eq!(listed(&cluster), without_one, "nothing changed");
}
