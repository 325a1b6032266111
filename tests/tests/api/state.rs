//! The state tool on real nodes: the shared contract, atomic batches under a
//! leader crash, paging while writes go on, namespace isolation, the CLI.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use handlestore_client::testkit::state::{StateFactory, run_all};
use handlestore_client::{
    Client, ClusterHandleStore, ClusterStateTool, HandleStore, ListOptions, MemoryStateTool, StateTool, StateValue,
    StoreItem, StoreOptions, Ttl,
};
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, call, handlestore_bin};
use pb::state_client::StateClient;
use serde_json::{Value, json};

struct Memory;

#[async_trait]
impl StateFactory for Memory {
    async fn make(&self, _name: &str, default_ttl: Option<Duration>) -> Arc<dyn StateTool> {
        let t = MemoryStateTool::new();
        Arc::new(match default_ttl {
            Some(d) => t.with_default_ttl(d),
            None => t,
        })
    }
}

/// Each case gets its own namespace on the cluster.
struct Cluster(Client);

#[async_trait]
impl StateFactory for Cluster {
    async fn make(&self, name: &str, default_ttl: Option<Duration>) -> Arc<dyn StateTool> {
        let t = self.0.with_namespace(name).expect("namespace").state_tool();
        Arc::new(match default_ttl {
            Some(d) => t.with_default_ttl(d),
            None => t,
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn state_contract_on_memory() {
    run_all(&Memory, "mem").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn state_contract_on_three_node_cluster() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    run_all(&Cluster(cluster.client()), "cluster").await;
}

/// Sends one batch (no retries: this is the interrupted call) and kills the
/// leader while it is in flight; after recovery the batch is entirely there
/// or entirely absent.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_interrupted_by_a_leader_crash_is_all_or_nothing() {
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let mut outcomes = Vec::new();
    for round in 0..4u64 {
        outcomes.push(kill_the_leader_during_a_batch(&mut cluster, round).await);
    }
    eprintln!("(acknowledged, keys present) per round: {outcomes:?}");
    a_batch_only_the_leader_had_is_dropped(&mut cluster).await;
}

/// A batch of 300 JSON values, keys `{prefix}0000` on, each value `value(i)`.
fn batch_items(prefix: &str, value: impl Fn(usize) -> String) -> Vec<pb::StoreItem> {
    (0..300)
        .map(|i| pb::StoreItem {
            key: format!("{prefix}{i:04}"),
            value: Some(pb::StateValue {
                kind: Some(pb::state_value::Kind::Json(value(i))),
            }),
            ..Default::default()
        })
        .collect()
}

/// One round: a 300-key batch sent to the leader, the leader killed `round`
/// × 3 ms after (before, during, after), then restarted. The batch must be
/// entirely there or entirely absent, and there if it was acknowledged.
/// Returns whether it was acknowledged and how many of its keys are there.
async fn kill_the_leader_during_a_batch(cluster: &mut TestCluster, round: u64) -> (bool, usize) {
    let leader = cluster.wait_leader(Duration::from_secs(20)).await.expect("leader");
    let mut raw = StateClient::connect(cluster.node(leader).endpoint())
        .await
        .expect("connect");
    let items = batch_items(&format!("round-{round}/"), |i| format!("{{\"i\":{i}}}"));
    let send = tokio::spawn(async move {
        raw.batch_store(pb::BatchStoreRequest {
            namespace: "crash".into(),
            items,
            write_id: None,
        })
        .await
    });
    // Kill at a different point each round: before, during, after.
    tokio::time::sleep(Duration::from_millis(round * 3)).await;
    cluster.kill(leader);
    let answer = send.await.expect("task");
    cluster.restart(leader).expect("restart");
    cluster
        .wait_leader(Duration::from_secs(20))
        .await
        .expect("leader after restart");
    let tool = cluster.client().with_namespace("crash").expect("ns").state_tool();
    let mut present = 0;
    let mut token = None;
    loop {
        let page = tool
            .list(
                &format!("round-{round}/"),
                ListOptions {
                    limit: 1000,
                    page_token: token,
                    with_values: false,
                },
            )
            .await
            .expect("list");
        present += page.entries.len();
        token = page.next_page_token;
        if token.is_none() {
            break;
        }
    }
    assert!(
        present == 0 || present == 300,
        "round {round}: {present} of 300 keys: a partial batch"
    );
    if answer.is_ok() {
        assert_eq!(present, 300, "round {round}: an acknowledged batch is entirely there");
    }
    (answer.is_ok(), present)
}

/// A batch that reached only the leader's log: the followers are down, the
/// leader appends it and is killed before anyone else has it. The cluster
/// recovers without it, and the old leader drops it from its log.
async fn a_batch_only_the_leader_had_is_dropped(cluster: &mut TestCluster) {
    let leader = cluster.wait_leader(Duration::from_secs(20)).await.expect("leader");
    let followers: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
    for f in &followers {
        cluster.kill(*f);
    }
    let mut raw = StateClient::connect(cluster.node(leader).endpoint())
        .await
        .expect("connect");
    let items = batch_items("lost/", |_| "1".into());
    let send = tokio::spawn(async move {
        raw.batch_store(pb::BatchStoreRequest {
            namespace: "crash".into(),
            items,
            write_id: None,
        })
        .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = cluster.status(leader).await.expect("status");
    cluster.kill(leader);
    assert!(
        send.await.expect("task").is_err(),
        "an uncommitted batch is not acknowledged"
    );
    for f in &followers {
        cluster.restart(*f).expect("restart follower");
    }
    let new_leader = cluster
        .wait_leader(Duration::from_secs(20))
        .await
        .expect("followers elect a leader");
    assert_ne!(new_leader, leader);
    cluster.restart(leader).expect("restart old leader");
    let target = cluster.status(new_leader).await.expect("status").applied_index;
    cluster
        .wait_applied(leader, target, Duration::from_secs(30))
        .await
        .expect("old leader caught up");
    let tool = cluster.client().with_namespace("crash").expect("ns").state_tool();
    let page = tool
        .list(
            "lost/",
            ListOptions {
                limit: 1000,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert!(
        page.entries.is_empty(),
        "the batch is entirely absent ({} keys present)",
        page.entries.len()
    );
    let on_old = cluster
        .client_for(leader)
        .with_namespace("crash")
        .expect("ns")
        .state_tool()
        .with_consistency(handlestore_client::Consistency::Stale);
    let page = on_old
        .list(
            "lost/",
            ListOptions {
                limit: 1000,
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert!(
        page.entries.is_empty(),
        "and absent on the old leader, whose log had it (last log {})",
        before.last_log_index
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn paging_through_ten_thousand_keys_while_writes_go_on() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let client = cluster.client().with_namespace("paging").expect("ns");
    let tool = client.state_tool();
    let total = 10_000;
    for chunk in 0..(total / 500) {
        let items = (chunk * 500..(chunk + 1) * 500)
            .map(|i| StoreItem::new(format!("k/{i:05}"), json!(i)))
            .collect();
        tool.batch_store(items).await.expect("seed batch");
    }
    // Writers: overwrite existing keys and add new ones between them, all
    // under the listed prefix.
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..3 {
        let (t, stop) = (client.state_tool(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let i = (n * 7919 + w * 31) % total;
                t.store(
                    &format!("k/{i:05}"),
                    json!({"rewritten": n}).into(),
                    StoreOptions::default(),
                )
                .await
                .expect("overwrite");
                t.store(
                    &format!("k/{i:05}-new-{w}-{n}"),
                    json!(n).into(),
                    StoreOptions::default(),
                )
                .await
                .expect("insert");
                n += 1;
            }
            n
        }));
    }
    let mut keys = Vec::new();
    let mut token = None;
    let mut pages = 0;
    loop {
        let page = tool
            .list(
                "k/",
                ListOptions {
                    limit: 137,
                    page_token: token,
                    with_values: false,
                },
            )
            .await
            .expect("list");
        keys.extend(page.entries.into_iter().map(|e| e.key));
        pages += 1;
        token = page.next_page_token;
        if token.is_none() {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let mut written = 0;
    for w in writers {
        written += w.await.expect("writer");
    }
    eprintln!(
        "listed {} keys in {pages} pages while {written} write pairs went on",
        keys.len()
    );
    assert!(written > 0, "writes went on during the listing");
    assert!(
        keys.windows(2).all(|w| w[0] < w[1]),
        "strictly increasing: in order, none twice"
    );
    let listed: BTreeSet<&str> = keys.iter().map(String::as_str).collect();
    for i in 0..total {
        assert!(listed.contains(format!("k/{i:05}").as_str()), "k/{i:05} was listed");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn namespaces_never_see_each_other() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let a = cluster.client().with_namespace("tenant-a").expect("ns");
    let b = cluster.client().with_namespace("tenant-b").expect("ns");
    let (ta, tb): (ClusterStateTool, ClusterStateTool) = (a.state_tool(), b.state_tool());
    ta.store("shared/name", json!("a's").into(), StoreOptions::default())
        .await
        .expect("store");
    ta.store("only-a", json!(1).into(), StoreOptions::default())
        .await
        .expect("store");
    tb.store("shared/name", json!("b's").into(), StoreOptions::default())
        .await
        .expect("store");
    let list_a: Vec<String> = ta
        .list("", ListOptions::default())
        .await
        .expect("list")
        .entries
        .into_iter()
        .map(|e| e.key)
        .collect();
    let list_b: Vec<String> = tb
        .list("", ListOptions::default())
        .await
        .expect("list")
        .entries
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(list_a, ["only-a", "shared/name"]);
    assert_eq!(list_b, ["shared/name"], "b's list never shows a's keys");
    assert_eq!(
        tb.retrieve("shared/name").await.expect("get").and_then(|e| e.value),
        Some(StateValue::Json(json!("b's")))
    );
    assert!(!tb.exists("only-a").await.expect("exists"));
    assert_eq!(tb.batch_retrieve(&["only-a".into()]).await.expect("batch")[0], None);
    assert_eq!(tb.delete("only-a", Default::default()).await.expect("delete").count, 0);
    assert!(
        ta.exists("only-a").await.expect("exists"),
        "b's delete did not touch a's key"
    );
    assert_eq!(
        tb.delete("only", handlestore_client::DeleteOptions::prefix(100))
            .await
            .expect("delete")
            .count,
        0
    );
    assert!(ta.exists("only-a").await.expect("exists"), "nor did b's prefix delete");

    // Handles too.
    let ha: ClusterHandleStore<Value> = a.handle_store("cart").build();
    let hb: ClusterHandleStore<Value> = b.handle_store("cart").build();
    let id = ha.mint(json!("a's cart"), Ttl::Default).await.expect("mint");
    assert_eq!(hb.get(&id).await.expect("get"), None);
    assert_eq!(hb.len().await.expect("len"), 0);
    assert!(!hb.delete(&id).await.expect("delete"));
    assert_eq!(ha.get(&id).await.expect("get"), Some(json!("a's cart")));
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_state_requests_get_invalid_argument() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let mut raw = StateClient::connect(cluster.node(1).endpoint()).await.expect("connect");
    let json = |s: &str| {
        Some(pb::StateValue {
            kind: Some(pb::state_value::Kind::Json(s.into())),
        })
    };
    let store = |key: &str, value| pb::StoreRequest {
        key: key.into(),
        value,
        ..Default::default()
    };
    for (what, req) in [
        ("invalid JSON", store("k", json("{nope"))),
        ("no value", store("k", None)),
        ("empty segment", store("a//b", json("1"))),
        (
            "bad namespace",
            pb::StoreRequest {
                namespace: "x/y".into(),
                ..store("k", json("1"))
            },
        ),
    ] {
        let err = call!(raw.store(req)).expect_err(what);
        assert_eq!(err.code(), tonic::Code::InvalidArgument, "{what}: {err:?}");
    }
    let many: Vec<pb::StoreItem> = (0..1001)
        .map(|i| pb::StoreItem {
            key: format!("k{i}"),
            value: json("1"),
            ..Default::default()
        })
        .collect();
    let err = raw
        .batch_store(pb::BatchStoreRequest {
            items: many,
            ..Default::default()
        })
        .await
        .expect_err("too many items");
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    let err = raw
        .list(pb::ListRequest {
            page_token: "%%%".into(),
            ..Default::default()
        })
        .await
        .expect_err("bad token");
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    let err = raw
        .retrieve(pb::RetrieveRequest {
            key: "absent".into(),
            ..Default::default()
        })
        .await
        .expect_err("absent");
    assert_eq!(err.code(), tonic::Code::NotFound);
    let page = call!(raw.list(pb::ListRequest::default())).expect("list");
    assert!(page.entries.is_empty(), "nothing was stored by the bad requests");
}

#[tokio::test(flavor = "multi_thread")]
async fn kv_cli() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let run = |args: &[&str]| {
        std::process::Command::new(handlestore_bin())
            .arg("kv")
            .args(args)
            .env("HANDLESTORE_ENDPOINTS", cluster.endpoints().join(","))
            .env("HANDLESTORE_NAMESPACE", "cli")
            .output()
            .expect("cli")
    };
    let stdout = |o: &std::process::Output| String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert!(run(&["put", "checkpoints/a/latest", r#"{"step":1}"#]).status.success());
    assert!(
        run(&["put", "checkpoints/b/latest", r#"{"step":2}"#, "--ttl", "1h"])
            .status
            .success()
    );
    assert!(run(&["put", "notes/raw", "hello world", "--raw"]).status.success());
    assert_eq!(stdout(&run(&["get", "checkpoints/a/latest"])), r#"{"step":1}"#);
    assert_eq!(stdout(&run(&["get", "notes/raw"])), "hello world");
    assert_eq!(
        stdout(&run(&["list", "--prefix", "checkpoints/"])),
        "checkpoints/a/latest\ncheckpoints/b/latest"
    );
    assert_eq!(
        stdout(&run(&["list", "--prefix", "checkpoints/", "--limit", "1", "--values"])),
        "checkpoints/a/latest\t{\"step\":1}"
    );
    assert_eq!(stdout(&run(&["exists", "notes/raw"])), "true");
    let missing = run(&["exists", "notes/none"]);
    assert_eq!((stdout(&missing).as_str(), missing.status.code()), ("false", Some(1)));
    assert_eq!(stdout(&run(&["delete", "checkpoints/", "--prefix"])), "deleted 2");
    assert_eq!(run(&["get", "checkpoints/a/latest"]).status.code(), Some(1));
    let bad = run(&["put", "a//b", "1"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("empty segment"));
    let bad = run(&["put", "k", "{not json"]);
    assert_eq!(bad.status.code(), Some(2));
}
