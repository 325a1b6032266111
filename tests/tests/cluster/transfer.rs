//! Leader transfer: `handlestore member transfer-leader [ID]` hands
//! leadership to the voter asked for (or the most caught-up one) and
//! writes go on; a target that is not another voter is refused and
//! nothing changes; a leader stopped with SIGTERM hands leadership over
//! before it stops (unless `--handover-on-stop false`), losing no
//! acknowledged write.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use handlestore_client::{ClusterHandleStore, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use tonic::Code;

const LEADER_WITHIN: Duration = Duration::from_secs(30);

fn transfer_cli(cluster: &TestCluster, to: Option<u64>) -> std::process::Output {
    let to = to.map(|id| id.to_string());
    let mut args = vec!["member", "transfer-leader"];
    args.extend(to.as_deref());
    cluster.cli(&args)
}

async fn term_of(cluster: &TestCluster, id: u64) -> u64 {
    cluster.status(id).await.expect("status").term
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_leader_hands_leadership_to_the_voter_asked_for() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let carts = cluster.client().handle_store::<String>("cart").build();
    let before = cluster.wait_leader(LEADER_WITHIN).await.expect("leader");
    let term = term_of(&cluster, before).await;
    let target = (1..=3).find(|id| *id != before).expect("another node");
    let out = transfer_cli(&cluster, Some(target));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.contains(&format!("node {target} leads now")), "{said}");
    assert_eq!(cluster.wait_leader(LEADER_WITHIN).await.expect("leader"), target);
    assert_eq!(term_of(&cluster, target).await, term + 1, "one election, no more");
    let id = carts
        .mint("after".into(), Ttl::Never)
        .await
        .expect("a write after the transfer");
    assert_eq!(carts.get(&id).await.expect("get").as_deref(), Some("after"));

    // Without an id: the most caught-up voter, another node than the leader.
    let out = transfer_cli(&cluster, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let now = cluster.wait_leader(LEADER_WITHIN).await.expect("leader");
    assert_ne!(now, target, "leadership moved on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transfer_to_no_other_voter_is_refused_and_changes_nothing() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster.wait_leader(LEADER_WITHIN).await.expect("leader");
    let term = term_of(&cluster, leader).await;
    let mut admin = cluster.leader_admin().await.expect("admin");
    for to in [leader, 99] {
        let e = admin
            .transfer_leader(pb::TransferLeaderRequest { to })
            .await
            .expect_err("refused");
        assert_eq!(e.code(), Code::FailedPrecondition, "to {to}: {e:?}");
    }
    assert_eq!(cluster.wait_leader(LEADER_WITHIN).await.expect("leader"), leader);
    assert_eq!(term_of(&cluster, leader).await, term, "no election");
    // A single voter has no one to hand leadership to.
    let one = TestCluster::start(1).await.expect("one node");
    let mut admin = one.leader_admin().await.expect("admin");
    let e = admin
        .transfer_leader(pb::TransferLeaderRequest { to: 0 })
        .await
        .expect_err("refused");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
}

/// Stops the leader with SIGTERM while a client writes; every write the
/// client saw acknowledged is there afterwards. Returns the stopped
/// leader's log.
async fn stop_the_leader_while_writing(cluster: &mut TestCluster) -> (u64, String) {
    let carts = Arc::new(cluster.client().handle_store::<u64>("cart").build());
    let leader = cluster.wait_leader(LEADER_WITHIN).await.expect("leader");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (carts, stop) = (carts.clone(), stop.clone());
        tokio::spawn(async move {
            let mut acked = Vec::new();
            for n in 0u64.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if let Ok(id) = carts.mint(n, Ttl::Never).await {
                    acked.push((id, n));
                }
            }
            acked
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    cluster.stop(leader).expect("SIGTERM");
    cluster.wait_leader(LEADER_WITHIN).await.expect("a new leader");
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    let acked = writer.await.expect("writer");
    assert!(!acked.is_empty());
    for (id, n) in &acked {
        assert_eq!(carts.get(id).await.expect("get"), Some(*n), "acknowledged write {id}");
    }
    (leader, cluster.log(leader))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_with_sigterm_hands_leadership_over_first() {
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let (_, log) = stop_the_leader_while_writing(&mut cluster).await;
    assert!(log.contains("handed leadership over"), "{log}");

    let mut cluster = TestCluster::builder(3)
        .args(["--handover-on-stop", "false"])
        .start()
        .await
        .expect("cluster");
    let (_, log) = stop_the_leader_while_writing(&mut cluster).await;
    assert!(!log.contains("handed leadership over"), "{log}");
}

/// Every node stopped at once, as an orchestrator stopping the whole
/// cluster does: the leader does not wait out a hand-over to a voter that
/// is stopping too (that one refuses, or stops answering, and the leader
/// gives up on it at once); every node exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_with_the_whole_cluster_does_not_wait_for_a_hand_over() {
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let carts: ClusterHandleStore<u64> = cluster.client().handle_store("cart").build();
    carts.mint(1, Ttl::Never).await.expect("mint");
    let started = std::time::Instant::now();
    tokio::task::block_in_place(|| cluster.stop_together(&[1, 2, 3])).expect("SIGTERM");
    eprintln!("the whole cluster stopped in {} ms", started.elapsed().as_millis());
    let log = cluster.log(leader);
    assert!(!log.contains("could not hand leadership over"), "{log}");
    assert!(
        log.contains("stopping too") || log.contains("handed leadership over"),
        "{log}"
    );
}
