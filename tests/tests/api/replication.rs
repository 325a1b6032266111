//! Replication across real nodes: reads on every node at every consistency,
//! exactly-once retries, batching, and the operator CLI.

use std::time::Duration;

use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, call};
use pb::handles_client::HandlesClient;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn mint_on_one_node_read_on_the_others() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let on = |id: u64| cluster.client_for(id).handle_store::<Value>("cart").build();
    let n1: ClusterHandleStore<Value> = on(1);
    let id = handlestore_client::id::new_handle_id("cart");
    let wrote = n1
        .mint_with_id(&id, &json!({"items": ["a"]}), Ttl::Default)
        .await
        .expect("mint");
    for node in [2, 3] {
        let s = on(node);
        let lin = s
            .get_with(&id, Consistency::Linearizable)
            .await
            .expect("linearizable get");
        assert_eq!(lin, Some(json!({"items": ["a"]})), "linearizable read on node {node}");
        let at = s
            .get_versioned_with(&id, Consistency::AtLeast(wrote.revision))
            .await
            .expect("at-least get");
        let at = at.expect("present at the write's revision");
        assert_eq!(
            at.mod_revision, wrote.revision,
            "node {node} serves the write's revision"
        );
    }
    // A stale read eventually sees it on every node, too.
    for node in [1, 2, 3] {
        cluster
            .wait_applied(node, wrote.revision, Duration::from_secs(10))
            .await
            .expect("applied");
        let stale = on(node).get_with(&id, Consistency::Stale).await.expect("stale get");
        assert_eq!(stale, Some(json!({"items": ["a"]})));
    }
}

/// The leader holds back the AppendEntries that only moves the commit index
/// and lets the next entry carry it (raft::net::commit_notice); when no entry
/// follows, the notice is still sent on its own, promptly. With heartbeats
/// 8 s apart, followers that waited for one would not apply the last write
/// of a burst for up to 8 s (within 3 s in 3 of 8 rounds, by chance); they
/// must have it within 3 s in every round. (The election timeout stays
/// short enough that a vote lost at startup is retried within the
/// cluster's start timeout.)
#[tokio::test(flavor = "multi_thread")]
async fn followers_learn_of_the_last_commit_without_waiting_for_a_heartbeat() {
    let cluster = TestCluster::builder(3)
        .args(["--heartbeat", "8s", "--election-timeout", "10s"])
        .start()
        .await
        .expect("cluster");
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("cart").build();
    for round in 0..5 {
        // A burst: later entries carry the earlier commits, the last one's
        // commit has nothing after it to ride on.
        // (No read here: a linearizable read's quorum round would carry the
        // commit index to the followers itself.)
        let ids: Vec<String> = (0..20).map(|_| handlestore_client::id::new_handle_id("cart")).collect();
        let values: Vec<Value> = (0..ids.len()).map(|i| json!({ "round": round, "i": i })).collect();
        let writes = ids
            .iter()
            .zip(&values)
            .map(|(id, v)| store.mint_with_id(id, v, Ttl::Default));
        let wrote = futures::future::try_join_all(writes).await.expect("mints");
        let last = wrote.iter().map(|w| w.revision).max().expect("minted");
        let leader = cluster.wait_leader(Duration::from_secs(5)).await.expect("leader");
        for node in [1, 2, 3].into_iter().filter(|n| *n != leader) {
            cluster
                .wait_applied(node, last, Duration::from_secs(3))
                .await
                .unwrap_or_else(|e| panic!("round {round}: {e}; heartbeats are 8 s apart"));
        }
    }
}

