//! Bad input gets a clear error with the right gRPC code and changes
//! nothing; no quorum gives UNAVAILABLE and is never acknowledged.

use std::time::{Duration, Instant};

use handlestore_client::{ClusterHandleStore, Error, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, call};
use pb::handles_client::HandlesClient;
use serde_json::{Value, json};
use tonic::Code;

fn detail(s: &tonic::Status) -> pb::ErrorDetail {
    prost::Message::decode(s.details()).expect("every error carries an ErrorDetail")
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_requests_get_their_code_and_change_nothing() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("bad").build();
    let id = store.mint(json!("original"), Ttl::Default).await.expect("mint");
    let mut raw = HandlesClient::connect(cluster.node(2).endpoint())
        .await
        .expect("connect")
        .max_encoding_message_size(64 << 20);
    let good_id = handlestore_client::id::new_handle_id("");

    let put = |store: &str, id: &str, value: Vec<u8>| pb::PutRequest {
        store: store.into(),
        id: id.into(),
        value,
        ..Default::default()
    };
    let cases: Vec<(&str, pb::PutRequest, Code)> = vec![
        (
            "malformed id",
            put("bad", "not-a-handle", b"1".to_vec()),
            Code::InvalidArgument,
        ),
        (
            "lower-case id",
            put("bad", &id.to_lowercase(), b"1".to_vec()),
            Code::InvalidArgument,
        ),
        ("empty id", put("bad", "", b"1".to_vec()), Code::InvalidArgument),
        ("empty store", put("", &id, b"1".to_vec()), Code::InvalidArgument),
        (
            "store with a slash",
            put("a/b", &id, b"1".to_vec()),
            Code::InvalidArgument,
        ),
        (
            "long store name",
            put(&"s".repeat(65), &id, b"1".to_vec()),
            Code::InvalidArgument,
        ),
        (
            "value over 1 MiB",
            put("bad", &id, vec![b'x'; (1 << 20) + 1]),
            Code::InvalidArgument,
        ),
        (
            "bad namespace",
            pb::PutRequest {
                namespace: "a b".into(),
                ..put("bad", &id, b"1".to_vec())
            },
            Code::InvalidArgument,
        ),
        (
            "ttl beyond ten years",
            pb::PutRequest {
                ttl: Some(pb::Ttl {
                    ttl_ms: i64::MAX,
                    ..Default::default()
                }),
                ..put("bad", &id, b"1".to_vec())
            },
            Code::InvalidArgument,
        ),
        (
            "wrong revision",
            pb::PutRequest {
                expected_revision: Some(1),
                ..put("bad", &id, b"1".to_vec())
            },
            Code::FailedPrecondition,
        ),
        (
            "compare-and-set on an unknown handle",
            pb::PutRequest {
                expected_revision: Some(1),
                ..put("bad", &good_id, b"1".to_vec())
            },
            Code::NotFound,
        ),
    ];
    for (what, req, code) in cases {
        let err = call!(raw.put(req)).expect_err(what);
        assert_eq!(err.code(), code, "{what}: {err:?}");
        assert!(!err.message().is_empty(), "{what}: a message for people");
        assert!(!detail(&err).reason.is_empty(), "{what}: a machine-readable reason");
    }
    let err = call!(raw.put(put("bad", &id, vec![b'x'; (1 << 20) + 1]))).expect_err("too large");
    assert_eq!(detail(&err).reason, "value_too_large");

    // Exactly at the limit is fine.
    let at_limit = format!("\"{}\"", "x".repeat((1 << 20) - 2));
    call!(raw.put(put("bad", &good_id, at_limit.into_bytes()))).expect("a value of exactly 1 MiB");

    let err = raw
        .get(pb::GetRequest {
            store: "bad".into(),
            id: handlestore_client::id::new_handle_id(""),
            ..Default::default()
        })
        .await
        .expect_err("unknown");
    assert_eq!(err.code(), Code::NotFound);
    let err = raw
        .mint(pb::MintRequest {
            store: "bad".into(),
            id: id.clone(),
            value: b"1".to_vec(),
            ..Default::default()
        })
        .await
        .expect_err("existing id");
    assert_eq!(err.code(), Code::AlreadyExists);
    let err = raw
        .get(pb::GetRequest {
            store: "bad".into(),
            id: id.clone(),
            read: Some(pb::ReadOptions {
                consistency: 99,
                min_revision: 0,
            }),
            ..Default::default()
        })
        .await
        .expect_err("unknown consistency");
    assert_eq!(err.code(), Code::InvalidArgument);

    // Nothing changed: the original value and the count.
    assert_eq!(store.get(&id).await.expect("get"), Some(json!("original")));
    assert_eq!(store.len().await.expect("len"), 2);

    // The client refuses malformed ids before sending anything.
    assert!(matches!(store.get("bad id").await, Err(Error::InvalidArgument(_))));
}

#[tokio::test(flavor = "multi_thread")]
async fn no_quorum_fails_fast_and_is_never_acknowledged() {
    let mut cluster = TestCluster::builder(3)
        .args(["--write-timeout", "2s"])
        .start()
        .await
        .expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    for id in (1..=3).filter(|id| *id != leader) {
        cluster.kill(id);
    }
    // Let the leader notice it lost its quorum.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut raw = HandlesClient::connect(cluster.node(leader).endpoint())
        .await
        .expect("connect");
    let id = handlestore_client::id::new_handle_id("");
    let started = Instant::now();
    let err = raw
        .mint(pb::MintRequest {
            store: "quorum".into(),
            id: id.clone(),
            value: b"1".to_vec(),
            ..Default::default()
        })
        .await
        .expect_err("no quorum");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert_eq!(detail(&err).reason, "no_quorum", "{err:?}");
    assert!(err.message().contains("quorum"), "a clear message: {}", err.message());
    eprintln!("refused in {:?}", started.elapsed());
    // Reads that need the quorum fail too, rather than serve stale data.
    let err = raw
        .get(pb::GetRequest {
            store: "quorum".into(),
            id: id.clone(),
            ..Default::default()
        })
        .await
        .expect_err("linearizable read without quorum");
    assert_eq!(err.code(), Code::Unavailable);

    // Quorum back: the refused write was never applied.
    for id in (1..=3).filter(|id| *id != leader) {
        cluster.restart(id).expect("restart");
    }
    cluster.wait_leader(Duration::from_secs(20)).await.expect("leader");
    let all = cluster.client().handle_store::<Value>("quorum").build();
    assert_eq!(
        all.get(&id).await.expect("get"),
        None,
        "an unacknowledged write did not appear"
    );
    assert_eq!(all.len().await.expect("len"), 0);
}
