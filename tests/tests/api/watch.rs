//! Watch on real nodes: puts, deletes and expiries in revision order with
//! one write's changes together; replay from a revision and "compacted"
//! below the history kept; a watch that resumes on another node after its
//! node is killed sees every acknowledged change exactly once; bad input;
//! the CLI.

use std::collections::HashSet;
use std::time::Duration;

use handlestore_client::{
    ChangeKind, Client, ClusterStateTool, DeleteOptions, Error, StateTool, StateValue, StoreItem, StoreOptions, Ttl,
    Watch, WatchBatch, WatchOptions, WatchTarget,
};
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use serde_json::json;
use tonic::Code;

const WAIT: Duration = Duration::from_secs(20);

async fn next(w: &mut Watch) -> WatchBatch {
    tokio::time::timeout(WAIT, w.next())
        .await
        .expect("a batch in time")
        .expect("a batch")
}

/// Batches until `n` changes arrived.
async fn changes(w: &mut Watch, n: usize) -> Vec<WatchBatch> {
    let mut out = Vec::new();
    let mut got = 0;
    while got < n {
        let b = next(w).await;
        got += b.changes.len();
        out.push(b);
    }
    out
}

fn json_value(v: serde_json::Value) -> StateValue {
    StateValue::Json(v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_delivers_puts_deletes_and_expiries_in_order_with_one_writes_changes_together() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let client = cluster.client();
    let kv = client.state_tool();
    let mut w = client
        .watch(WatchTarget::prefix("w/"), WatchOptions::default())
        .await
        .expect("watch");
    let r1 = kv
        .store("w/a", json_value(json!(1)), StoreOptions::default())
        .await
        .expect("a");
    kv.store("x/other", json_value(json!(0)), StoreOptions::default())
        .await
        .expect("outside the prefix");
    let r2 = kv
        .batch_store(vec![
            StoreItem::new("w/b", json!({"b": 2})),
            StoreItem::new("w/c", b"bytes".to_vec()),
        ])
        .await
        .expect("batch");
    kv.delete("w/a", DeleteOptions::default()).await.expect("delete");
    let ttl = StoreOptions {
        ttl: Ttl::After(Duration::from_millis(300)),
        ..Default::default()
    };
    kv.store("w/t", json_value(json!("short")), ttl).await.expect("ttl");

    let batches = changes(&mut w, 6).await;
    let all: Vec<_> = batches.iter().flat_map(|b| b.changes.clone()).collect();
    let seen: Vec<(ChangeKind, &str)> = all.iter().map(|c| (c.kind, c.key.as_str())).collect();
    assert_eq!(
        seen,
        vec![
            (ChangeKind::Put, "w/a"),
            (ChangeKind::Put, "w/b"),
            (ChangeKind::Put, "w/c"),
            (ChangeKind::Delete, "w/a"),
            (ChangeKind::Put, "w/t"),
            (ChangeKind::Expire, "w/t"),
        ]
    );
    assert_eq!(all[0].revision, r1);
    assert_eq!(all[0].value, Some(json_value(json!(1))));
    assert_eq!(all[2].value, Some(StateValue::Bytes(b"bytes".to_vec())));
    assert!(all.windows(2).all(|p| p[0].revision <= p[1].revision), "{all:?}");
    let batch = batches
        .iter()
        .find(|b| b.changes.iter().any(|c| c.key == "w/b"))
        .expect("the batch's changes");
    assert!(
        batch.changes.iter().filter(|c| c.revision == r2).count() == 2,
        "one write's changes come together: {batch:?}"
    );
    assert!(all[4].expires_at_ms > 0);
    assert!(all[3].value.is_none() && all[5].value.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_replays_history_from_a_revision_and_below_the_history_is_compacted() {
    let cluster = TestCluster::builder(3)
        .args(["--watch-history", "10"])
        .start()
        .await
        .expect("cluster");
    let client = cluster.client();
    let kv = client.state_tool();
    let mut revisions = Vec::new();
    for i in 0..40 {
        let r = kv
            .store(&format!("h/{i:02}"), json_value(json!(i)), StoreOptions::default())
            .await
            .expect("store");
        revisions.push(r);
    }
    let from = revisions[35];
    let opts = WatchOptions {
        from: Some(from),
        ..Default::default()
    };
    let mut w = client.watch(WatchTarget::prefix("h/"), opts).await.expect("watch");
    let keys: Vec<String> = changes(&mut w, 5)
        .await
        .into_iter()
        .flat_map(|b| b.changes)
        .map(|c| c.key)
        .collect();
    assert_eq!(keys, ["h/35", "h/36", "h/37", "h/38", "h/39"]);

    let old = WatchOptions {
        from: Some(revisions[0]),
        ..Default::default()
    };
    match client.watch(WatchTarget::prefix("h/"), old).await {
        Err(Error::Compacted {
            compact_revision,
            message,
        }) => {
            assert!(compact_revision > revisions[0], "{compact_revision}");
            assert!(
                compact_revision <= revisions[35],
                "the last 10 revisions are kept: {compact_revision}"
            );
            assert!(message.contains("compacted"), "{message}");
        }
        Err(e) => panic!("not compacted: {e:?}"),
        Ok(_) => panic!("a watch from before the history was established"),
    }
    let ch = client.channel(0).expect("channel");
    let req = pb::WatchRequest {
        namespace: "default".into(),
        target: Some(pb::watch_request::Target::Prefix("h/".into())),
        start_revision: 1,
        ..Default::default()
    };
    let s = pb::watch_client::WatchClient::new(ch)
        .watch(req)
        .await
        .expect_err("compacted");
    assert_eq!(s.code(), Code::OutOfRange);
}

/// How many watches each node serves, by node id.
async fn watchers_per_node(cluster: &TestCluster) -> Vec<(u64, u64)> {
    let mut serving = Vec::new();
    for n in &cluster.nodes {
        let st = cluster.status(n.id).await.expect("status");
        serving.push((n.id, st.memory.map(|m| m.watchers).unwrap_or(0)));
    }
    serving
}

/// Watches open on the nodes other than the leader, in turn, once the
/// client knows the leader: serving them takes none of the leader's time
/// from the writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_open_on_the_followers_in_turn() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let client = cluster.client_builder(cluster.endpoints()).build().expect("client");
    let kv = client.state_tool();
    kv.store("w/0", json_value(json!(0)), StoreOptions::default())
        .await
        .expect("a write finds the leader");
    let mut watches = Vec::new();
    for _ in 0..4 {
        watches.push(
            client
                .watch(WatchTarget::prefix("w/"), WatchOptions::default())
                .await
                .expect("watch"),
        );
    }
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let serving = watchers_per_node(&cluster).await;
    for (id, watchers) in &serving {
        let want = if *id == leader { 0 } else { 2 };
        assert_eq!(
            *watchers, want,
            "node {id} (leader {leader}) serves {watchers} watches: {serving:?}"
        );
    }
    kv.store("w/1", json_value(json!(1)), StoreOptions::default())
        .await
        .expect("write");
    for w in &mut watches {
        let b = next(w).await;
        assert_eq!(b.changes.first().map(|c| c.key.as_str()), Some("w/1"), "{b:?}");
    }
}

/// A writer stores unique keys while the node serving the watch is
/// killed: the watch resumes elsewhere and sees every acknowledged write
/// exactly once, in revision order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resumes_on_another_node_and_sees_each_change_once() {
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let watcher = cluster.client_builder(cluster.endpoints()).build().expect("client");
    let mut w = watcher
        .watch(WatchTarget::prefix("r/"), WatchOptions::default())
        .await
        .expect("watch");
    let writer = cluster.client();
    let write = |kv: handlestore_client::ClusterStateTool, from: usize, to: usize| async move {
        let mut acked = Vec::new();
        for i in from..to {
            let key = format!("r/{i:04}");
            if kv
                .store(&key, json_value(json!(i)), StoreOptions::default())
                .await
                .is_ok()
            {
                acked.push(key);
            }
        }
        acked
    };
    let mut acked = write(writer.state_tool(), 0, 50).await;
    let serving: Vec<u64> = (watchers_per_node(&cluster).await)
        .into_iter()
        .filter(|(_, watchers)| *watchers > 0)
        .map(|(id, _)| id)
        .collect();
    assert_eq!(serving.len(), 1, "one node serves the watch: {serving:?}");
    cluster.kill(serving[0]);
    acked.extend(write(writer.state_tool(), 50, 150).await);
    assert!(acked.len() >= 140, "most writes acknowledged: {}", acked.len());

    let mut seen = Vec::new();
    let mut last_revision = 0;
    let want: HashSet<&String> = acked.iter().collect();
    while !want.iter().all(|k| seen.contains(*k)) {
        let b = next(&mut w).await;
        for c in b.changes {
            assert!(c.revision >= last_revision, "in revision order");
            last_revision = c.revision;
            seen.push(c.key);
        }
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no change delivered twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_on_a_store_or_one_handle_follows_only_those() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let client = cluster.client();
    let carts = client.handle_store::<serde_json::Value>("cart").build();
    let jobs = client.handle_store::<serde_json::Value>("job").build();
    use handlestore_client::HandleStore;
    let first = carts.mint(json!({"n": 0}), Ttl::Never).await.expect("mint");
    let mut store = client
        .watch(WatchTarget::store("cart"), WatchOptions::default())
        .await
        .expect("watch");
    let mut one = client
        .watch(WatchTarget::handle("cart", first.clone()), WatchOptions::default())
        .await
        .expect("watch");
    let second = carts.mint(json!({"n": 1}), Ttl::Never).await.expect("mint");
    jobs.mint(json!({}), Ttl::Never).await.expect("another store");
    carts.put(&first, json!({"n": 2}), Ttl::Never).await.expect("put");
    let in_store: Vec<(String, Option<String>)> = changes(&mut store, 2)
        .await
        .into_iter()
        .flat_map(|b| b.changes)
        .map(|c| (c.key, c.store))
        .collect();
    assert_eq!(
        in_store,
        [(second, Some("cart".into())), (first.clone(), Some("cart".into()))]
    );
    let b = next(&mut one).await;
    assert_eq!(b.changes.len(), 1);
    assert_eq!(b.changes[0].key, first);
    assert_eq!(
        b.changes[0].value,
        Some(StateValue::Bytes(serde_json::to_vec(&json!({"n": 2})).expect("json")))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_watch_requests_get_invalid_argument_and_idle_watches_hear_progress() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let client: Client = cluster.client();
    let bad = [
        pb::WatchRequest::default(),
        pb::WatchRequest {
            namespace: "bad ns!".into(),
            target: Some(pb::watch_request::Target::Prefix(String::new())),
            ..Default::default()
        },
        pb::WatchRequest {
            target: Some(pb::watch_request::Target::Handle(pb::HandleRef {
                store: "cart".into(),
                id: "not-an-id".into(),
            })),
            ..Default::default()
        },
        pb::WatchRequest {
            target: Some(pb::watch_request::Target::Key("x".repeat(100_000))),
            ..Default::default()
        },
    ];
    for req in bad {
        let ch = client.channel(0).expect("channel");
        let s = pb::watch_client::WatchClient::new(ch)
            .watch(req.clone())
            .await
            .expect_err("refused");
        assert_eq!(s.code(), Code::InvalidArgument, "{req:?}: {s:?}");
    }
    let opts = WatchOptions {
        progress: true,
        ..Default::default()
    };
    let mut w = client.watch(WatchTarget::prefix("idle/"), opts).await.expect("watch");
    let start = w.position();
    let b = next(&mut w).await;
    assert!(b.changes.is_empty(), "a progress notice");
    assert!(b.revision + 1 >= start, "{} from {start}", b.revision);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prints_one_line_per_change() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let kv = cluster.client().state_tool();
    let first = kv
        .store("cli/a", json_value(json!({"x": 1})), StoreOptions::default())
        .await
        .expect("store");
    kv.delete("cli/a", DeleteOptions::default()).await.expect("delete");
    let out = tokio::process::Command::new(handlestore_tests::cluster::handlestore_bin())
        .args([
            "watch",
            "--prefix",
            "cli/",
            "--from",
            &first.to_string(),
            "--count",
            "2",
        ])
        .args(["--endpoints", &cluster.endpoints().join(",")])
        .output();
    let out = tokio::time::timeout(WAIT, out).await.expect("in time").expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], format!("{first}\tPUT\tcli/a\t{{\"x\":1}}"));
    assert!(lines[1].ends_with("\tDELETE\tcli/a"), "{}", lines[1]);
}

/// A watcher that reads, but more slowly than changes come, falls behind
/// the history kept: it is ended with RESOURCE_EXHAUSTED (slow_watcher)
/// naming the oldest revision kept, and resuming it says "compacted".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_falls_behind_the_history_is_cut_off_with_a_reason() {
    let cluster = TestCluster::builder(1)
        .args(["--watch-history", "10"])
        .start()
        .await
        .expect("cluster");
    let client = cluster.client();
    let mut stream = raw_watch(&client, "slow/").await;
    let kv = client.state_tool();
    let writer = tokio::spawn(async move {
        let big = StateValue::Bytes(vec![7u8; 64 << 10]);
        // Far more revisions than the history keeps, and more value bytes
        // than the recent changes kept in memory.
        for i in 0..1200 {
            kv.store(&format!("slow/{i}"), big.clone(), StoreOptions::default())
                .await
                .expect("store");
        }
    });
    let ended = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            match stream.message().await {
                // Slower than the writes, but never long enough still to
                // be cut off for taking nothing.
                Ok(Some(_)) => tokio::time::sleep(Duration::from_millis(50)).await,
                Ok(None) => panic!("the watch ended without a reason"),
                Err(s) => return s,
            }
        }
    })
    .await
    .expect("the end in time");
    writer.await.expect("writer");
    assert_eq!(ended.code(), Code::ResourceExhausted, "{ended:?}");
    let detail = handlestore_proto::status_details::decode(ended.details()).expect("detail");
    assert_eq!(detail.reason, "slow_watcher");
    assert!(detail.compact_revision > 1, "{detail:?}");
}

