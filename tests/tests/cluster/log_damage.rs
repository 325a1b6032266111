//! A Raft log damaged on disk (`raft::log::log_check`): bytes of a follower's
//! log table file overwritten while it is down, as a failing sector would.
//! RocksDB's block checksums find it when the node reads its log at
//! start; the node writes its log again without the damaged entries, and
//! the leader sends what it lacks. Damage to applied entries is purged
//! behind a snapshot; damage to entries not yet applied cuts the log there,
//! and the node sits elections out until it holds them again. Either way
//! every acknowledged write ends on every node, once. A record damaged in
//! the middle of RocksDB's write-ahead log ends its replay there (the
//! default, `--wal-recovery point-in-time`), and the leader sends the rest
//! to the node's shorter log; with `--wal-recovery strict` it stops the
//! node at start instead, saying so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use handlestore_node::failpoints::{ENV as FAILPOINTS, POINTS};
use handlestore_tests::TestCluster;
use handlestore_tests::acked::{assert_read_back, assert_whole};
use serde_json::{Value, json};

const WITHIN: Duration = Duration::from_secs(60);

/// Small memtables, so that the log reaches table files within a few
/// megabytes, and no snapshot or purge during the test, so that the
/// damaged entries are still in every log.
const ARGS: [&str; 6] = [
    "--write-buffer-mb",
    "2",
    "--snapshot-entries",
    "1000000",
    "--keep-entries",
    "1000000",
];

/// Mints `n` handles of about 4 KiB each (8 at a time); returns them.
async fn mint(store: &Arc<ClusterHandleStore<Value>>, n: usize, tag: &str) -> HashMap<String, Value> {
    let tasks = (0..8).map(|w| {
        let store = store.clone();
        let tag = tag.to_string();
        tokio::spawn(async move {
            let mut acked = HashMap::new();
            for i in (w..n).step_by(8) {
                let value = json!({ "tag": tag, "i": i, "pad": "x".repeat(4000) });
                let id = store.mint(value.clone(), Ttl::Default).await.expect("mint");
                acked.insert(id, value);
            }
            acked
        })
    });
    let mut acked = HashMap::new();
    for t in futures::future::join_all(tasks).await {
        acked.extend(t.expect("minter"));
    }
    acked
}

/// The files of node `id`'s database whose names pass `keep`, by name
/// (so oldest first, as RocksDB numbers them).
fn db_files(cluster: &TestCluster, id: u64, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let db = cluster.dir().join(format!("n{id}/db"));
    let mut files: Vec<PathBuf> = std::fs::read_dir(&db)
        .expect("the node's database")
        .map(|e| e.expect("entry").path())
        .filter(|p| keep(p))
        .collect();
    files.sort();
    files
}

/// Node `id`'s table files of the Raft log (their properties name the
/// column family), oldest first.
fn log_tables(cluster: &TestCluster, id: u64) -> Vec<PathBuf> {
    db_files(cluster, id, |p| p.extension().is_some_and(|x| x == "sst"))
        .into_iter()
        .filter(|p| {
            let bytes = std::fs::read(p).expect("a table file");
            bytes.windows(8).any(|w| w == b"raft_log")
        })
        .collect()
}

/// Overwrites 20 bytes of `table` at `at` (of its length): 0.0 is its
/// first data block, which holds its lowest entries; 0.5 a block amid its
/// entries (a table a compaction merged may begin with old ones).
fn damage(table: &Path, at: f64) {
    let mut bytes = std::fs::read(table).expect("read the table");
    let start = ((bytes.len() as f64 * at) as usize).max(20);
    bytes[start..start + 20].fill(0xA5);
    std::fs::write(table, bytes).expect("damage the table");
}

/// Overwrites 64 bytes in the middle of node `id`'s newest write-ahead
/// log file, which must hold at least `min_bytes`.
fn damage_wal(cluster: &TestCluster, id: u64, min_bytes: usize) {
    let wal = db_files(cluster, id, |p| p.extension().is_some_and(|x| x == "log"))
        .pop()
        .expect("a WAL file");
    let mut bytes = std::fs::read(&wal).expect("read the WAL");
    assert!(
        bytes.len() >= min_bytes,
        "{} holds {} bytes",
        wal.display(),
        bytes.len()
    );
    let middle = bytes.len() / 2;
    bytes[middle..middle + 64].fill(0xA5);
    std::fs::write(&wal, bytes).expect("damage the WAL");
}

/// The index of the leader's last log entry, now.
async fn leader_last_index(cluster: &TestCluster) -> u64 {
    let leader = cluster.wait_leader(WITHIN).await.expect("leader");
    cluster
        .status(leader)
        .await
        .expect("the leader's status")
        .last_log_index
}

/// Waits until node `id`'s log reaches the leader's last entry as it is
/// now.
async fn log_caught_up(cluster: &TestCluster, id: u64) {
    let target = leader_last_index(cluster).await;
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let at = cluster.status(id).await.map(|s| s.last_log_index).ok();
        if at >= Some(target) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "node {id}'s log never reached {target} (at {at:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn follower(cluster: &TestCluster) -> u64 {
    let leader = cluster.wait_leader(WITHIN).await.expect("leader");
    (1..=3).find(|id| *id != leader).expect("a follower")
}

