//! Watch on real nodes: puts, deletes and expiries in revision order with
//! one write's changes together; replay from a revision and "compacted"
//! below the history kept; a watch that resumes on another node after its
//! node is killed sees every acknowledged change exactly once; bad input;
//! the CLI.

use std::collections::HashSet;
use std::time::Duration;

use handlestore_client::{
    ChangeKind, Client, DeleteOptions, Error, StateTool, StateValue, StoreItem, StoreOptions, Ttl, Watch, WatchBatch,
    WatchOptions, WatchTarget,
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
    // The watch went to the first endpoint: node 1.
    cluster.kill(1);
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

/// A watcher that reads nothing while the history moves past it is ended
/// with RESOURCE_EXHAUSTED (slow_watcher) once it reads again, after the
/// responses that were queued for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_falls_behind_the_history_is_cut_off_with_a_reason() {
    let cluster = TestCluster::builder(1)
        .args(["--watch-history", "10"])
        .start()
        .await
        .expect("cluster");
    let client = cluster.client();
    let req = pb::WatchRequest {
        namespace: "default".into(),
        target: Some(pb::watch_request::Target::Prefix("slow/".into())),
        ..Default::default()
    };
    let mut stream = pb::watch_client::WatchClient::new(client.channel(0).expect("channel"))
        .max_decoding_message_size(64 << 20)
        .watch(req)
        .await
        .expect("watch")
        .into_inner();
    let kv = client.state_tool();
    let big = StateValue::Bytes(vec![7u8; 64 << 10]);
    // More revisions than live changes are buffered, and far more than
    // the history keeps, with more value bytes than the stream's window.
    for i in 0..1200 {
        kv.store(&format!("slow/{i}"), big.clone(), StoreOptions::default())
            .await
            .expect("store");
    }
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match stream.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the watch ended without a reason"),
                Err(s) => return s,
            }
        }
    })
    .await
    .expect("the end in time");
    assert_eq!(ended.code(), Code::ResourceExhausted, "{ended:?}");
    let detail = <pb::ErrorDetail as prost::Message>::decode(ended.details()).expect("detail");
    assert_eq!(detail.reason, "slow_watcher");
    assert!(detail.compact_revision > 1, "{detail:?}");
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
