//! Log compaction: a follower that was down while the log was purged, and a
//! brand-new member, both catch up by snapshot.

use std::time::Duration;

use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, call, retry_unavailable};
use pb::admin_client::AdminClient;
use serde_json::{Value, json};

async fn admin(cluster: &TestCluster, id: u64) -> AdminClient<tonic::transport::Channel> {
    AdminClient::connect(cluster.node(id).endpoint())
        .await
        .expect("admin connect")
}

/// The first `n` handles of store "snap" a watch on node `id` from
/// revision `from` delivers.
async fn replayed_on(cluster: &TestCluster, id: u64, from: u64, n: usize) -> Vec<String> {
    let opts = handlestore_client::WatchOptions {
        from: Some(from),
        ..Default::default()
    };
    let mut watch = cluster
        .client_for(id)
        .watch(handlestore_client::WatchTarget::store("snap"), opts)
        .await
        .expect("watch");
    handlestore_tests::keys_heard(&mut watch, n).await
}

#[tokio::test(flavor = "multi_thread")]
async fn laggard_and_new_member_catch_up_by_snapshot() {
    let mut cluster = TestCluster::builder(3)
        .args(["--snapshot-entries", "50", "--keep-entries", "5"])
        .start()
        .await
        .expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let down = (1..=3).find(|id| *id != leader).expect("a follower");
    cluster.stop(down).expect("stop follower");
    let down_last = cluster.status(leader).await.expect("status").last_log_index;

    let store: ClusterHandleStore<Value> = cluster.client_for(leader).handle_store("snap").build();
    let mut ids = Vec::new();
    for i in 0..300 {
        ids.push((
            store.mint(json!({"i": i}), Ttl::Default).await.expect("mint"),
            json!({"i": i}),
        ));
    }
    // Compact every running node, so whichever leads has purged the entries
    // the stopped follower needs.
    let mut snap = pb::SnapshotResponse::default();
    for id in (1..=3).filter(|id| *id != down) {
        let adm = admin(&cluster, id).await;
        let r = call!(adm.snapshot(pb::SnapshotRequest {})).expect("snapshot");
        if id == leader {
            snap = r;
        }
    }
    assert!(
        snap.purged_index > down_last,
        "the log the follower needs is purged ({snap:?}, it has {down_last})"
    );

    cluster.restart(down).expect("restart");
    let target = cluster.status(leader).await.expect("status").applied_index;
    cluster
        .wait_applied(down, target, Duration::from_secs(30))
        .await
        .expect("laggard caught up");
    assert!(
        cluster.log(down).contains("installed snapshot"),
        "the laggard was sent a snapshot"
    );
    let on_down = cluster.client_for(down).handle_store::<Value>("snap").build();
    for (id, v) in &ids {
        assert_eq!(
            on_down.get_with(id, Consistency::Stale).await.expect("get").as_ref(),
            Some(v)
        );
    }
    assert_eq!(
        on_down.len_with(Consistency::Stale).await.expect("len"),
        ids.len() as u64
    );
    // The snapshot carried the watch history: the laggard replays the
    // writes it never applied itself.
    let replayed = replayed_on(&cluster, down, down_last + 1, ids.len()).await;
    let minted: Vec<String> = ids.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(replayed, minted, "every mint, once, in order");

    // A new member joins: add it as a learner, then promote it.
    let new = cluster.spawn_extra().expect("spawn node 4");
    let addr = cluster.node(new).addr.clone();
    let add = pb::AddLearnerRequest {
        id: new,
        addr,
        blocking: true,
        peer_addr: String::new(),
    };
    retry_unavailable(|| {
        let (c, req) = (&cluster, add.clone());
        async move { c.leader_admin().await?.add_learner(req).await }
    })
    .await
    .expect("add learner");
    let target = cluster.status(leader).await.expect("status").applied_index;
    cluster
        .wait_applied(new, target, Duration::from_secs(30))
        .await
        .expect("new member caught up");
    assert!(
        cluster.log(new).contains("installed snapshot"),
        "the new member got a snapshot"
    );
    let promote = pb::ChangeMembershipRequest {
        voters: vec![1, 2, 3, new],
        retain: false,
    };
    let resp = retry_unavailable(|| {
        let (c, req) = (&cluster, promote.clone());
        async move { c.leader_admin().await?.change_membership(req).await }
    })
    .await
    .expect("promote");
    assert_eq!(resp.members.iter().filter(|m| m.voter).count(), 4);
    let on_new = cluster.client_for(new).handle_store::<Value>("snap").build();
    for (id, v) in ids.iter().take(20) {
        assert_eq!(
            on_new.get_with(id, Consistency::Stale).await.expect("get").as_ref(),
            Some(v)
        );
    }
    // And it serves linearizable reads as a voter.
    let (id, v) = &ids[0];
    assert_eq!(on_new.get(id).await.expect("get").as_ref(), Some(v));
}