/// The oldest log table of a follower is damaged while it is down: its
/// entries were applied long before, so the node purges its log behind a
/// snapshot of its state, and takes part in elections at once.
#[tokio::test(flavor = "multi_thread")]
async fn damage_to_applied_log_entries_is_purged_behind_a_snapshot() {
    let mut cluster = TestCluster::builder(3).args(ARGS).start().await.expect("cluster");
    let victim = follower(&cluster).await;
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(cluster.client().handle_store("rot").build());
    let mut acked = mint(&store, 3000, "before").await;
    cluster.stop(victim).expect("stop");
    let tables = log_tables(&cluster, victim);
    assert!(!tables.is_empty(), "the follower's log reached a table file");
    damage(&tables[0], 0.0);
    cluster.restart(victim).expect("restart");
    acked.extend(mint(&store, 200, "after").await);
    assert_whole(&cluster, "rot", &acked, 0).await;
    let log = cluster.log(victim);
    assert!(
        log.contains("the Raft log is damaged on disk") && log.contains("nothing unapplied was lost"),
        "the node found the damage below its applied index:\n{}",
        cluster.log_tail(victim, 40)
    );
    assert!(!log.contains("no part in elections"), "the node did not abstain");
}

/// A follower whose applies stall (a failpoint sleeps in every apply
/// batch) takes entries it does not apply; its newest log table, all
/// unapplied, is damaged while it is down. It cuts its log at the first
/// damaged entry, abstains from elections until the leader has sent them
/// again, then takes part again.
#[tokio::test(flavor = "multi_thread")]
async fn damage_to_unapplied_log_entries_is_fetched_again_before_the_node_votes() {
    assert!(POINTS.contains(&"apply-mid-batch"));
    let mut cluster = TestCluster::builder(3).args(ARGS).start().await.expect("cluster");
    let victim = follower(&cluster).await;
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(cluster.client().handle_store("lost").build());
    let mut acked = mint(&store, 100, "applied").await;
    // Everything in the victim's log applied before it stops: a node that
    // restarts with entries to apply serves nothing until it has, and its
    // applies are about to stall.
    let last = leader_last_index(&cluster).await;
    cluster
        .wait_applied(victim, last, WITHIN)
        .await
        .expect("the victim applied");
    cluster.stop(victim).expect("stop");
    cluster
        .restart_with_env(victim, &[(FAILPOINTS, "apply-mid-batch=sleep(600000)")])
        .expect("restart with stalled applies");
    let before = log_tables(&cluster, victim).len();
    acked.extend(mint(&store, 3000, "unapplied").await);
    // The mints need only the other two nodes: wait for the victim's log
    // to hold them too (the leader may still be dialing it again).
    log_caught_up(&cluster, victim).await;
    cluster.kill(victim);
    let tables = log_tables(&cluster, victim);
    assert!(tables.len() > before, "the unapplied entries reached a table file");
    damage(tables.last().expect("the newest table"), 0.5);
    cluster.restart_with_env(victim, &[]).expect("restart");
    acked.extend(mint(&store, 200, "after").await);
    assert_whole(&cluster, "lost", &acked, 0).await;
    let log = cluster.log(victim);
    assert!(
        log.contains("the Raft log is damaged on disk") && log.contains("no part in elections until"),
        "the node cut its log above its applied index and abstained:\n{}",
        cluster.log_tail(victim, 40)
    );
    let deadline = tokio::time::Instant::now() + WITHIN;
    while !cluster.log(victim).contains("takes part in elections again") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the node never ended its abstention:\n{}",
            cluster.log_tail(victim, 40)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A cluster (nodes run with `args`) whose follower, killed after 400
/// mints to store `ns`, has its write-ahead log damaged in the middle
/// (the entries not yet flushed to table files) and is started again.
async fn wal_damaged_follower(
    args: &[&str],
    ns: &str,
) -> (TestCluster, u64, Arc<ClusterHandleStore<Value>>, HashMap<String, Value>) {
    let mut cluster = TestCluster::builder(3)
        .args(args.iter().copied())
        .start()
        .await
        .expect("cluster");
    let victim = follower(&cluster).await;
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(cluster.client().handle_store(ns).build());
    let acked = mint(&store, 400, "before").await;
    cluster.kill(victim);
    damage_wal(&cluster, victim, 800 * 1024);
    cluster.restart(victim).expect("restart");
    (cluster, victim, store, acked)
}

/// A follower's write-ahead log is damaged in its middle while it is down
/// (its entries not yet flushed to table files): the replay ends at the
/// damaged record, the node starts with a shorter log, and the leader,
/// finding less there than the node had acknowledged, sends the rest.
#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_wal_record_ends_the_replay_and_the_leader_sends_the_rest() {
    let (cluster, victim, store, mut acked) = wal_damaged_follower(&[], "wal").await;
    acked.extend(mint(&store, 200, "after").await);
    assert_whole(&cluster, "wal", &acked, 0).await;
    // RocksDB's own log (LOG, and LOG.old.* of each earlier open) says
    // where the replay stopped.
    let rocks_log: String = db_files(&cluster, victim, |p| {
        p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("LOG"))
    })
    .into_iter()
    .map(|p| std::fs::read_to_string(p).expect("RocksDB's log"))
    .collect();
    assert!(
        rocks_log.contains("Corruption"),
        "the replay met the damaged record:\n{}",
        rocks_log
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("ERROR"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The same damage under `--wal-recovery strict`: the node does not start,
/// and says why; the other two go on.
#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_wal_record_stops_a_strict_node_at_start() {
    let (mut cluster, victim, store, mut acked) = wal_damaged_follower(&["--wal-recovery", "strict"], "strict").await;
    let status = cluster.wait_exit(victim, WITHIN).await.expect("the node stops");
    assert!(!status.success(), "{status}");
    let log = cluster.log(victim);
    assert!(
        log.contains("is damaged on disk") && log.contains("replace the member"),
        "{}",
        cluster.log_tail(victim, 20)
    );
    acked.extend(mint(&store, 50, "after").await);
    assert_read_back(&store, &acked, Consistency::Linearizable, "the two others").await;
}
