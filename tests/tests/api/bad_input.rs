//! Bad input gets a clear error with the right gRPC code and changes
//! nothing; no quorum gives UNAVAILABLE and is never acknowledged.

use std::time::{Duration, Instant};

use handlestore_client::{ClusterHandleStore, Error, HandleStore, Ttl};
use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, call};
use pb::handles_client::HandlesClient;
use serde_json::{Value, json};
use tonic::Code;

fn detail(s: &tonic::Status) -> pb::ErrorDetail {
    handlestore_proto::status_details::decode(s.details()).expect("every error carries an ErrorDetail")
}

fn put(store: &str, id: &str, value: Vec<u8>) -> pb::PutRequest {
    pb::PutRequest {
        store: store.into(),
        id: id.into(),
        value,
        ..Default::default()
    }
}

/// Puts the node must refuse, each with what is wrong with it and the code
/// it must get: `id` names an existing handle, `good_id` a well-formed
/// unknown one.
fn bad_puts(id: &str, good_id: &str) -> Vec<(&'static str, pb::PutRequest, Code)> {
    vec![
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
        ("empty store", put("", id, b"1".to_vec()), Code::InvalidArgument),
        (
            "store with a slash",
            put("a/b", id, b"1".to_vec()),
            Code::InvalidArgument,
        ),
        (
            "long store name",
            put(&"s".repeat(65), id, b"1".to_vec()),
            Code::InvalidArgument,
        ),
        (
            "value over 1 MiB",
            put("bad", id, vec![b'x'; (1 << 20) + 1]),
            Code::InvalidArgument,
        ),
        (
            "bad namespace",
            pb::PutRequest {
                namespace: "a b".into(),
                ..put("bad", id, b"1".to_vec())
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
                ..put("bad", id, b"1".to_vec())
            },
            Code::InvalidArgument,
        ),
        (
            "wrong revision",
            pb::PutRequest {
                expected_revision: Some(1),
                ..put("bad", id, b"1".to_vec())
            },
            Code::FailedPrecondition,
        ),
        (
            "compare-and-set on an unknown handle",
            pb::PutRequest {
                expected_revision: Some(1),
                ..put("bad", good_id, b"1".to_vec())
            },
            Code::NotFound,
        ),
    ]
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

    let cases = bad_puts(&id, &good_id);
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

/// One frame of the Raft wire (docs/operations.md, "Ports and protocols"):
/// a 4-byte big-endian length, a kind byte, a body.
fn wire_frame(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut f = u32::try_from(body.len() + 1).expect("small").to_be_bytes().to_vec();
    f.push(kind);
    f.extend_from_slice(body);
    f
}

/// Opens a Raft wire connection to `addr`, sends `bytes` after the
/// handshake, and returns the kind and body of the answer, and whether the
/// node closed the connection after it.
async fn over_the_wire(addr: &str, bytes: &[u8]) -> (u8, Vec<u8>, bool) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(b"HSRAFT/1").await.expect("magic");
    let mut echo = [0u8; 8];
    s.read_exact(&mut echo).await.expect("echo");
    assert_eq!(&echo, b"HSRAFT/1");
    s.write_all(bytes).await.expect("frame");
    let len = s.read_u32().await.expect("answer length") as usize;
    let kind = s.read_u8().await.expect("answer kind");
    let mut body = vec![0u8; len - 1];
    s.read_exact(&mut body).await.expect("answer body");
    let mut more = [0u8; 1];
    let closed = matches!(
        tokio::time::timeout(Duration::from_millis(500), s.read(&mut more)).await,
        Ok(Ok(0) | Err(_))
    );
    (kind, body, closed)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_raft_wire_refuses_what_is_malformed_and_changes_nothing() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    let follower = (1..=3).find(|id| *id != leader).expect("a follower");
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("wire").build();
    let id = store.mint(json!("before"), Ttl::Default).await.expect("mint");
    // The follower may not have heard from the leader yet (a mint commits
    // with the other one): wait until it follows the leader's term and has
    // the mint, so that the request below is stale for it.
    let leading = cluster.status(leader).await.expect("status");
    let deadline = Instant::now() + Duration::from_secs(10);
    let term = loop {
        let st = cluster.status(follower).await.expect("status");
        if st.term == leading.term && st.leader_id == leader && st.applied_index >= leading.applied_index {
            break st.term;
        }
        assert!(Instant::now() < deadline, "the follower never caught up: {st:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(term > 0);
    let addr = cluster
        .node(follower)
        .endpoint()
        .trim_start_matches("http://")
        .to_string();

    // A well-formed AppendEntries from a leader of an older term: the
    // follower answers that it has seen a higher vote, and takes nothing.
    let name = cluster.wait_named(Duration::from_secs(20)).await.expect("named");
    let stale = ipb::AppendEntriesRequest {
        vote: Some(ipb::Vote {
            leader_id: Some(ipb::LeaderId {
                term: 0,
                node_id: leader,
            }),
            committed: true,
        }),
        cluster_id: name,
        ..Default::default()
    };
    let (kind, body, closed) = over_the_wire(&addr, &wire_frame(0, &prost::Message::encode_to_vec(&stale))).await;
    assert_eq!(kind, 0, "{}", String::from_utf8_lossy(&body));
    let answer: ipb::AppendEntriesResponse = prost::Message::decode(body.as_slice()).expect("an answer");
    assert!(
        matches!(answer.result, Some(ipb::append_entries_response::Result::HigherVote(_))),
        "{answer:?}"
    );
    assert!(!closed, "a connection stays open after an answer");
    // The same over gRPC, as a leader of an earlier build sends it.
    let mut grpc = ipb::raft_client::RaftClient::connect(cluster.node(follower).endpoint())
        .await
        .expect("connect");
    let answer = grpc
        .append_entries(stale.clone())
        .await
        .expect("gRPC AppendEntries")
        .into_inner();
    assert!(
        matches!(answer.result, Some(ipb::append_entries_response::Result::HigherVote(_))),
        "{answer:?}"
    );
    // From a node of another cluster, or of none (raft::net::identity): refused
    // as unavailable (the sender backs off), over the wire and gRPC.
    for (other, says) in [
        ("0123456789abcdef0123456789abcdef", "another cluster"),
        ("", "no named cluster"),
    ] {
        let foreign = ipb::AppendEntriesRequest {
            cluster_id: other.into(),
            ..stale.clone()
        };
        let (kind, body, _) = over_the_wire(&addr, &wire_frame(0, &prost::Message::encode_to_vec(&foreign))).await;
        let message = String::from_utf8_lossy(&body);
        assert!(kind != 0 && message.contains(says), "{other:?}: kind {kind}: {message}");
        let s = grpc.append_entries(foreign).await.expect_err("refused over gRPC");
        assert!(s.message().contains(says), "{other:?}: {s:?}");
    }

    for (what, bytes, says) in [
        (
            "a body that is not an AppendEntries",
            wire_frame(0, &[0xff, 0xff, 0xff]),
            "malformed",
        ),
        (
            "a length over the limit",
            u32::MAX.to_be_bytes().to_vec(),
            "over the limit",
        ),
        ("an empty frame", vec![0, 0, 0, 0], "empty frame"),
        ("an unknown kind", wire_frame(9, b""), "unknown frame kind"),
    ] {
        let (kind, body, closed) = over_the_wire(&addr, &bytes).await;
        let message = String::from_utf8_lossy(&body);
        assert_eq!(kind, 1, "{what}: refused as invalid, got kind {kind}: {message}");
        assert!(message.contains(says), "{what}: {message}");
        assert!(closed, "{what}: the connection closes after a refusal");
    }

    // Nothing changed: the follower's term, and the cluster's data, which
    // still replicates to it over the wire.
    assert_eq!(cluster.status(follower).await.expect("status").term, term);
    let next = store.mint(json!("after"), Ttl::Default).await.expect("mint after");
    let on_follower: ClusterHandleStore<Value> = cluster.client_for(follower).handle_store("wire").build();
    assert_eq!(on_follower.get(&id).await.expect("get"), Some(json!("before")));
    assert_eq!(on_follower.get(&next).await.expect("get"), Some(json!("after")));
}
