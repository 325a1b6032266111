//! Rolling upgrade from the previous release (v0.1.0, built once per
//! machine by tests/old-build.sh, which the test command runs first): three
//! nodes of it under write load are replaced one at a time by this build,
//! followers first (v0.1.0 has no leader transfer: its leader is replaced
//! last, and costs one election); nothing acknowledged is lost, every node
//! keeps up, writes go on through the mixed-version periods, and the
//! cluster is named once no old node is left. Then the downgrade: v0.1.0
//! refuses a data directory of a newer stored format, naming both
//! versions, and leaves it as it was.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use handlestore_client::{ClusterHandleStore, HandleStore, Ttl};
use handlestore_tests::TestCluster;
use handlestore_tests::stored::{stamp, stamped};

const WITHIN: Duration = Duration::from_secs(30);

/// The previous release's binary, if the test command could build it.
fn old_binary() -> Option<PathBuf> {
    let p = PathBuf::from(std::env::var_os("HANDLESTORE_OLD_BIN")?);
    p.exists().then_some(p)
}

/// Writes acknowledged, with when.
#[derive(Default)]
struct Acked {
    writes: Vec<(String, String, Instant)>,
    failed: u64,
}

fn write_under_load(store: ClusterHandleStore<String>, acked: Arc<Mutex<Acked>>, stop: Arc<tokio::sync::Notify>) {
    tokio::spawn(async move {
        for i in 0u64.. {
            let value = format!("w{i}");
            let minted = tokio::select! {
                _ = stop.notified() => return,
                m = store.mint(value.clone(), Ttl::Never) => m,
            };
            let mut a = acked.lock().expect("lock");
            match minted {
                Ok(id) => a.writes.push((id, value, Instant::now())),
                Err(_) => a.failed += 1,
            }
        }
    });
}

/// The longest time between two acknowledged writes.
fn longest_gap(a: &Acked) -> Duration {
    a.writes
        .windows(2)
        .map(|w| w[1].2.duration_since(w[0].2))
        .max()
        .unwrap_or_default()
}

/// Waits until node `id` has applied what the leader had applied when
/// asked: it keeps up.
async fn caught_up(cluster: &TestCluster, id: u64) {
    let leader = cluster.wait_leader(WITHIN).await.expect("a leader");
    let target = cluster.status(leader).await.expect("status").applied_index;
    cluster
        .wait_applied(id, target, WITHIN)
        .await
        .expect("the node keeps up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_release_upgrades_one_node_at_a_time_under_load_and_refuses_a_newer_directory() {
    let Some(old) = old_binary() else {
        println!("SKIPPED: rolling upgrade from v0.1.0: no v0.1.0 binary (HANDLESTORE_OLD_BIN; tests/old-build.sh)");
        return;
    };
    let _machine = super::WHOLE_MACHINE.lock().await;
    let mut cluster = TestCluster::builder(3)
        .binary(old.clone())
        .start()
        .await
        .expect("a v0.1.0 cluster");
    for id in 1..=3 {
        assert_eq!(
            cluster.status(id).await.expect("status").protocol_version,
            1,
            "node {id} is v0.1.0"
        );
    }
    reads_without_the_reads_service(&cluster).await;
    let acked = Arc::new(Mutex::new(Acked::default()));
    let stop = Arc::new(tokio::sync::Notify::new());
    write_under_load(cluster.client().handle_store("up").build(), acked.clone(), stop.clone());
    tokio::time::sleep(Duration::from_secs(1)).await;

    let leader = cluster.wait_leader(WITHIN).await.expect("leader");
    let mut order: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
    order.push(leader);
    for (n, id) in order.iter().copied().enumerate() {
        if cluster.wait_leader(WITHIN).await.expect("leader") == id {
            // Only a leader of this build can hand over: it is tried, and a
            // v0.1.0 leader answers UNIMPLEMENTED (its stop then costs an
            // election).
            let out = tokio::task::block_in_place(|| cluster.cli(&["member", "transfer-leader"]));
            println!(
                "transfer before replacing node {id}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let before = acked.lock().expect("lock").writes.len();
        tokio::task::block_in_place(|| cluster.stop(id)).expect("stop");
        cluster.set_binary(id, None);
        cluster.restart(id).expect("restart with this build");
        caught_up(&cluster, id).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let after = acked.lock().expect("lock").writes.len();
        assert!(
            after > before + 10,
            "writes went on while node {id} was replaced: {before} -> {after}"
        );
        let mixed = n < 2;
        let name = cluster.status(id).await.expect("status").cluster_id;
        assert_eq!(
            name.is_empty(),
            mixed,
            "named only once no v0.1.0 node is left ({name:?})"
        );
    }
    for id in 1..=3 {
        caught_up(&cluster, id).await;
    }
    let name = cluster.wait_named(WITHIN).await.expect("named once all run this build");
    stop.notify_one();
    tokio::time::sleep(Duration::from_millis(200)).await;

    let acked = std::mem::take(&mut *acked.lock().expect("lock"));
    println!(
        "{} writes acknowledged ({} failed and retried by the writer), longest gap {:?}, cluster {name}",
        acked.writes.len(),
        acked.failed,
        longest_gap(&acked)
    );
    assert!(
        longest_gap(&acked) < WITHIN,
        "writes stalled for {:?}",
        longest_gap(&acked)
    );
    for id in 1..=3 {
        let store: ClusterHandleStore<String> = cluster.client_for(id).handle_store("up").build();
        for (handle, value, _) in &acked.writes {
            assert_eq!(
                store.get(handle).await.expect("get").as_ref(),
                Some(value),
                "node {id}: {handle}"
            );
        }
    }

    // Downgrade: a directory stamped newer than v0.1.0 reads is refused by
    // it, and left as it was.
    let id = order[0];
    tokio::task::block_in_place(|| cluster.stop(id)).expect("stop");
    a_newer_directory_is_refused_by(&old, id, &cluster.node(id).data);
}

/// This client's concurrent reads share `Reads.Submit` calls, which a
/// v0.1.0 node does not have: it gets each read on its own method.
async fn reads_without_the_reads_service(cluster: &TestCluster) {
    let client = cluster.client();
    let store: ClusterHandleStore<String> = client.handle_store("old-reads").build();
    let id = store.mint("v".into(), Ttl::Never).await.expect("mint");
    let got = futures::future::join_all((0..40).map(|_| store.get(&id))).await;
    for g in got {
        assert_eq!(g.expect("get"), Some("v".to_string()));
    }
    let stats = client.read_stats();
    assert!(stats.calls < stats.reads, "the reads went together: {stats:?}");
}

fn a_newer_directory_is_refused_by(old: &std::path::Path, id: u64, data: &std::path::Path) {
    let current = stamped(data).expect("stamped");
    stamp(data, Some(current + 1));
    let out = std::process::Command::new(old)
        .args([
            "node",
            "--id",
            &id.to_string(),
            "--listen",
            &format!("127.0.0.1:{}", handlestore_tests::free_port()),
        ])
        .arg("--data")
        .arg(data)
        .output()
        .expect("run v0.1.0");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "v0.1.0 ran on a newer directory: {said}");
    assert!(
        said.contains(&format!("stored format version {}", current + 1)) && said.contains("reads versions up to 1"),
        "{said}"
    );
    assert_eq!(stamped(data), Some(current + 1), "left as it was");
}
