//! A crash at every step of the write path (`handlestore_node::failpoints`):
//! a node under load ends at one failpoint (abort: nothing flushed, no
//! clean-up), starts again from its data directory, and must catch up
//! with every acknowledged write, none applied twice, nothing invented.
//! Snapshots in flight are also cut, damaged in transit and damaged on
//! disk: a damaged one is never installed or sent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use handlestore_client::{ClusterHandleStore, HandleStore, Ttl};
use handlestore_node::failpoints::{self as fp, ENV as FAILPOINTS};
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, call};
use serde_json::{Value, json};

use handlestore_tests::acked::{Minters, assert_whole};

/// Snapshots and purges every 100 entries, so that writes meet them often.
const ARGS: [&str; 4] = ["--snapshot-entries", "100", "--keep-entries", "20"];
const WITHIN: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Leader,
    Follower,
}

async fn cluster() -> TestCluster {
    TestCluster::builder(3).args(ARGS).start().await.expect("cluster")
}

/// Asks the leader to hand leadership to `to` until it leads (10 s at
/// most); tells whether it does.
async fn lead(cluster: &TestCluster, to: u64) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < deadline {
        if cluster.wait_leader(Duration::from_secs(5)).await.ok() == Some(to) {
            return true;
        }
        if let Ok(mut admin) = cluster.leader_admin().await {
            let _ = admin.transfer_leader(pb::TransferLeaderRequest { to }).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    false
}

/// Restarts node `id` with failpoints `spec` (and leadership, if `role`
/// asks for it).
async fn arm(cluster: &mut TestCluster, id: u64, spec: &str, role: Role) {
    cluster.stop(id).expect("stop");
    cluster
        .restart_with_env(id, &[(FAILPOINTS, spec)])
        .expect("restart armed");
    if role == Role::Leader {
        assert!(lead(cluster, id).await, "node {id} was given leadership");
    }
}

/// Waits for node `id` to crash at `point`, then starts it again without
/// failpoints.
async fn crashed_and_back(cluster: &mut TestCluster, id: u64, point: &str) {
    let status = cluster.wait_exit(id, WITHIN).await.expect("the node crashed");
    assert!(!status.success(), "node {id} ended by itself at {point}: {status}");
    let said = format!("failpoint {point}: crashing");
    assert!(
        cluster.log(id).contains(&said),
        "node {id} crashed at {point}:\n{}",
        cluster.log_tail(id, 30)
    );
    cluster.restart_with_env(id, &[]).expect("restart");
}

/// A node crashes at `point` while 16 clients write; after `skip` passes,
/// so that it crashes under load, not while it starts.
async fn crash_under_load(point: &str, skip: u32, role: Role) {
    let mut cluster = cluster().await;
    let leader = cluster.wait_leader(WITHIN).await.expect("leader");
    let victim = match role {
        Role::Leader => leader,
        Role::Follower => (1..=3).find(|id| *id != leader).expect("a follower"),
    };
    arm(&mut cluster, victim, &format!("{point}={skip}*off->crash"), role).await;
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(cluster.client().handle_store(point).build());
    let minters = Minters::start(&store, 16);
    crashed_and_back(&mut cluster, victim, point).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (acked, failed) = minters.stop().await;
    eprintln!("{point} ({role:?}): {} acknowledged, {failed} unknown", acked.len());
    assert!(!acked.is_empty(), "writes were acknowledged");
    assert_whole(&cluster, point, &acked, failed).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_crashing_before_its_log_append_loses_nothing() {
    crash_under_load(fp::LOG_APPEND_BEFORE_WRITE, 50, Role::Follower).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_crashing_between_log_append_and_sync_loses_nothing() {
    crash_under_load(fp::LOG_APPEND_AFTER_WRITE, 50, Role::Leader).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_crashing_before_its_log_sync_loses_nothing() {
    crash_under_load(fp::LOG_SYNC_BEFORE, 50, Role::Follower).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_crashing_between_its_log_sync_and_the_answers_loses_nothing() {
    crash_under_load(fp::LOG_SYNC_AFTER, 50, Role::Leader).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_crashing_in_the_middle_of_an_apply_batch_applies_it_once() {
    crash_under_load(fp::APPLY_MID_BATCH, 20, Role::Follower).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_crashing_after_an_apply_before_answering_applies_it_once() {
    crash_under_load(fp::APPLY_AFTER_COMMIT, 50, Role::Leader).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_crashing_while_it_builds_a_snapshot_loses_nothing() {
    crash_under_load(fp::SNAPSHOT_BUILD_MID, 0, Role::Follower).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_crashing_in_the_middle_of_a_log_purge_loses_nothing() {
    crash_under_load(fp::LOG_PURGE_MID, 0, Role::Leader).await;
}

/// A follower whose log writes fail (a disk refusing them) has its Raft
/// stopped for good by openraft. It must not run on half alive, refusing
/// everything: it exits non-zero, saying why, for its supervisor to start
/// it again, and then it catches up with everything acknowledged.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_whose_raft_stops_on_a_storage_error_exits_and_comes_back_whole() {
    let point = fp::LOG_APPEND_BEFORE_WRITE;
    let mut cluster = cluster().await;
    let leader = cluster.wait_leader(WITHIN).await.expect("leader");
    let victim = (1..=3).find(|id| *id != leader).expect("a follower");
    arm(&mut cluster, victim, &format!("{point}=error"), Role::Follower).await;
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(cluster.client().handle_store("storage-error").build());
    let minters = Minters::start(&store, 16);
    let status = cluster.wait_exit(victim, WITHIN).await.expect("the node exited");
    assert!(!status.success(), "node {victim} exited with {status}");
    assert!(
        cluster.log(victim).contains("Raft stopped on an error"),
        "{}",
        cluster.log_tail(victim, 30)
    );
    cluster.restart_with_env(victim, &[]).expect("restart");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (acked, failed) = minters.stop().await;
    assert!(!acked.is_empty(), "writes were acknowledged");
    assert_whole(&cluster, "storage-error", &acked, failed).await;
}

/// Stops a follower (the laggard), writes 300 handles and compacts the
/// others' logs past it, so that it can only catch up by snapshot; returns
/// it, and the handles written.
async fn make_laggard(cluster: &mut TestCluster, ns: &str) -> (u64, HashMap<String, Value>) {
    let leader = cluster.wait_leader(WITHIN).await.expect("leader");
    let laggard = (1..=3).find(|id| *id != leader).expect("a follower");
    cluster.stop(laggard).expect("stop the laggard");
    let store: ClusterHandleStore<Value> = cluster.client().handle_store(ns).build();
    let mut acked = HashMap::new();
    for i in 0..300 {
        let value = json!({ "i": i });
        let id = store.mint(value.clone(), Ttl::Default).await.expect("mint");
        acked.insert(id, value);
    }
    for id in (1..=3).filter(|id| *id != laggard) {
        let admin = cluster.client_for(id).channel(0).expect("channel");
        let admin = pb::admin_client::AdminClient::new(admin);
        call!(admin.snapshot(pb::SnapshotRequest {})).expect("snapshot");
    }
    (laggard, acked)
}

/// A laggard crashes at `point` while it takes a snapshot; started again,
/// it takes it whole.
async fn laggard_crashes_at(point: &str) -> (TestCluster, u64) {
    let mut cluster = cluster().await;
    let (laggard, acked) = make_laggard(&mut cluster, point).await;
    cluster
        .restart_with_env(laggard, &[(FAILPOINTS, &format!("{point}=crash"))])
        .expect("restart the laggard armed");
    crashed_and_back(&mut cluster, laggard, point).await;
    assert_whole(&cluster, point, &acked, 0).await;
    (cluster, laggard)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_laggard_crashing_while_it_receives_a_snapshot_takes_it_again() {
    let (cluster, laggard) = laggard_crashes_at(fp::SNAPSHOT_RECEIVE_MID).await;
    assert!(cluster.log(laggard).contains("installed snapshot"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_laggard_crashing_while_it_installs_a_snapshot_finishes_the_install() {
    let (cluster, laggard) = laggard_crashes_at(fp::SNAPSHOT_INSTALL_MID).await;
    assert!(
        cluster
            .log(laggard)
            .contains("a snapshot install was interrupted; installing it again"),
        "{}",
        cluster.log_tail(laggard, 30)
    );
}

/// The leader crashes while it sends a snapshot; the laggard takes one
/// from the next leader.
#[tokio::test(flavor = "multi_thread")]
async fn a_leader_crashing_while_it_sends_a_snapshot_loses_nothing() {
    let point = fp::SNAPSHOT_SEND_MID;
    let mut cluster = cluster().await;
    let leader = cluster.wait_leader(WITHIN).await.expect("leader");
    arm(&mut cluster, leader, &format!("{point}=crash"), Role::Leader).await;
    let (laggard, acked) = make_laggard(&mut cluster, point).await;
    assert_ne!(laggard, leader);
    cluster.restart(laggard).expect("restart the laggard");
    crashed_and_back(&mut cluster, leader, point).await;
    assert_whole(&cluster, point, &acked, 0).await;
    assert!(cluster.log(laggard).contains("installed snapshot"));
}

/// A snapshot damaged on its way (a byte of it flipped by the sender) is
/// refused by its checksum, never installed; the leader sends it again.
#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_damaged_in_transit_is_refused_and_sent_again() {
    let point = fp::SNAPSHOT_SEND_MID;
    let mut cluster = cluster().await;
    let leader = cluster.wait_leader(WITHIN).await.expect("leader");
    arm(&mut cluster, leader, &format!("{point}=1*corrupt->off"), Role::Leader).await;
    let (laggard, acked) = make_laggard(&mut cluster, "transit").await;
    cluster.restart(laggard).expect("restart the laggard");
    assert_whole(&cluster, "transit", &acked, 0).await;
    let log = cluster.log(laggard);
    assert!(
        log.contains("refused a snapshot") && log.contains("checksum mismatch"),
        "the damaged snapshot was refused:\n{}",
        cluster.log_tail(laggard, 30)
    );
    assert!(log.contains("installed snapshot"), "the second one was installed");
}

/// A byte of every node's snapshot file flipped on disk (bit rot): the
/// leader finds it damaged when it would send it, builds a new one, and
/// the laggard installs that one.
#[tokio::test(flavor = "multi_thread")]
async fn a_snapshot_damaged_on_disk_is_built_again_never_sent() {
    let mut cluster = cluster().await;
    let (laggard, acked) = make_laggard(&mut cluster, "rot").await;
    for id in (1..=3).filter(|id| *id != laggard) {
        let path = cluster.dir().join(format!("n{id}/snapshots/current.snap"));
        let mut bytes = std::fs::read(&path).expect("the snapshot file");
        let at = bytes.len() / 2;
        bytes[at] ^= 0x5A;
        std::fs::write(&path, bytes).expect("damaged");
    }
    cluster.restart(laggard).expect("restart the laggard");
    assert_whole(&cluster, "rot", &acked, 0).await;
    let leader = cluster.wait_leader(WITHIN).await.expect("leader");
    assert!(
        cluster.log(leader).contains("is damaged"),
        "the leader found its snapshot damaged:\n{}",
        cluster.log_tail(leader, 30)
    );
    assert!(cluster.log(laggard).contains("installed snapshot"));
}

/// A failpoint added to the write path gets its crash test here.
#[test]
fn every_failpoint_has_a_crash_test() {
    let source = include_str!("crash_points.rs");
    for point in fp::POINTS {
        let constant = format!("fp::{}", point.to_uppercase().replace('-', "_"));
        assert!(source.contains(&constant), "no crash test uses {constant} ({point})");
    }
}
