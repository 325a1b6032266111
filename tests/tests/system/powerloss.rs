//! Power loss. A kill leaves the kernel's page cache intact, so no kill can
//! catch a missing fsync; here every node's data directory is on
//! `powercut_fs` (tests/src/powercut: LazyFS's model, our own FUSE file
//! system), which holds what a node writes in its own memory until the
//! node syncs that file, and drops it all at a power cut. Power is cut to
//! one node, then two, then all three, under write load: every node starts
//! again, every acknowledged write reads back and is on every node, none
//! applied twice; and cut to a node at the moment it writes a table,
//! manifest or snapshot file. First, the file system itself is shown to
//! keep exactly what was synced. Skipped, saying why, without root or `/dev/fuse`.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use handlestore_client::{ClusterHandleStore, Consistency};
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use handlestore_tests::acked::{Minters, assert_read_back, assert_whole};
use handlestore_tests::powercut::mount::{PowercutMount, unavailable};
use handlestore_tests::powercut::{CUT_DONE, Names};
use serde_json::Value;

/// Whether this machine cannot mount `powercut_fs` (and the test skips).
fn skipped() -> bool {
    match unavailable() {
        Some(why) => {
            eprintln!("SKIPPED: {why}");
            true
        }
        None => false,
    }
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Syncs directory `dir` (the names made in it are durable).
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes through the mount at `m`, and syncs the directory: the names
/// are durable, the data only where the file was synced.
fn write_some_synced(m: &Path) -> std::io::Result<()> {
    std::fs::write(m.join("never-synced"), b"lost")?;
    let mut f = File::create(m.join("synced"))?;
    f.write_all(b"kept")?;
    f.sync_data()?;
    f.write_all(b", then lost")?;
    f.write_all_at(b"KE", 0)?;
    drop(f);
    // Several pages, synced, then one page in the middle overwritten.
    let big: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let f = File::create(m.join("big"))?;
    f.write_all_at(&big, 0)?;
    f.sync_all()?;
    f.write_all_at(&[0xFF; 5000], 9000)?;
    f.set_len(30_000)?;
    drop(f);
    let mut f = File::create(m.join("renamed-from"))?;
    f.write_all(b"renamed")?;
    f.sync_data()?;
    std::fs::write(m.join("renamed-to"), b"replaced")?;
    let mut f = File::create(m.join("doomed"))?;
    f.write_all(b"doomed")?;
    f.sync_data()?;
    std::fs::create_dir(m.join("dir"))?;
    std::fs::create_dir(m.join("dir2"))?;
    std::fs::write(m.join("dir2/inner"), b"")?;
    sync_dir(&m.join("dir2"))?;
    sync_dir(m)
}

/// Changes names after that, syncing only `dir2`: a rename over a file, a
/// hard link, a new file (its data synced), an unlink, and a rename in
/// `dir2`.
fn rename_some_unsynced(m: &Path) -> std::io::Result<()> {
    std::fs::rename(m.join("renamed-from"), m.join("renamed-to"))?;
    std::fs::hard_link(m.join("renamed-to"), m.join("dir/linked"))?;
    let mut f = File::create(m.join("late"))?;
    f.write_all(b"late")?;
    f.sync_all()?;
    std::fs::remove_file(m.join("doomed"))?;
    std::fs::rename(m.join("dir2/inner"), m.join("dir2/moved"))?;
    sync_dir(&m.join("dir2"))
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The file system keeps exactly what was synced: a file's data once the
/// file is synced, a name once its directory is. Before the cut every read
/// sees every write and every name; after it, before the mount starts
/// again, every call fails; mounted again, a file written and never
/// synced is there (its directory was synced) but empty, a synced file
/// keeps what was synced and loses what was written after, a truncation
/// is kept, and every name change after the directory's last sync is
/// undone: the rename over a file, the hard link, the new file, the
/// unlink; the rename in the directory synced after it stays.
#[test]
fn powercut_fs_keeps_what_was_synced_and_drops_the_rest() {
    if skipped() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let mut disk = PowercutMount::start(&p.join("disk"), &p.join("mnt"), &p.join("fs.log")).expect("mount");
    let m = disk.mountpoint().to_path_buf();
    write_some_synced(&m).expect("writes through the mount");
    rename_some_unsynced(&m).expect("name changes through the mount");
    assert_eq!(read(&m.join("synced")), b"KEpt, then lost");
    assert_eq!(
        read(&disk.backing().join("synced")),
        b"kept",
        "the backing file holds what was synced"
    );
    assert_eq!(read(&m.join("big")).len(), 30_000);
    assert_eq!(read(&m.join("never-synced")), b"lost");
    assert_eq!(read(&m.join("dir/linked")), b"renamed");
    let before = ["big", "dir", "dir2", "late", "never-synced", "renamed-to", "synced"];
    assert_eq!(names(&m), before, "the file system's own stash is not shown");

    disk.cut().expect("cut");
    let after_cut = std::fs::read(m.join("synced")).expect_err("a read after the cut");
    assert_eq!(after_cut.raw_os_error(), Some(nix::libc::EIO), "{after_cut}");

    disk.remount().expect("remount");
    assert_eq!(read(&m.join("never-synced")), b"", "unsynced data is gone");
    assert_eq!(read(&m.join("synced")), b"kept", "synced data stays, later writes go");
    let big = read(&m.join("big"));
    assert_eq!(big.len(), 30_000, "a truncation is metadata: kept");
    assert!(
        big.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8),
        "the unsynced overwrite is gone"
    );
    assert_eq!(read(&m.join("renamed-from")), b"renamed", "the rename is undone");
    assert_eq!(read(&m.join("renamed-to")), b"", "the file renamed over is back");
    assert_eq!(read(&m.join("doomed")), b"doomed", "the unlink is undone");
    assert!(
        !m.join("late").exists(),
        "a new name in a directory never synced is gone"
    );
    assert!(!m.join("dir/linked").exists(), "the hard link is gone");
    assert_eq!(
        names(&m.join("dir2")),
        ["moved"],
        "a rename in a synced directory stays"
    );
}

/// Mounted with journaled names (`--journaled-names`), a sync of any file
/// makes every name change before it durable, as ext4's journal does: a
/// directory and a file made in it, never synced, keep their names once
/// another file is synced (the file without its unsynced data); a name
/// made after the last sync is gone. On the POSIX disk above the same
/// names would all be gone.
#[test]
fn journaled_names_are_durable_at_any_sync() {
    if skipped() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let mut disk =
        PowercutMount::start_with(&p.join("disk"), &p.join("mnt"), &p.join("fs.log"), Names::Journaled).expect("mount");
    let m = disk.mountpoint().to_path_buf();
    std::fs::create_dir(m.join("made")).expect("mkdir");
    std::fs::write(m.join("made/early"), b"early").expect("write");
    let mut f = File::create(m.join("synced")).expect("create");
    f.write_all(b"kept").expect("write");
    f.sync_data().expect("sync");
    drop(f);
    std::fs::write(m.join("late"), b"late").expect("write");
    disk.cut().expect("cut");
    disk.remount().expect("remount");
    assert!(m.join("made").is_dir(), "a directory made before a sync stays");
    assert_eq!(
        read(&m.join("made/early")),
        b"",
        "its file's name stays, not its unsynced data"
    );
    assert_eq!(read(&m.join("synced")), b"kept");
    assert!(!m.join("late").exists(), "a name made after the last sync is gone");
}

/// Small memtables and frequent snapshots, so that before a cut every
/// node has flushed (SST files, the MANIFEST), built snapshots and purged
/// its log: the writes a missing fsync would lose are not only the WAL's.
const ARGS: [&str; 6] = [
    "--write-buffer-mb",
    "2",
    "--snapshot-entries",
    "200",
    "--keep-entries",
    "50",
];

/// How many memtable flushes node `id` has finished, by RocksDB's own log.
fn flushes(cluster: &TestCluster, id: u64) -> usize {
    let log = cluster.dir().join(format!("n{id}/db/LOG"));
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches("flush_finished")
        .count()
}

/// What each node's disk dropped at its cuts, as its file system said.
fn dropped(cluster: &TestCluster, ids: &[u64]) -> Vec<String> {
    ids.iter()
        .flat_map(|id| {
            let log = std::fs::read_to_string(cluster.dir().join(format!("n{id}.disk.log"))).unwrap_or_default();
            log.lines()
                .filter(|l| l.starts_with(CUT_DONE))
                .map(|l| format!("node {id}: {l}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Power cut to `victims(leader)` while clients mint handles in store
/// `ns`, once every node has flushed a memtable; the nodes start again and
/// the load goes on a while. Then every acknowledged write reads back
/// through the cluster (linearizable), and every node holds every one,
/// once.
async fn power_cut_mid_load(ns: &str, victims: impl Fn(u64) -> Vec<u64>) {
    if skipped() {
        return;
    }
    let _one = crate::WHOLE_MACHINE.lock().await;
    let mut cluster = TestCluster::builder(3)
        .powercut_disks(true)
        .args(ARGS)
        .start()
        .await
        .expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(cluster.client().handle_store(ns).build());
    let minters = Minters::start(&store, 16);
    wait_for("every node to flush a memtable", || {
        (1..=3).all(|id| flushes(&cluster, id) >= 1)
    })
    .await;
    let ids = victims(leader);
    cluster.power_cut(&ids).expect("power cut");
    let at_cut = minters.acked_so_far();
    for &id in &ids {
        cluster.restart(id).expect("restart");
    }
    wait_for("300 more writes acknowledged", || {
        minters.acked_so_far() >= at_cut + 300
    })
    .await;
    let (acked, failed) = minters.stop().await;
    assert_read_back(
        &store,
        &acked,
        Consistency::Linearizable,
        "after the power cut, the cluster",
    )
    .await;
    assert_whole(&cluster, ns, &acked, failed).await;
    eprintln!(
        "power cut to {ids:?} (node {leader} led): {at_cut} writes acknowledged before, {} in all, {failed} unknown; \
         every one on every node\n{}",
        acked.len(),
        dropped(&cluster, &ids).join("\n")
    );
}

/// Waits up to 60 s for `done`.
async fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "waited 60 s for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_power_cut_to_the_leader_loses_no_acknowledged_write() {
    power_cut_mid_load("cut-one", |leader| vec![leader]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_power_cut_to_a_quorum_loses_no_acknowledged_write() {
    power_cut_mid_load("cut-two", |leader| vec![leader, leader % 3 + 1]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_power_cut_to_every_node_loses_no_acknowledged_write() {
    power_cut_mid_load("cut-all", |_| vec![1, 2, 3]).await;
}

/// The power goes while a node writes a table file (a memtable flush or a
/// compaction), a manifest or a snapshot, not only its WAL: the disk
/// refuses that write and drops every unsynced one. First a follower, at
/// whatever such file it writes first (its memtables are small); then the
/// leader, asked to build a snapshot. Each starts again, and nothing
/// acknowledged is lost.
#[tokio::test(flavor = "multi_thread")]
async fn a_power_cut_while_a_table_or_snapshot_is_half_written_loses_nothing() {
    if skipped() {
        return;
    }
    let _one = crate::WHOLE_MACHINE.lock().await;
    let ns = "cut-mid-file";
    let mut cluster = TestCluster::builder(3)
        .powercut_disks(true)
        .args(["--write-buffer-mb", "2", "--snapshot-entries", "1000000"])
        .start()
        .await
        .expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let follower = leader % 3 + 1;
    let store: Arc<ClusterHandleStore<Value>> = Arc::new(cluster.client().handle_store(ns).build());
    let minters = Minters::start(&store, 16);
    let within = Duration::from_secs(60);
    let mut cuts = Vec::new();
    let at = cluster
        .power_cut_at_next_table_write(follower, within)
        .await
        .expect("the follower's power cut");
    cuts.push(format!("node {follower}: {at}"));
    cluster.restart(follower).expect("restart the follower");
    let channel = cluster.client_for(leader).channel(0).expect("channel");
    let snapshot = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        pb::admin_client::AdminClient::new(channel)
            .snapshot(pb::SnapshotRequest {})
            .await
    });
    let at = cluster
        .power_cut_at_next_table_write(leader, within)
        .await
        .expect("the leader's power cut");
    cuts.push(format!("node {leader}: {at}"));
    let _ = snapshot.await;
    let at_cut = minters.acked_so_far();
    cluster.restart(leader).expect("restart the leader");
    wait_for("300 more writes acknowledged", || {
        minters.acked_so_far() >= at_cut + 300
    })
    .await;
    let (acked, failed) = minters.stop().await;
    for cut in &cuts {
        assert!(
            [".sst", "MANIFEST-", ".snap"].iter().any(|f| cut.contains(f)),
            "cut at a table, manifest or snapshot file: {cut}"
        );
    }
    assert_read_back(&store, &acked, Consistency::Linearizable, "after the cuts, the cluster").await;
    assert_whole(&cluster, ns, &acked, failed).await;
    eprintln!(
        "{} writes acknowledged, {failed} unknown; every one on every node\n{}",
        acked.len(),
        cuts.join("\n")
    );
}
