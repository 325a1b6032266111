//! Writes carried together (the Writes service, and the client's
//! coalescing of concurrent writes): each write is answered exactly as its
//! own method would answer it, once.

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use handlestore_client::{Client, ClusterHandleStore, Error, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, call};
use pb::write::Op;
use pb::write_result::Result as Res;
use pb::writes_client::WritesClient;
use serde_json::{Value, json};
use tonic::Code;

fn mint(id: &str, value: &str, write_id: Option<pb::WriteId>) -> pb::Write {
    pb::Write {
        op: Some(Op::Mint(pb::MintRequest {
            store: "w".into(),
            id: id.into(),
            value: value.as_bytes().to_vec(),
            write_id,
            ..Default::default()
        })),
    }
}

fn json_value(s: &str) -> Option<pb::StateValue> {
    Some(pb::StateValue {
        kind: Some(pb::state_value::Kind::Json(s.into())),
    })
}

fn failure(r: &pb::WriteResult) -> (Code, pb::ErrorDetail) {
    match &r.result {
        Some(Res::Failure(f)) => (
            Code::from_i32(f.code),
            handlestore_proto::status_details::decode(&f.details).expect("a failure carries an ErrorDetail"),
        ),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// One write of each kind, for `client_id` with seqs 1 to 8, in this order:
/// a mint of `fresh` (succeeds), a mint of a malformed id, a mint of
/// `existing` (exists), a put on `existing` at the wrong revision (`rev` is
/// its own), a write without an operation, a store, a batch of two stores,
/// a delete of an unknown handle, a state delete of an unknown key.
fn one_write_of_each_kind(client_id: u64, existing: &str, rev: u64, fresh: &str) -> Vec<pb::Write> {
    let wid = |seq| {
        Some(pb::WriteId {
            client_id,
            seq,
            first_incomplete_seq: 1,
        })
    };
    vec![
        mint(fresh, "\"new\"", wid(1)),
        mint("not-a-handle", "1", wid(2)),
        mint(existing, "\"again\"", wid(3)),
        pb::Write {
            op: Some(Op::Put(pb::PutRequest {
                store: "w".into(),
                id: existing.into(),
                value: b"\"lost\"".to_vec(),
                expected_revision: Some(rev + 1000),
                write_id: wid(4),
                ..Default::default()
            })),
        },
        pb::Write { op: None },
        pb::Write {
            op: Some(Op::Store(pb::StoreRequest {
                key: "w/a".into(),
                value: json_value("{\"n\":1}"),
                write_id: wid(5),
                ..Default::default()
            })),
        },
        pb::Write {
            op: Some(Op::BatchStore(pb::BatchStoreRequest {
                items: ["w/b", "w/c"]
                    .iter()
                    .map(|k| pb::StoreItem {
                        key: k.to_string(),
                        value: json_value("true"),
                        ..Default::default()
                    })
                    .collect(),
                write_id: wid(6),
                ..Default::default()
            })),
        },
        pb::Write {
            op: Some(Op::Delete(pb::DeleteRequest {
                store: "w".into(),
                id: handlestore_client::id::new_handle_id(""),
                write_id: wid(7),
                ..Default::default()
            })),
        },
        pb::Write {
            op: Some(Op::StateDelete(pb::StateDeleteRequest {
                key: "w/none".into(),
                write_id: wid(8),
                ..Default::default()
            })),
        },
    ]
}

/// Each answer of [`one_write_of_each_kind`] is what its own method would
/// have answered.
fn answered_as_their_own_methods(r: &[pb::WriteResult], fresh: &str, rev: u64) {
    assert_eq!(r.len(), 9, "{r:?}");
    assert!(
        matches!(&r[0].result, Some(Res::Mint(m)) if m.id == fresh && m.revision > rev),
        "{:?}",
        r[0]
    );
    assert_eq!(failure(&r[1]).0, Code::InvalidArgument);
    assert_eq!(failure(&r[2]).0, Code::AlreadyExists);
    let (code, detail) = failure(&r[3]);
    assert_eq!((code, detail.current_revision), (Code::FailedPrecondition, rev));
    assert_eq!(failure(&r[4]).0, Code::InvalidArgument);
    assert!(matches!(&r[5].result, Some(Res::Store(s)) if !s.existed), "{:?}", r[5]);
    assert!(
        matches!(&r[6].result, Some(Res::BatchStore(b)) if b.revision > rev),
        "{:?}",
        r[6]
    );
    assert!(matches!(&r[7].result, Some(Res::Delete(d)) if !d.existed), "{:?}", r[7]);
    assert!(
        matches!(&r[8].result, Some(Res::StateDelete(d)) if d.deleted == 0),
        "{:?}",
        r[8]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_write_of_a_call_is_answered_as_its_own_method_would_and_only_once() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let client = cluster.client();
    let store: ClusterHandleStore<Value> = client.handle_store("w").build();
    let existing = store.mint(json!("first"), Ttl::Default).await.expect("mint");
    let rev = store
        .get_versioned(&existing)
        .await
        .expect("get")
        .expect("present")
        .mod_revision;
    // To a follower: every write is forwarded to the leader on its own.
    let leader = cluster.wait_leader(Duration::from_secs(20)).await.expect("leader");
    let follower = (1..=3).find(|id| *id != leader).expect("a follower");
    let raw = WritesClient::connect(cluster.node(follower).endpoint())
        .await
        .expect("connect");
    let client_id = rand::random::<u64>() | 1;
    let fresh = handlestore_client::id::new_handle_id("");
    let writes = one_write_of_each_kind(client_id, &existing, rev, &fresh);
    let request = pb::SubmitRequest { writes };
    let first = call!(raw.submit(request.clone())).expect("submit");
    answered_as_their_own_methods(&first.results, &fresh, rev);

    // The failed writes changed nothing; the others are there.
    assert_eq!(store.get(&existing).await.expect("get"), Some(json!("first")));
    assert_eq!(store.get(&fresh).await.expect("get"), Some(json!("new")));
    let state = client.state_tool();
    for key in ["w/a", "w/b", "w/c"] {
        assert!(
            handlestore_client::StateTool::exists(&state, key)
                .await
                .expect("exists"),
            "{key}"
        );
    }

    // The same call again (a client retrying it): the same answers, and
    // nothing applied twice.
    let len = store.len().await.expect("len");
    let second = call!(raw.submit(request)).expect("submit again");
    assert_eq!(first, second);
    assert_eq!(store.len().await.expect("len"), len);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_with_too_many_writes_is_refused_whole() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("w").build();
    store.mint(json!(0), Ttl::Default).await.expect("mint");
    let raw = WritesClient::connect(cluster.node(1).endpoint())
        .await
        .expect("connect");
    let writes = (0..1001)
        .map(|_| mint(&handlestore_client::id::new_handle_id(""), "1", None))
        .collect();
    let err = call!(raw.submit(pb::SubmitRequest { writes })).expect_err("refused");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("1001"), "{err:?}");
    assert_eq!(store.len().await.expect("len"), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_writes_share_calls_and_each_gets_its_own_answer() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let client = Client::builder(cluster.endpoints())
        .max_write_calls(1)
        .build()
        .expect("client");
    let store = Arc::new(client.handle_store::<Value>("many").build());
    store.mint(json!("warm-up"), Ttl::Default).await.expect("mint");
    let before = client.write_stats();

    let ids: Vec<String> = join_all((0..200).map(|i| {
        let store = store.clone();
        tokio::spawn(async move { store.mint(json!(i), Ttl::Default).await })
    }))
    .await
    .into_iter()
    .map(|r| r.expect("task").expect("mint"))
    .collect();
    let stats = client.write_stats();
    assert_eq!(stats.writes - before.writes, 200);
    let calls = stats.calls - before.calls;
    assert!(calls <= 100, "200 concurrent writes went in {calls} calls");
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(store.get(id).await.expect("get"), Some(json!(i)), "{id}");
    }
    assert_eq!(store.len().await.expect("len"), 201);

    // Compare-and-set in one call: the right revisions win, the wrong ones
    // get their own conflict with the current revision.
    let mut revs = Vec::new();
    for id in &ids[..40] {
        revs.push(
            store
                .get_versioned(id)
                .await
                .expect("get")
                .expect("present")
                .mod_revision,
        );
    }
    let outcomes = join_all(ids[..40].iter().zip(&revs).enumerate().map(|(i, (id, rev))| {
        let store = store.clone();
        let (id, rev) = (id.clone(), *rev);
        tokio::spawn(async move {
            let expected = if i % 2 == 0 { rev } else { rev + 1000 };
            (
                rev,
                store.put_with(&id, &json!("cas"), Ttl::Default, Some(expected)).await,
            )
        })
    }))
    .await;
    for (i, o) in outcomes.into_iter().enumerate() {
        let (rev, outcome) = o.expect("task");
        match (i % 2, outcome) {
            (0, Ok(w)) => assert!(w.existed && w.revision > rev),
            (1, Err(Error::Conflict { current_revision, .. })) => assert_eq!(current_revision, rev),
            (_, other) => panic!("write {i}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_given_up_by_its_caller_frees_its_call() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let client = Client::builder(cluster.endpoints())
        .max_write_calls(1)
        .build()
        .expect("client");
    let store = Arc::new(client.handle_store::<Value>("drop").build());
    store.mint(json!("warm-up"), Ttl::Default).await.expect("mint");
    // Dropped while its call is in flight, then while queued behind one;
    // were a call leaked, the writes after them would wait forever.
    let after = tokio::time::timeout(Duration::from_secs(60), async {
        for _ in 0..5 {
            let _ = tokio::time::timeout(Duration::from_micros(50), store.mint(json!("gone"), Ttl::Default)).await;
            let slow = store.clone();
            let first = tokio::spawn(async move { slow.mint(json!("kept"), Ttl::Default).await });
            let _ = tokio::time::timeout(Duration::from_micros(50), store.mint(json!("gone"), Ttl::Default)).await;
            first.await.expect("task").expect("mint");
        }
        join_all((0..20).map(|i| store.mint(json!(i), Ttl::Default))).await
    })
    .await
    .expect("writes after the dropped ones complete");
    assert!(after.iter().all(Result::is_ok), "{after:?}");
}
