//! Expiry that every node judges alike, whatever one node's clock says:
//! real nodes, one of whose wall clocks is moved by libfaketime (a follower
//! or the leader, ahead or behind, and jumps while traffic runs). Every
//! node that answers must answer right about expiry, the skewed node must
//! say so (status, refusals naming the clock), and a skewed leader must
//! give up leadership. Skipped, with the reason, where libfaketime is not
//! installed.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use handlestore_client::{ClusterHandleStore, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use handlestore_tests::chaos::expiry;
use handlestore_tests::chaos::history::History;
use handlestore_tests::faketime::{self, TAKES_EFFECT};
use pb::handles_client::HandlesClient;
use serde_json::{Value, json};

const HOUR_MS: i64 = 3_600_000;
const NS: &str = "clock";

/// libfaketime, or None after printing why these tests skip.
fn faketime_or_skip(test: &str) -> Option<PathBuf> {
    match faketime::library() {
        Ok(lib) => Some(lib),
        Err(why) => {
            eprintln!("skipping {test}: {why}");
            None
        }
    }
}

async fn start(lib: PathBuf) -> TestCluster {
    TestCluster::builder(3).faketime(lib).start().await.expect("cluster")
}

/// Waits until node `id`'s clock is trusted (or not), as its status says.
async fn wait_trusted(cluster: &TestCluster, id: u64, trusted: bool) -> pb::ClockStatus {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(s) = cluster.status(id).await
            && let Some(c) = s.clock
            && c.trusted == trusted
        {
            return c;
        }
        assert!(
            Instant::now() < deadline,
            "node {id}'s clock never became trusted={trusted}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Moves node `id`'s clock by `offset_ms` and waits until it and the
/// others see it: it out of bounds, the others within.
async fn skew(cluster: &TestCluster, id: u64, offset_ms: i64) {
    cluster.set_clock_offset(id, offset_ms).expect("shift the clock");
    wait_offset_reported(cluster, id, offset_ms).await;
    for other in (1..=3).filter(|n| *n != id) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let c = wait_trusted(cluster, other, true).await;
            let seen = c.peers.iter().find(|p| p.id == id).map(|p| p.offset_ms);
            if seen.is_some_and(|o| (o - offset_ms).abs() < 2_000) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "node {other} sees node {id}'s clock at {seen:?} ms, not about {offset_ms}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Waits until node `id` reports its clock untrusted and its offset about
/// `offset_ms`. On a loaded machine a round of probes may be too slow to
/// count (a round trip over the maximum offset says too little), so the
/// node may first say its offset is not measured; it must get there.
async fn wait_offset_reported(cluster: &TestCluster, id: u64, offset_ms: i64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let c = wait_trusted(cluster, id, false).await;
        assert!(c.error.contains("clock"), "{}", c.error);
        if let Some(offset) = c.offset_ms {
            assert!(
                (offset - offset_ms).abs() < 2_000,
                "node {id} reports an offset of {offset} ms; its clock is {offset_ms} ms off"
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "node {id} never measured its offset: {}",
            c.error
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sets node `id`'s clock right and waits until every node trusts its own.
async fn restore(cluster: &TestCluster, id: u64) {
    cluster.set_clock_offset(id, 0).expect("restore the clock");
    for n in 1..=3 {
        wait_trusted(cluster, n, true).await;
    }
}

fn read(consistency: pb::Consistency, min_revision: u64) -> Option<pb::ReadOptions> {
    Some(pb::ReadOptions {
        consistency: consistency as i32,
        min_revision,
    })
}

async fn handles(cluster: &TestCluster, id: u64) -> HandlesClient<tonic::transport::Channel> {
    HandlesClient::connect(cluster.node(id).endpoint())
        .await
        .expect("connect")
}

/// A get on one node, as it answers (no retries elsewhere).
async fn get(
    cluster: &TestCluster,
    node: u64,
    store: &str,
    id: &str,
    r: Option<pb::ReadOptions>,
) -> Result<(), tonic::Status> {
    let req = pb::GetRequest {
        namespace: NS.into(),
        store: store.into(),
        id: id.into(),
        read: r,
    };
    handles(cluster, node).await.get(req).await.map(|_| ())
}

/// A refusal that names the clock.
fn is_clock_refusal(s: &tonic::Status) -> bool {
    let reason = handlestore_proto::reason::detail(s).reason;
    s.code() == tonic::Code::Unavailable && reason == "clock_offset" && s.message().contains("clock")
}

/// The handles a scenario checks: one minted before the clock moved, and,
/// after, one live for 30 minutes, one already expired, one that never
/// expires.
struct Handles {
    store: String,
    before: String,
    live: String,
    expired: String,
    forever: String,
    revision: u64,
}

async fn mint_before(cluster: &TestCluster, store: &str) -> String {
    let s: ClusterHandleStore<Value> = cluster
        .client()
        .with_namespace(NS)
        .expect("ns")
        .handle_store(store)
        .build();
    s.mint(json!("before"), Ttl::After(Duration::from_secs(1800)))
        .await
        .expect("mint")
}

async fn mint_after(cluster: &TestCluster, store: &str, before: String) -> Handles {
    let s: ClusterHandleStore<Value> = cluster
        .client()
        .with_namespace(NS)
        .expect("ns")
        .handle_store(store)
        .build();
    let live = s
        .mint(json!("live"), Ttl::After(Duration::from_secs(1800)))
        .await
        .expect("mint");
    let expired = s
        .mint(json!("short"), Ttl::After(Duration::from_secs(1)))
        .await
        .expect("mint");
    let forever = s.mint(json!("forever"), Ttl::Never).await.expect("mint");
    let revision = s
        .get_versioned(&forever)
        .await
        .expect("get")
        .expect("minted")
        .mod_revision;
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    Handles {
        store: store.into(),
        before,
        live,
        expired,
        forever,
        revision,
    }
}

/// Every node that answers answers right; the skewed one refuses what
/// depends on expiry and serves the rest.
async fn check_every_node(cluster: &TestCluster, skewed: u64, h: &Handles) {
    use pb::Consistency::{AtLeast, Linearizable, Stale};
    for node in 1..=3 {
        for r in [read(Linearizable, 0), read(AtLeast, h.revision)] {
            for (id, live) in [(&h.before, true), (&h.live, true), (&h.expired, false)] {
                let got = get(cluster, node, &h.store, id, r).await;
                match got {
                    Ok(()) => assert!(live, "node {node} serves {id}, expired, at {r:?}"),
                    Err(s) if s.code() == tonic::Code::NotFound => {
                        assert!(!live, "node {node} says {id}, live, is gone at {r:?}")
                    }
                    Err(s) if node == skewed && is_clock_refusal(&s) => {}
                    Err(s) => panic!(
                        "node {node} (skewed: {}) answered {s:?} for {id} at {r:?}",
                        node == skewed
                    ),
                }
                if node == skewed && live {
                    let refused = get(cluster, node, &h.store, id, r)
                        .await
                        .expect_err("skewed node refuses");
                    assert!(is_clock_refusal(&refused), "{refused:?}");
                }
            }
            get(cluster, node, &h.store, &h.forever, r)
                .await
                .unwrap_or_else(|s| panic!("node {node}: no TTL, no clock needed: {s:?}"));
        }
        // A stale read promises nothing about time, and is served.
        get(cluster, node, &h.store, &h.live, read(Stale, 0))
            .await
            .expect("stale read");
        let len = handles(cluster, node)
            .await
            .len(pb::LenRequest {
                namespace: NS.into(),
                store: h.store.clone(),
                read: read(Linearizable, 0),
            })
            .await;
        match len {
            Ok(r) => assert_eq!((node != skewed, r.into_inner().len), (true, 3), "node {node}"),
            Err(s) => assert!(node == skewed && is_clock_refusal(&s), "node {node}: {s:?}"),
        }
    }
}

async fn leader(cluster: &TestCluster) -> u64 {
    cluster.wait_leader(Duration::from_secs(30)).await.expect("leader")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_follower_ahead_or_behind_is_reported_and_refuses_only_what_depends_on_expiry() {
    let Some(lib) = faketime_or_skip("the follower clock tests") else {
        return;
    };
    let cluster = start(lib).await;
    for (i, offset) in [HOUR_MS, -HOUR_MS].into_iter().enumerate() {
        let leader = leader(&cluster).await;
        let follower = (1..=3).find(|n| *n != leader).expect("a follower");
        let store = format!("follower{i}");
        let before = mint_before(&cluster, &store).await;
        skew(&cluster, follower, offset).await;
        let h = mint_after(&cluster, &store, before).await;
        check_every_node(&cluster, follower, &h).await;
        restore(&cluster, follower).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leader_ahead_or_behind_gives_up_leadership_and_no_ttl_moves() {
    let Some(lib) = faketime_or_skip("the leader clock tests") else {
        return;
    };
    let cluster = start(lib).await;
    for (i, offset) in [HOUR_MS, -HOUR_MS].into_iter().enumerate() {
        let old = leader(&cluster).await;
        let store = format!("leader{i}");
        let before = mint_before(&cluster, &store).await;
        skew(&cluster, old, offset).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let new = loop {
            let l = leader(&cluster).await;
            if l != old {
                break l;
            }
            assert!(
                Instant::now() < deadline,
                "node {old} kept leading with its clock {offset} ms off"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        let h = mint_after(&cluster, &store, before).await;
        check_every_node(&cluster, old, &h).await;
        let s = cluster.status(old).await.expect("status");
        assert_ne!(s.state, "leader", "the skewed node leads again");
        assert_eq!(leader(&cluster).await, new);
        restore(&cluster, old).await;
    }
}

/// A new cluster whose node 1 starts with its clock an hour behind forms
/// from nodes 2 and 3: node 1 is reported off, never leads, and follows
/// with every write; once its clock is right again it is trusted and
/// stays a member.
#[tokio::test(flavor = "multi_thread")]
async fn a_new_cluster_forms_without_the_node_whose_clock_is_off_which_never_leads() {
    let Some(lib) = faketime_or_skip("the bootstrap clock test") else {
        return;
    };
    let cluster = TestCluster::builder(3)
        .faketime(lib)
        .clock_offset(1, -HOUR_MS)
        .wait_leader(false)
        .start()
        .await
        .expect("cluster");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !wait_trusted(&cluster, 1, false).await.error.contains("behind") {
        assert!(Instant::now() < deadline, "node 1 never found its clock behind");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let l = cluster
        .wait_leader(Duration::from_secs(30))
        .await
        .expect("nodes 2 and 3 form the cluster");
    assert_ne!(l, 1, "a node whose clock is off does not lead");
    let s: ClusterHandleStore<Value> = cluster.client().handle_store("boot").build();
    let id = s
        .mint(json!(l), Ttl::After(Duration::from_secs(60)))
        .await
        .expect("mint");
    assert_eq!(s.get(&id).await.expect("get"), Some(json!(l)));
    let applied = cluster.status(l).await.expect("status").applied_index;
    cluster
        .wait_applied(1, applied, Duration::from_secs(20))
        .await
        .expect("node 1 follows");
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        let s1 = cluster.status(1).await.expect("status");
        assert_ne!(s1.state, "leader", "node 1 leads with its clock off");
        assert!(!s1.clock.expect("clock").trusted);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(cluster.log(1).contains("behind"), "node 1 says why in its log");
    cluster.set_clock_offset(1, 0).expect("set the clock right");
    wait_trusted(&cluster, 1, true).await;
    let id = s.mint(json!("after"), Ttl::Never).await.expect("mint");
    let on_1: ClusterHandleStore<Value> = cluster
        .client_for(1)
        .handle_store("boot")
        .consistency(handlestore_client::Consistency::Linearizable)
        .build();
    assert_eq!(on_1.get(&id).await.expect("get on node 1"), Some(json!("after")));
}

/// Clocks stepped forwards and backwards, followers and leader, while
/// handles with TTLs of seconds are minted and read on every node: none is
/// gone before its TTL or readable after it.
#[tokio::test(flavor = "multi_thread")]
async fn clock_jumps_during_a_run_move_no_ttl() {
    let Some(lib) = faketime_or_skip("the clock jump test") else {
        return;
    };
    let cluster = start(lib).await;
    let history = Arc::new(History::default());
    let stop = Arc::new(AtomicBool::new(false));
    let tasks = expiry::spawn(
        &cluster.credentials(),
        &cluster.endpoints(),
        NS,
        history.clone(),
        stop.clone(),
        7,
    )
    .expect("workload");
    tokio::time::sleep(Duration::from_secs(3)).await;
    for (target_leader, offset) in [(false, 30_000), (true, -30_000), (false, -HOUR_MS), (true, HOUR_MS)] {
        let l = leader(&cluster).await;
        let node = if target_leader {
            l
        } else {
            (1..=3).find(|n| *n != l).expect("follower")
        };
        cluster.set_clock_offset(node, offset).expect("jump");
        tokio::time::sleep(TAKES_EFFECT + Duration::from_secs(3)).await;
        cluster.set_clock_offset(node, 0).expect("restore");
        tokio::time::sleep(TAKES_EFFECT + Duration::from_secs(2)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("workload task");
    }
    let c = expiry::check(&history.snapshot(), Duration::from_millis(500));
    eprintln!("{c:?}");
    assert!(c.violations.is_empty(), "{}", c.violations.join("\n"));
    assert!(
        c.reads_live > 20 && c.reads_gone > 20,
        "enough reads to mean something: {c:?}"
    );
    assert!(
        c.refused_for_clock > 0,
        "the jumped nodes refused reads meanwhile: {c:?}"
    );
}
