//! A full disk and a slow one. A node's data on a small tmpfs of its own
//! (as root: skipped, saying why, elsewhere) is filled by a ballast file,
//! as another program filling the disk would, and freed again; a node whose
//! log syncs take a second (a failpoint) stays in the cluster.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use handlestore_client::{ClusterHandleStore, HandleStore, Reason, Ttl};
use handlestore_node::failpoints::ENV as FAILPOINTS;
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, TestClusterBuilder};
use serde_json::{Value, json};

use handlestore_tests::acked::{Minters, assert_whole};

/// Every node keeps this much free (`--min-free-disk-mb`).
const RESERVE_MB: u64 = 64;

/// A tmpfs mounted on a directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size_mb: u64) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size_mb}m"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Self(dir.to_path_buf()))
    }

    /// Whether a tmpfs can be mounted here; why not, if not.
    fn available() -> Result<(), String> {
        let probe = tempfile::tempdir().map_err(|e| e.to_string())?;
        Self::mount(&probe.path().join("t"), 1)
            .map(drop)
            .map_err(|e| format!("cannot mount a tmpfs ({e}); run as root"))
    }

    /// Fills the file system with a ballast file until `leave_mb` is free.
    fn fill(&self, leave_mb: u64) -> PathBuf {
        let ballast = self.0.join("ballast");
        let free = free_bytes(&self.0);
        let size = free.saturating_sub(leave_mb << 20);
        let out = Command::new("fallocate")
            .args(["-l", &size.to_string()])
            .arg(&ballast)
            .output()
            .expect("fallocate");
        assert!(
            out.status.success(),
            "fallocate: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ballast
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).output();
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(dir)
        .output()
        .expect("df");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .expect("df's answer")
}

fn skipped(test: &str) -> bool {
    match Tmpfs::available() {
        Ok(()) => false,
        Err(why) => {
            eprintln!("SKIPPED: {test}: {why}");
            true
        }
    }
}

async fn disk(cluster: &TestCluster, id: u64) -> pb::DiskStatus {
    cluster.status(id).await.expect("status").disk.expect("disk status")
}

/// Waits until node `id`'s disk status satisfies `ok` (10 s at most).
async fn wait_disk(cluster: &TestCluster, id: u64, what: &str, ok: impl Fn(&pb::DiskStatus) -> bool) -> pb::DiskStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let d = disk(cluster, id).await;
        if ok(&d) {
            return d;
        }
        assert!(Instant::now() < deadline, "node {id}'s disk never was {what}: {d:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn readyz(cluster: &TestCluster, id: u64) -> (u16, String) {
    let resp = reqwest::get(format!("http://{}/readyz", cluster.node(id).addr))
        .await
        .expect("readyz");
    (resp.status().as_u16(), resp.text().await.expect("body"))
}