/// A raw watch stream on the client's first node (no resuming).
async fn raw_watch(client: &Client, prefix: &str) -> tonic::Streaming<pb::WatchResponse> {
    let req = pb::WatchRequest {
        namespace: client.namespace().to_string(),
        target: Some(pb::watch_request::Target::Prefix(prefix.into())),
        ..Default::default()
    };
    pb::watch_client::WatchClient::new(client.channel(0).expect("channel"))
        .max_decoding_message_size(64 << 20)
        .watch(req)
        .await
        .expect("watch")
        .into_inner()
}

/// Idle watchers cannot grow a node's memory past its watch budget: four
/// watchers on a follower read their first answer and then nothing while
/// 600 values of 512 KiB are written. The follower's resident memory stays
/// within the budget (32 MiB) plus a margin of the other follower's, which
/// has no watchers; the idle watchers are cut off (slow_watcher) and say
/// so once read; a watcher reading on the same node sees every change; the
/// node's status counts the budget and the cuts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_watchers_cannot_grow_a_nodes_memory_past_its_budget() {
    const WRITES: usize = 600;
    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let (watched, other) = {
        let f: Vec<u64> = (1..=3).filter(|n| *n != leader).collect();
        (f[0], f[1])
    };
    // Each on a connection of its own (as clients of their own would be):
    // an idle stream leaves its data unread, and with it its connection's
    // HTTP/2 window.
    let mut idle = Vec::new();
    for _ in 0..4 {
        let mut s = raw_watch(&cluster.client_for(watched), "big/").await;
        assert!(s.message().await.expect("created").is_some());
        idle.push(s);
    }
    let mut reading = cluster
        .client_for(watched)
        .watch(WatchTarget::prefix("big/"), WatchOptions::default())
        .await
        .expect("watch");
    let reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        while seen.len() < WRITES {
            let b = tokio::time::timeout(Duration::from_secs(60), reading.next())
                .await
                .expect("changes keep coming")
                .expect("a batch");
            seen.extend(b.changes.into_iter().map(|c| (c.revision, c.key)));
        }
        seen
    });
    let rss = |n: u64| {
        let cluster = &cluster;
        async move {
            let s = cluster.status(n).await.expect("status");
            s.memory.expect("memory")
        }
    };
    let writer = tokio::spawn(write_big(cluster.client_for(leader).state_tool(), WRITES));
    let (mut peak_watched, mut peak_other, mut peak_watch) = (0u64, 0u64, 0u64);
    while !writer.is_finished() {
        let (w, o) = (rss(watched).await, rss(other).await);
        peak_watched = peak_watched.max(w.rss);
        peak_other = peak_other.max(o.rss);
        peak_watch = peak_watch.max(w.watch);
        assert!(
            w.watch <= w.watch_budget + (8 << 20),
            "watch memory past its budget: {w:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    writer.await.expect("writer");
    let seen = reader.await.expect("reader");
    let mut keys: Vec<&str> = seen.iter().map(|(_, k)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), WRITES, "the reading watcher saw every change once");
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "in revision order");

    let mib = |b: u64| b >> 20;
    let status = rss(watched).await;
    eprintln!(
        "peak RSS: watched follower {} MiB, other follower {} MiB; watch memory peaked at {} MiB",
        mib(peak_watched),
        mib(peak_other),
        mib(peak_watch)
    );
    assert!(
        mib(peak_watched) <= mib(peak_other) + 32 + 96,
        "the watched follower peaked at {} MiB, the other at {} MiB (watch memory peaked at {} MiB)",
        mib(peak_watched),
        mib(peak_other),
        mib(peak_watch)
    );
    assert_eq!(status.watch_budget, 32 << 20, "{status:?}");
    assert!(status.watchers_cut >= 4, "{status:?}");
    for s in idle {
        let ended = end_of(s).await;
        assert_eq!(ended.code(), Code::ResourceExhausted, "{ended:?}");
        let detail = handlestore_proto::status_details::decode(ended.details()).expect("detail");
        assert_eq!(detail.reason, "slow_watcher", "{ended:?}");
    }
}