fn write_id(client_id: u64, seq: u64) -> Option<pb::WriteId> {
    Some(pb::WriteId {
        client_id,
        seq,
        first_incomplete_seq: seq,
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retried_write_is_applied_once() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let conn = |id: u64| HandlesClient::connect(cluster.node(id).endpoint());
    let (n1, n2, n3) = (
        conn(1).await.expect("n1"),
        conn(2).await.expect("n2"),
        conn(3).await.expect("n3"),
    );
    let id = handlestore_client::id::new_handle_id("");
    let mint = pb::MintRequest {
        store: "dedup".into(),
        id: id.clone(),
        value: b"1".to_vec(),
        write_id: write_id(77, 1),
        ..Default::default()
    };
    // The same mint sent to different nodes (a retry after failover) is one
    // mint: the second answers the first answer instead of ALREADY_EXISTS.
    let a = call!(n1.mint(mint.clone())).expect("first mint");
    let b = call!(n2.mint(mint.clone())).expect("retried mint");
    assert_eq!(a, b, "a retry gets the first answer");
    // A new write id for the same id is a different mint: ALREADY_EXISTS.
    let other = pb::MintRequest {
        write_id: write_id(77, 2),
        ..mint.clone()
    };
    let err = call!(n3.mint(other)).expect_err("second mint of the id");
    assert_eq!(err.code(), tonic::Code::AlreadyExists);

    // A delete retried after it was applied still says "existed".
    let del = pb::DeleteRequest {
        store: "dedup".into(),
        id: id.clone(),
        write_id: write_id(77, 3),
        ..Default::default()
    };
    let d1 = call!(n1.delete(del.clone())).expect("delete");
    let d2 = call!(n3.delete(del.clone())).expect("retried delete");
    assert!(d1.existed && d2.existed, "the retry answers the first delete's answer");
    assert_eq!(d1.revision, d2.revision);
    // A put retried with the same id is not applied twice: the revision of
    // the handle is that of the first put.
    let put = pb::PutRequest {
        store: "dedup".into(),
        id: id.clone(),
        value: b"2".to_vec(),
        write_id: write_id(77, 4),
        ..Default::default()
    };
    let p1 = call!(n2.put(put.clone())).expect("put");
    let p2 = call!(n1.put(put)).expect("retried put");
    assert_eq!(p1, p2);
    let got = call!(n3.get(pb::GetRequest {
        store: "dedup".into(),
        id,
        ..Default::default()
    }))
    .expect("get");
    assert_eq!(got.mod_revision, p1.revision, "only one put was applied");
    assert_eq!(got.value, b"2");
}

/// A copy of a write that arrives after its client reported it complete
/// (a slow forward, a duplicated packet) is refused, not applied again, even
/// though its answer was forgotten.
#[tokio::test(flavor = "multi_thread")]
async fn a_late_copy_of_a_completed_write_is_refused() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let n1 = HandlesClient::connect(cluster.node(1).endpoint()).await.expect("n1");
    let mint = |seq: u64, first_incomplete_seq: u64, id: &str| pb::MintRequest {
        store: "late".into(),
        id: id.into(),
        value: b"1".to_vec(),
        write_id: Some(pb::WriteId {
            client_id: 78,
            seq,
            first_incomplete_seq,
        }),
        ..Default::default()
    };
    let first = handlestore_client::id::new_handle_id("");
    call!(n1.mint(mint(1, 1, &first))).expect("write 1");
    // Write 2 says write 1 is complete: its answer is forgotten.
    call!(n1.mint(mint(2, 2, &handlestore_client::id::new_handle_id("")))).expect("write 2");
    let late_id = handlestore_client::id::new_handle_id("");
    let err = call!(n1.mint(mint(1, 1, &late_id))).expect_err("a late copy of write 1");
    assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err:?}");
    assert!(err.message().contains("not applied again"), "{}", err.message());
    for node in 1..=3 {
        let c = HandlesClient::connect(cluster.node(node).endpoint())
            .await
            .expect("connect");
        let get = |id: &str| pb::GetRequest {
            store: "late".into(),
            id: id.into(),
            ..Default::default()
        };
        call!(c.get(get(&first))).expect("write 1 was applied once");
        let missing = call!(c.get(get(&late_id))).expect_err("the late copy wrote nothing");
        assert_eq!(missing.code(), tonic::Code::NotFound, "node {node}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_writes_share_log_entries() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let before = cluster.status(leader).await.expect("status");
    let store: ClusterHandleStore<Value> = cluster.client_for(leader).handle_store("batch").build();
    let store = std::sync::Arc::new(store);
    let writes = 400;
    let mut tasks = Vec::new();
    for i in 0..writes {
        let s = store.clone();
        tasks.push(tokio::spawn(async move { s.mint(json!(i), Ttl::Default).await }));
    }
    for t in tasks {
        t.await.expect("task").expect("mint");
    }
    let after = cluster.status(leader).await.expect("status");
    let entries = after.last_log_index - before.last_log_index;
    let syncs = after.log_syncs - before.log_syncs;
    eprintln!("{writes} concurrent writes used {entries} log entries and {syncs} log fsyncs");
    assert!(
        entries < writes / 2,
        "{writes} concurrent writes took {entries} log entries: not batched"
    );
    assert!(
        syncs < writes / 2,
        "{writes} concurrent writes took {syncs} fsyncs: no group commit"
    );
    assert_eq!(store.len().await.expect("len"), writes);
}

/// A client whose first endpoint is a follower is forwarded once, then
/// follows the leader the answer names: after a failover a client must not
/// pay the follower's extra hop on every write for the rest of its life.
#[tokio::test(flavor = "multi_thread")]
async fn a_client_moves_to_the_leader_after_one_forwarded_write() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let follower = (1..=3).find(|&id| id != leader).expect("a follower");
    // The follower first, as after a failover that left the client there.
    let mut endpoints = vec![cluster.node(follower).endpoint()];
    endpoints.extend(
        (1..=3)
            .filter(|&id| id != follower)
            .map(|id| cluster.node(id).endpoint()),
    );
    let client = handlestore_client::Client::builder(endpoints).build().expect("client");
    let store: ClusterHandleStore<Value> = client.handle_store("routing").build();
    let before = cluster.status(follower).await.expect("status").forwarded_writes;
    let writes = 20;
    for i in 0..writes {
        let id = store.mint(json!(i), Ttl::Default).await.expect("mint");
        store.put(&id, json!(i + 1), Ttl::Default).await.expect("put");
    }
    let forwarded = cluster.status(follower).await.expect("status").forwarded_writes - before;
    assert_eq!(
        forwarded,
        1,
        "the follower forwarded {forwarded} of {} writes; after the first the client should go to the leader",
        2 * writes
    );
    // A client that only knows the follower keeps working through it.
    let only: ClusterHandleStore<Value> = cluster.client_for(follower).handle_store("routing").build();
    let id = only
        .mint(json!("x"), Ttl::Default)
        .await
        .expect("mint via the follower");
    assert_eq!(only.get(&id).await.expect("get"), Some(json!("x")));
    let forwarded = cluster.status(follower).await.expect("status").forwarded_writes - before;
    assert_eq!(forwarded, 2, "a client with only the follower is forwarded");
}

/// Status says where a node's memory is: RocksDB's memtables and cache,
/// the log cache, and the resident set they are part of.
#[tokio::test(flavor = "multi_thread")]
async fn status_reports_where_memory_is() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let store: ClusterHandleStore<String> = cluster.client_for(leader).handle_store("mem").build();
    let value = "x".repeat(4096);
    let writes = 256;
    for _ in 0..writes {
        store.mint(value.clone(), Ttl::Default).await.expect("mint");
    }
    let written = (writes * value.len()) as u64;
    let m = cluster
        .status(leader)
        .await
        .expect("status")
        .memory
        .expect("status carries memory");
    eprintln!("after {writes} writes of 4 KiB: {m:?}");
    // The values sit in the memtables twice (Raft log and state), and the
    // log cache holds their entries, charged 3x.
    assert!(
        m.memtables >= 2 * written,
        "memtables {} < {}",
        m.memtables,
        2 * written
    );
    assert!(
        m.log_cache >= 3 * written,
        "log cache {} < {}",
        m.log_cache,
        3 * written
    );
    assert!(m.block_cache >= m.block_cache_pinned);
    assert!(
        m.rss > m.memtables + m.log_cache,
        "rss {} holds the memtables and the log cache",
        m.rss
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn operator_cli() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let out = cluster.cli(&[
        "handle",
        "mint",
        "--store",
        "cli",
        "--value",
        r#"{"a":1}"#,
        "--ttl",
        "1h",
    ]);
    assert!(out.status.success(), "mint: {}", String::from_utf8_lossy(&out.stderr));
    let id = String::from_utf8(out.stdout).expect("utf8").trim().to_string();
    handlestore_client::id::validate_handle_id(&id).expect("mint prints an id");

    let out = cluster.cli(&["handle", "get", "--store", "cli", &id]);
    assert!(out.status.success());
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).expect("json"),
        json!({"a": 1})
    );

    let out = cluster.cli(&["handle", "put", "--store", "cli", &id, "--value", "[1,2]"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "replaced");
    let out = cluster.cli(&["handle", "len", "--store", "cli"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");

    let out = cluster.cli(&["handle", "delete", "--store", "cli", &id]);
    assert!(out.status.success());
    let out = cluster.cli(&["handle", "get", "--store", "cli", &id]);
    assert_eq!(out.status.code(), Some(1), "absent handle: exit 1");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not found"),
        "and a clear message"
    );

    let out = cluster.cli(&["handle", "get", "--store", "cli", "not-an-id"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("malformed"));
    let out = cluster.cli(&["handle", "mint", "--store", "cli", "--value", "{not json"]);
    assert_eq!(out.status.code(), Some(2));

    let out = cluster.cli(&["status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "status: {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("leader: node"), "{text}");
    assert_eq!(text.matches("voter").count(), 3, "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("http://")).count(), 6, "{text}");
    assert!(text.contains("MEMORY (MiB)"), "{text}");
}

/// Linearizable reads share quorum rounds on the leader (read-index
/// batching); sharing must never let a read miss a write acknowledged
/// before it began, on the leader or through a follower.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_linearizable_reads_see_every_acknowledged_write() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let writer: ClusterHandleStore<u64> = cluster.client_for(leader).handle_store("lin").build();
    let id = handlestore_client::id::new_handle_id("lin");
    writer.mint_with_id(&id, &0, Ttl::Never).await.expect("mint");
    let acked = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for r in 0..24u64 {
        let store: ClusterHandleStore<u64> = cluster.client_for(1 + r % 3).handle_store("lin").build();
        let (acked, done, id) = (acked.clone(), done.clone(), id.clone());
        readers.push(tokio::spawn(async move {
            let mut reads = 0u64;
            while !done.load(Ordering::Acquire) {
                let floor = acked.load(Ordering::Acquire);
                let seen = store
                    .get_with(&id, Consistency::Linearizable)
                    .await
                    .expect("linearizable get")
                    .expect("present");
                assert!(seen >= floor, "read {seen} after {floor} was acknowledged");
                reads += 1;
            }
            reads
        }));
    }
    for v in 1..=200u64 {
        writer.put(&id, v, Ttl::Never).await.expect("put");
        acked.store(v, Ordering::Release);
    }
    done.store(true, Ordering::Release);
    let mut total = 0;
    for r in readers {
        total += r.await.expect("reader");
    }
    eprintln!("{total} linearizable reads during 200 writes");
    assert!(total >= 24, "every reader read at least once");
}
