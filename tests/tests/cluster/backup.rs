//! Backup and restore: `handlestore snapshot save` from a live cluster under
//! write load, `snapshot restore` into the data directories of a new
//! three-node cluster, which answers every write acknowledged before the
//! save began, with the same expiry times; a damaged, truncated or foreign
//! file is refused and leaves no directory; a restored node is a cluster of
//! its own that the old one cannot take in.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use handlestore_client::{ClusterHandleStore, HandleStore, Ttl};
use handlestore_tests::TestCluster;
use handlestore_tests::cluster::handlestore_bin;

const WITHIN: Duration = Duration::from_secs(30);

async fn named(cluster: &TestCluster) -> String {
    cluster.wait_named(WITHIN).await.expect("named")
}

fn run(args: &[&str], env: Option<(&str, String)>) -> std::process::Output {
    let mut c = std::process::Command::new(handlestore_bin());
    c.args(args);
    if let Some((k, v)) = env {
        c.env(k, v);
    }
    c.output().expect("running the CLI")
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn restore(file: &Path, data: &Path, id: u64, initial: &str) -> std::process::Output {
    let data = data.to_str().expect("utf-8 path");
    let file = file.to_str().expect("utf-8 path");
    let id = id.to_string();
    run(
        &[
            "snapshot",
            "restore",
            file,
            "--data",
            data,
            "--id",
            &id,
            "--initial-cluster",
            initial,
        ],
        None,
    )
}

/// Acknowledged writes: id, value, and when the acknowledgement came.
type Acked = Arc<Mutex<Vec<(String, String, Instant)>>>;

/// Mints handles until `stop`, recording each acknowledged one.
fn write_under_load(store: ClusterHandleStore<String>, acked: Acked, stop: Arc<tokio::sync::Notify>) {
    tokio::spawn(async move {
        for i in 0u64.. {
            let value = format!("load-{i}");
            let minted = tokio::select! {
                _ = stop.notified() => return,
                m = store.mint(value.clone(), Ttl::After(Duration::from_secs(3600))) => m,
            };
            if let Ok(id) = minted {
                acked.lock().expect("lock").push((id, value, Instant::now()));
            }
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_saved_under_load_restores_into_a_new_cluster_with_every_acknowledged_write() {
    let old = TestCluster::start(3).await.expect("cluster");
    let old_name = named(&old).await;
    let carts: ClusterHandleStore<String> = old.client().handle_store("cart").build();
    let load: ClusterHandleStore<String> = old.client().handle_store("cart").build();
    let mut kept = Vec::new();
    for i in 0..50 {
        let ttl = if i % 2 == 0 {
            Ttl::Never
        } else {
            Ttl::After(Duration::from_secs(3600))
        };
        let id = carts.mint(format!("kept-{i}"), ttl).await.expect("mint");
        let v = carts.get_versioned(&id).await.expect("get").expect("present");
        kept.push((id, v.value, v.expires_at_ms));
    }
    let short = carts
        .mint("short".into(), Ttl::After(Duration::from_secs(4)))
        .await
        .expect("mint");

    let acked: Acked = Arc::default();
    let stop = Arc::new(tokio::sync::Notify::new());
    write_under_load(load, acked.clone(), stop.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let file = old.dir().join("backup.hsbak");
    let save_began = Instant::now();
    let out = tokio::task::block_in_place(|| old.cli(&["snapshot", "save", file.to_str().expect("path")]));
    stop.notify_one();
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("sha256"), "{}", text(&out));
    let before: Vec<(String, String)> = acked
        .lock()
        .expect("lock")
        .iter()
        .filter(|(_, _, at)| *at < save_began)
        .map(|(id, v, _)| (id.clone(), v.clone()))
        .collect();
    assert!(!before.is_empty(), "writes were acknowledged while the load ran");
    let again = tokio::task::block_in_place(|| old.cli(&["snapshot", "save", file.to_str().expect("path")]));
    assert!(!again.status.success(), "an existing file is not overwritten");

    let file_for_restore = file.clone();
    let restored = TestCluster::builder(3)
        .before_start(move |nodes, initial| {
            for n in nodes {
                let out = restore(&file_for_restore, &n.data, n.id, initial);
                anyhow::ensure!(out.status.success(), "restore: {}", text(&out));
            }
            Ok(())
        })
        .start()
        .await
        .expect("the restored cluster");
    let new_name = named(&restored).await;
    assert_ne!(new_name, old_name, "a restored cluster has a name of its own");

    let store: ClusterHandleStore<String> = restored.client().handle_store("cart").build();
    for (id, value, expires) in &kept {
        let v = store.get_versioned(id).await.expect("get").expect("kept");
        assert_eq!((&v.value, v.expires_at_ms), (value, *expires), "handle {id}");
    }
    for (id, value) in &before {
        assert_eq!(store.get(id).await.expect("get").as_ref(), Some(value), "handle {id}");
    }
    // Its expiry was kept too: it is gone once due, as it would have been.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(store.get(&short).await.expect("get"), None, "the short TTL ran out");
    let id = store
        .mint("new".into(), Ttl::Never)
        .await
        .expect("a write to the restored cluster");
    assert_eq!(store.get(&id).await.expect("get").as_deref(), Some("new"));
}

/// Writes `bytes` to a file in `dir` and restores it into `dir/data`: it
/// must fail saying `says`, and leave no directory.
fn refused(dir: &Path, name: &str, bytes: &[u8], says: &str) {
    let file = dir.join(name);
    std::fs::write(&file, bytes).expect("write");
    let data = dir.join(format!("data-{name}"));
    let out = restore(&file, &data, 1, "1=127.0.0.1:1");
    assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out));
    assert!(text(&out).contains(says), "{name}: {}", text(&out));
    let status = run(&["snapshot", "status", file.to_str().expect("path")], None);
    assert_eq!(status.status.code(), Some(2), "{name}: {}", text(&status));
    assert!(!data.exists(), "{name} left {}", data.display());
    let leftovers: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().contains(".restoring-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_or_foreign_backup_is_refused_and_leaves_nothing() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let carts: ClusterHandleStore<String> = cluster.client().handle_store("cart").build();
    carts.mint("x".into(), Ttl::Never).await.expect("mint");
    let file = cluster.dir().join("good.hsbak");
    let out = tokio::task::block_in_place(|| cluster.cli(&["snapshot", "save", file.to_str().expect("path")]));
    assert!(out.status.success(), "{}", text(&out));
    let good = std::fs::read(&file).expect("read");
    let dir = tempfile::tempdir().expect("tempdir");

    refused(dir.path(), "truncated", &good[..good.len() / 2], "checksum");
    let mut flipped = good.clone();
    let mid = good.len() / 2;
    flipped[mid] ^= 0x40;
    refused(dir.path(), "corrupted", &flipped, "does not match");
    let foreign = format!("{{\"not\": \"a backup\", \"pad\": \"{}\"}}", "x".repeat(100));
    refused(dir.path(), "foreign", foreign.as_bytes(), "not a handlestore backup");
    refused(dir.path(), "tiny", b"{}", "too short to be a backup");
    let snap = std::fs::read_dir(cluster.node(1).data.join("snapshots"))
        .expect("snapshots")
        .map(|e| e.expect("entry").path())
        .find(|p| p.ends_with("current.snap"));
    if let Some(snap) = snap {
        refused(
            dir.path(),
            "node-snapshot",
            &std::fs::read(snap).expect("read"),
            "not a backup",
        );
    }
    // Into a directory that holds something: refused, the directory kept.
    let busy = dir.path().join("busy");
    std::fs::create_dir_all(&busy).expect("mkdir");
    std::fs::write(busy.join("keep"), b"mine").expect("write");
    let out = restore(&file, &busy, 1, "1=127.0.0.1:1");
    assert!(
        !out.status.success() && text(&out).contains("not empty"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(busy.join("keep")).expect("kept"), b"mine");
    let out = restore(&file, &dir.path().join("d"), 4, "1=127.0.0.1:1");
    assert!(text(&out).contains("not in --initial-cluster"), "{}", text(&out));

    let status = run(&["snapshot", "status", file.to_str().expect("path")], None);
    assert!(
        status.status.success() && text(&status).contains("sha256"),
        "{}",
        text(&status)
    );
    // No such file: "not found", as the CLI's exit codes say.
    let missing = dir.path().join("missing.hsbak");
    let status = run(&["snapshot", "status", missing.to_str().expect("path")], None);
    assert_eq!(status.status.code(), Some(1), "{}", text(&status));
    let out = restore(&missing, &dir.path().join("m"), 1, "1=127.0.0.1:1");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_node_is_refused_by_the_cluster_its_backup_came_from() {
    let old = TestCluster::start(3).await.expect("cluster");
    let old_name = named(&old).await;
    let carts: ClusterHandleStore<String> = old.client().handle_store("cart").build();
    carts.mint("before".into(), Ttl::Never).await.expect("mint");
    let file = old.dir().join("b.hsbak");
    let out = tokio::task::block_in_place(|| old.cli(&["snapshot", "save", file.to_str().expect("path")]));
    assert!(out.status.success(), "{}", text(&out));
    let restored = TestCluster::builder(1)
        .before_start(move |nodes, initial| {
            let out = restore(&file, &nodes[0].data, 1, initial);
            anyhow::ensure!(out.status.success(), "restore: {}", text(&out));
            Ok(())
        })
        .start()
        .await
        .expect("restored node");
    let applied = restored.status(1).await.expect("status").applied_index;

    // The old cluster is told to take the restored node in as a learner:
    // the restored node refuses its leader, whose log never reaches it.
    let addr = restored.node(1).addr.clone();
    let out = tokio::task::block_in_place(|| old.cli(&["member", "add", "4", &addr, "--no-wait"]));
    assert!(out.status.success(), "{}", text(&out));
    carts.mint("after".into(), Ttl::Never).await.expect("mint");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log = restored.log(1);
    assert!(
        log.contains("refused an AppendEntries from a node of another cluster") && log.contains(&old_name),
        "{}",
        restored.log_tail(1, 20)
    );
    let now = restored.status(1).await.expect("status");
    assert_ne!(now.cluster_id, old_name);
    assert!(
        now.applied_index <= applied + 2,
        "the old cluster's log reached it: {applied} -> {}",
        now.applied_index
    );
}