/// Stores `n` values of 512 KiB under `big/`, four writers at a time.
async fn write_big(kv: ClusterStateTool, n: usize) {
    let big = StateValue::Bytes(vec![9u8; 512 << 10]);
    let tasks = (0..4).map(|w| {
        let (kv, big) = (kv.clone(), big.clone());
        async move {
            for i in (w..n).step_by(4) {
                kv.store(&format!("big/{i:04}"), big.clone(), StoreOptions::default())
                    .await
                    .expect("store");
            }
        }
    });
    futures::future::join_all(tasks).await;
}

/// Reads a raw watch to its end: the error it ended with.
async fn end_of(mut s: tonic::Streaming<pb::WatchResponse>) -> tonic::Status {
    tokio::time::timeout(WAIT, async {
        loop {
            match s.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the watch ended without a reason"),
                Err(e) => return e,
            }
        }
    })
    .await
    .expect("the end in time")
}

/// A watcher that stopped reading does not hold its node up when the node
/// is told to stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_reads_nothing_does_not_keep_its_node_from_stopping() {
    let mut cluster = TestCluster::start(1).await.expect("cluster");
    let client = cluster.client();
    let req = pb::WatchRequest {
        namespace: "default".into(),
        target: Some(pb::watch_request::Target::Prefix("stuck/".into())),
        ..Default::default()
    };
    let _stream = pb::watch_client::WatchClient::new(client.channel(0).expect("channel"))
        .max_decoding_message_size(64 << 20)
        .watch(req)
        .await
        .expect("watch");
    let kv = client.state_tool();
    let big = StateValue::Bytes(vec![7u8; 64 << 10]);
    // More than the stream's flow-control window and the node's queue.
    for i in 0..100 {
        kv.store(&format!("stuck/{i}"), big.clone(), StoreOptions::default())
            .await
            .expect("store");
    }
    let started = std::time::Instant::now();
    cluster.stop(1).expect("the node stops");
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
}