/// Asks the leader to hand leadership to `to` until it leads.
async fn lead(cluster: &TestCluster, to: u64) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while cluster.wait_leader(Duration::from_secs(5)).await.ok() != Some(to) {
        assert!(Instant::now() < deadline, "node {to} never led");
        if let Ok(mut admin) = cluster.leader_admin().await {
            let _ = admin.transfer_leader(pb::TransferLeaderRequest { to }).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// Starts `builder`'s cluster, every node keeping `RESERVE_MB` free, with
/// node `id`'s data on a 512 MiB tmpfs of its own.
async fn on_tmpfs(builder: TestClusterBuilder, id: u64) -> (TestCluster, Tmpfs) {
    let (cluster, mut mounts) = on_tmpfses(builder, &[id]).await;
    (cluster, mounts.pop().expect("mounted"))
}

/// Starts `builder`'s cluster, every node keeping `RESERVE_MB` free, with
/// each of nodes `ids`'s data on a 512 MiB tmpfs of its own (in that order).
async fn on_tmpfses(builder: TestClusterBuilder, ids: &[u64]) -> (TestCluster, Vec<Tmpfs>) {
    let mounts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mounted = mounts.clone();
    let ids = ids.to_vec();
    let cluster = builder
        .args(["--min-free-disk-mb", &RESERVE_MB.to_string()])
        .before_start(move |nodes, _| {
            for id in ids {
                let node = nodes.iter().find(|n| n.id == id).expect("the node");
                let fs = Tmpfs::mount(&node.data, 512).map_err(anyhow::Error::msg)?;
                mounted.lock().expect("lock").push(fs);
            }
            Ok(())
        })
        .start()
        .await
        .expect("cluster");
    let tmpfs = std::mem::take(&mut *mounts.lock().expect("lock"));
    (cluster, tmpfs)
}

/// Node 3 leads when its disk fills under load: it refuses writes, hands
/// leadership to a node with room and takes no more entries (it falls
/// behind, and says why in `status`, `/readyz` and a metric), while the
/// others write on. Once the ballast is gone it takes entries again and
/// catches up; every acknowledged write is then on every node, once.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_whose_disk_fills_takes_no_entries_and_catches_up_once_space_is_freed() {
    if skipped("a full disk") {
        return;
    }
    let (cluster, tmpfs) = on_tmpfs(TestCluster::builder(3).metrics_ports(true), 3).await;
    lead(&cluster, 3).await;
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(cluster.client().handle_store("diskfull").build());
    let minters = Minters::start(&store, 16);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let ballast = tmpfs.fill(RESERVE_MB / 2);
    let full = wait_disk(&cluster, 3, "full", |d| d.full).await;
    assert!(full.problem.contains("--min-free-disk-mb"), "{full:?}");
    // Node 3 hands leadership to one of the others, which can commit
    // without it: they name the new leader.
    let deadline = Instant::now() + Duration::from_secs(15);
    let leader = loop {
        let (s1, s2) = (
            cluster.status(1).await.expect("status"),
            cluster.status(2).await.expect("status"),
        );
        if s1.leader_id == s2.leader_id && [1, 2].contains(&s1.leader_id) {
            break s1.leader_id;
        }
        assert!(Instant::now() < deadline, "node 3 still leads with a full disk: {s1:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let (code, body) = readyz(&cluster, 3).await;
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("disk full"), "{body}");
    assert_eq!(cluster.metric(3, "handlestore_disk_full").await, Some(1.0));
    assert_eq!(cluster.metric(leader, "handlestore_disk_full").await, Some(0.0));

    // The others write on; node 3 takes none of it.
    let before = (
        minters.acked_so_far(),
        cluster.status(3).await.expect("status").last_log_index,
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = (
        minters.acked_so_far(),
        cluster.status(3).await.expect("status").last_log_index,
    );
    assert!(
        after.0 > before.0 + 50,
        "writes stalled with one full disk: {before:?} -> {after:?}"
    );
    assert_eq!(after.1, before.1, "node 3 took entries with a full disk");

    std::fs::remove_file(&ballast).expect("free the ballast");
    wait_disk(&cluster, 3, "free", |d| !d.full && d.problem.is_empty()).await;
    let (acked, failed) = minters.stop().await;
    eprintln!("{} writes acknowledged, {failed} failed", acked.len());
    assert_whole(&cluster, "diskfull", &acked, failed).await;
    let (code, body) = readyz(&cluster, 3).await;
    assert_eq!(code, 200, "{body}");
}

/// One node alone, its disk full: a write fails with the reason and the
/// disk's state in its message, reads of what was written go on, and
/// writes work again once space is freed.
#[tokio::test(flavor = "multi_thread")]
async fn with_every_disk_full_writes_fail_clearly_and_reads_go_on() {
    if skipped("writes on a full disk") {
        return;
    }
    let (cluster, tmpfs) = on_tmpfs(TestCluster::builder(1), 1).await;
    let store: ClusterHandleStore<Value> = cluster
        .client_builder(cluster.endpoints())
        .deadline(Duration::from_secs(2))
        .build()
        .expect("client")
        .handle_store("full")
        .build();
    let id = store.mint(json!({"before": true}), Ttl::Default).await.expect("mint");

    let ballast = tmpfs.fill(RESERVE_MB / 2);
    wait_disk(&cluster, 1, "full", |d| d.full).await;
    let refused = store
        .mint(json!({"during": true}), Ttl::Default)
        .await
        .expect_err("a write on a full disk");
    let said = refused.to_string();
    assert!(
        refused.reason() == Some(Reason::DiskFull) || said.contains("disk full"),
        "{said}"
    );
    assert!(said.contains("--min-free-disk-mb"), "{said}");
    assert_eq!(store.get(&id).await.expect("read"), Some(json!({"before": true})));
    assert_eq!(store.len().await.expect("len"), 1, "the refused write changed nothing");

    std::fs::remove_file(&ballast).expect("free the ballast");
    wait_disk(&cluster, 1, "free", |d| !d.full).await;
    store
        .mint(json!({"after": true}), Ttl::Default)
        .await
        .expect("a write once space is freed");
}

/// A follower whose log syncs take a second: the leader and the other
/// follower make the quorum, so writes go at their pace, not its; no
/// election is called; it reports itself slow; it catches up.
#[tokio::test(flavor = "multi_thread")]
async fn a_follower_with_a_slow_disk_slows_no_write_and_says_so() {
    let cluster = TestCluster::builder(3)
        .node_env(3, FAILPOINTS, "log-sync-before=sleep(1000)")
        .start()
        .await
        .expect("cluster");
    lead(&cluster, 1).await;
    let term = cluster.status(1).await.expect("status").term;
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("slowdisk").build();
    let mut acked = std::collections::HashMap::new();
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < Duration::from_secs(5) {
        let value = json!({"n": n});
        let id = store.mint(value.clone(), Ttl::Default).await.expect("mint");
        acked.insert(id, value);
        n += 1;
    }
    // Waiting for node 3 would allow about one write a second.
    assert!(
        n >= 25,
        "only {n} sequential writes in 5 s: they waited for the slow disk"
    );
    let slow = wait_disk(&cluster, 3, "slow", |d| d.slow).await;
    assert!(slow.problem.contains("slow disk"), "{slow:?}");
    assert!(!disk(&cluster, 1).await.slow, "the leader's disk is not slow");
    let now = cluster.status(1).await.expect("status");
    assert_eq!(
        (now.state.as_str(), now.term),
        ("leader", term),
        "an election was called"
    );
    assert_whole(&cluster, "slowdisk", &acked, 0).await;
}

/// Linearizable reads of known handles in a loop, through every node, each
/// failure kept with what it said.
struct Reader {
    stop: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<(u64, Vec<String>)>,
}

impl Reader {
    fn start(store: Arc<ClusterHandleStore<Value>>, ids: Vec<String>) -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let halt = stop.clone();
        let task = tokio::spawn(async move {
            let (mut served, mut failed) = (0u64, Vec::new());
            for id in ids.iter().cycle() {
                if halt.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                match store.get(id).await {
                    Ok(Some(_)) => served += 1,
                    Ok(None) => failed.push(format!("{id} not found")),
                    Err(e) => failed.push(e.to_string()),
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (served, failed)
        });
        Self { stop, task }
    }

    async fn stop(self) -> (u64, Vec<String>) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.task.await.expect("reader")
    }
}

/// Every node's (leader, term, state).
async fn leaders(cluster: &TestCluster) -> Vec<(u64, u64, String)> {
    let mut seen = Vec::new();
    for id in 1..=3 {
        let s = cluster.status(id).await.expect("status");
        seen.push((s.leader_id, s.term, s.state));
    }
    seen
}

/// Node 1 leads; the disks of `full` fill, in that order, under writes.
/// With two of three full no write can commit: writes are refused at once
/// (`disk_full`, naming the full nodes), while linearizable reads are served
/// throughout; node 1 keeps leading, full or not (a node with room could
/// not commit its first entry), and the full followers keep it as their
/// leader. Freeing the space, the last filled first, deposes no one: the
/// term stays, and writes go on; nothing acknowledged is lost.
async fn two_disks_full(full: [u64; 2]) {
    let (cluster, disks) = on_tmpfses(TestCluster::builder(3), &[1, 2, 3]).await;
    lead(&cluster, 1).await;
    let term = cluster.status(1).await.expect("status").term;
    let client = cluster
        .client_builder(cluster.endpoints())
        .deadline(Duration::from_secs(3))
        .build()
        .expect("client");
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(client.handle_store("twofull").build());
    let mut mine = std::collections::HashMap::new();
    for n in 0..20 {
        let value = json!({"n": n});
        mine.insert(store.mint(value.clone(), Ttl::Default).await.expect("mint"), value);
    }
    let reader = Reader::start(store.clone(), mine.keys().cloned().collect());
    let minters = Minters::start(&store, 4);
    let mut ballasts = Vec::new();
    for id in full {
        ballasts.push(disks[(id - 1) as usize].fill(RESERVE_MB / 2));
        wait_disk(&cluster, id, "full", |d| d.full).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    // Writes are refused, saying why; reads go on; nobody campaigns.
    let refused = store
        .mint(json!({"during": true}), Ttl::Default)
        .await
        .expect_err("a write with two full disks of three");
    // The client retries a refusal for a full disk until its deadline.
    let said = refused.to_string();
    assert!(
        refused.reason() == Some(Reason::DiskFull) || said.contains("disk full"),
        "{said}"
    );
    let held = Instant::now();
    while held.elapsed() < Duration::from_secs(4) {
        let seen = leaders(&cluster).await;
        assert!(
            seen.iter().all(|(leader, t, _)| (*leader, *t) == (1, term)),
            "leadership moved with two full disks: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(leaders(&cluster).await[0].2, "leader");

    // Freed in the reverse order: a full leader whose follower is freed
    // first has a majority with room, and hands leadership to it, as it
    // should (`raft::life::disk_guard`); that is no election by freeing.
    for (id, ballast) in full.iter().zip(&ballasts).rev() {
        std::fs::remove_file(ballast).expect("free the ballast");
        wait_disk(&cluster, *id, "free", |d| !d.full).await;
    }
    let freed = Instant::now();
    let deadline = freed + Duration::from_secs(20);
    let mut unknown = 1; // the refused write: refused before it was proposed, but counted as unknown
    loop {
        let value = json!({"after": true});
        match store.mint(value.clone(), Ttl::Default).await {
            Ok(id) => {
                mine.insert(id, value);
                break;
            }
            Err(_) => unknown += 1,
        }
        assert!(Instant::now() < deadline, "no write within 20 s of freeing space");
    }
    eprintln!(
        "the first write after freeing space: {} ms",
        freed.elapsed().as_millis()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let seen = leaders(&cluster).await;
    assert!(
        seen.iter().all(|(leader, t, _)| (*leader, *t) == (1, term)),
        "freeing space deposed the leader: {seen:?}"
    );
    let (served, failed) = reader.stop().await;
    eprintln!("{served} linearizable reads served, {} failed", failed.len());
    assert!(failed.is_empty(), "reads failed with two full disks: {failed:?}");
    let (mut acked, failed) = minters.stop().await;
    acked.extend(mine);
    assert_whole(&cluster, "twofull", &acked, failed + unknown).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_both_followers_disks_full_reads_go_on_and_freeing_space_deposes_no_leader() {
    if skipped("two full followers") {
        return;
    }
    two_disks_full([2, 3]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_follower_and_then_the_leaders_disk_full_reads_go_on_and_freeing_space_deposes_no_leader() {
    if skipped("a full follower, then a full leader") {
        return;
    }
    two_disks_full([3, 1]).await;
}

/// Three nodes on disks that report no size at all (`powercut_fs
/// --no-size`: `statfs` says 0 blocks in all and none available, as LazyFS
/// and some FUSE and CSI volumes do). A size of zero is unknown, not full:
/// writes are taken and read back; every node is ready, says once in its
/// log that its disk-full guard cannot work there, and `status` (its table,
/// `--json` and the RPC) and a metric say the size is unknown, not that the
/// disk is degraded.
#[tokio::test(flavor = "multi_thread")]
async fn nodes_on_disks_that_report_no_size_take_writes_and_say_the_size_is_unknown() {
    if let Some(why) = handlestore_tests::powercut::mount::unavailable() {
        eprintln!("SKIPPED: disks that report no size: {why}");
        return;
    }
    let cluster = TestCluster::builder(3)
        .powercut_disks(true)
        .powercut_size(handlestore_tests::powercut::Size::Unknown)
        .metrics_ports(true)
        // A leader or not, the writes say what is wrong.
        .wait_leader(false)
        .args(["--min-free-disk-mb", &RESERVE_MB.to_string()])
        .start()
        .await
        .expect("cluster");
    let fs = nix::sys::statvfs::statvfs(&cluster.node(1).data).expect("statvfs");
    assert_eq!((fs.blocks(), fs.blocks_available()), (0, 0), "the disk reports a size");
    let store: ClusterHandleStore<Value> = cluster
        .client_builder(cluster.endpoints())
        .deadline(Duration::from_secs(10))
        .build()
        .expect("client")
        .handle_store("sizeless")
        .build();
    let mut minted = Vec::new();
    for n in 0..20 {
        let id = store
            .mint(json!({ "n": n }), Ttl::Default)
            .await
            .unwrap_or_else(|e| panic!("write {n} on a disk that reports no size: {e}"));
        minted.push((id, n));
    }
    for (id, n) in &minted {
        assert_eq!(store.get(id).await.expect("read"), Some(json!({ "n": n })));
    }

    for id in 1..=3 {
        let d = disk(&cluster, id).await;
        assert!(d.size_unknown && !d.full && d.problem.is_empty(), "node {id}: {d:?}");
        // Ready in the end: a node also waits for its peers' clocks to be
        // measured (a probe every 500 ms), which a loaded machine delays.
        cluster
            .wait_ready(id, Duration::from_secs(30))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cluster.metric(id, "handlestore_disk_size_known").await, Some(0.0));
        assert_eq!(cluster.metric(id, "handlestore_disk_full").await, Some(0.0));
        assert!(
            cluster
                .metric(id, "handlestore_disk_free_bytes")
                .await
                .is_some_and(f64::is_nan),
            "node {id}: free bytes shown with no size"
        );
        let said = cluster.log(id).matches("reports no size").count();
        assert_eq!(said, 1, "node {id} said its disk reports no size {said} times");
    }

    let out = cluster.cli(&["status"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}{}", String::from_utf8_lossy(&out.stderr));
    assert!(table.contains("disk size unknown"), "{table}");
    for id in 1..=3 {
        assert!(
            table.contains(&format!("node {id}: its data directory's file system reports no size")),
            "{table}"
        );
    }
    assert!(!table.contains("disks full or slow"), "{table}");
    let out = cluster.cli(&["status", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("status --json");
    let nodes = doc["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 3, "{doc}");
    for n in nodes {
        assert_eq!(n["disk"]["size_unknown"], json!(true), "{n}");
        assert_eq!(n["disk"]["full"], json!(false), "{n}");
    }
}
