//! A node's error arrives as every gRPC library expects it: the
//! `grpc-status-details-bin` trailer of a call, and a write's
//! `WriteFailure.details` inside a `Writes.Submit` answer, hold a
//! `google.rpc.Status` of the call's code and message whose details carry
//! the `ErrorDetail` as an `Any` (proto/src/status_details.rs). Read here
//! with tonic-types' `google.rpc.Status` and prost's `Any::to_msg`, not the
//! node's own decoder; and the Rust client keeps the reason and revision.

use std::time::Duration;

use handlestore_client::{ClusterHandleStore, Error, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::{TestCluster, call};
use pb::handles_client::HandlesClient;
use pb::write::Op;
use pb::write_result::Result as Res;
use pb::writes_client::WritesClient;
use prost::Message;
use serde_json::{Value, json};
use tonic::Code;

/// The `ErrorDetail` of a status's details, read as a `google.rpc.Status`
/// whose code and message must be the status's own (grpc-go and grpc-java
/// refuse the details otherwise) and whose one detail is the `Any`.
fn rich(code: Code, message: &str, details: &[u8]) -> pb::ErrorDetail {
    let status = tonic_types::pb::Status::decode(details).expect("a google.rpc.Status");
    assert_eq!((status.code, status.message.as_str()), (code as i32, message));
    let [any] = status.details.as_slice() else {
        panic!("one detail: {status:?}")
    };
    assert_eq!(any.type_url, "type.googleapis.com/handlestore.v1.ErrorDetail");
    any.to_msg::<pb::ErrorDetail>().expect("an ErrorDetail")
}

fn of_status(s: &tonic::Status) -> pb::ErrorDetail {
    rich(s.code(), s.message(), s.details())
}

/// A three-node cluster, a handle at revision `rev`, and a follower (its
/// calls are forwarded to the leader, whose refusal it passes on).
async fn setup() -> (TestCluster, ClusterHandleStore<Value>, String, u64, u64) {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let store: ClusterHandleStore<Value> = cluster.client().handle_store("e").build();
    let id = store.mint(json!("first"), Ttl::Default).await.expect("mint");
    let rev = store
        .get_versioned(&id)
        .await
        .expect("get")
        .expect("present")
        .mod_revision;
    let leader = cluster.wait_leader(Duration::from_secs(20)).await.expect("leader");
    let follower = (1..=3).find(|n| *n != leader).expect("a follower");
    (cluster, store, id, rev, follower)
}

fn stale_put(id: &str, rev: u64) -> pb::PutRequest {
    pb::PutRequest {
        store: "e".into(),
        id: id.into(),
        value: b"\"lost\"".to_vec(),
        expected_revision: Some(rev + 1000),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_s_error_carries_a_google_rpc_status_with_its_detail() {
    let (cluster, _store, id, rev, follower) = setup().await;
    let raw = HandlesClient::connect(cluster.node(follower).endpoint())
        .await
        .expect("connect");
    let lost = call!(raw.put(stale_put(&id, rev))).expect_err("a lost compare-and-set");
    assert_eq!(lost.code(), Code::FailedPrecondition, "{lost:?}");
    let detail = of_status(&lost);
    assert_eq!(
        (detail.reason.as_str(), detail.current_revision),
        ("revision_mismatch", rev)
    );

    let missing = pb::GetRequest {
        store: "e".into(),
        id: handlestore_client::id::new_handle_id(""),
        ..Default::default()
    };
    let missing = call!(raw.get(missing)).expect_err("an unknown handle");
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");
    assert_eq!(of_status(&missing).reason, "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_s_failure_in_a_submit_carries_the_same_status() {
    let (cluster, store, id, rev, follower) = setup().await;
    let raw = WritesClient::connect(cluster.node(follower).endpoint())
        .await
        .expect("connect");
    let writes = vec![pb::Write {
        op: Some(Op::Put(stale_put(&id, rev))),
    }];
    let answer = call!(raw.submit(pb::SubmitRequest { writes })).expect("submit");
    let Some(Res::Failure(f)) = &answer.results[0].result else {
        panic!("a failure: {answer:?}")
    };
    let detail = rich(Code::from_i32(f.code), &f.message, &f.details);
    assert_eq!(
        (detail.reason.as_str(), detail.current_revision),
        ("revision_mismatch", rev)
    );

    // The client (whose puts go through Writes.Submit) keeps both.
    let err = store
        .put_with(&id, &json!("lost"), Ttl::Default, Some(rev + 1000))
        .await
        .expect_err("a lost compare-and-set");
    assert!(
        matches!(err, Error::Conflict { current_revision, .. } if current_revision == rev),
        "{err:?}"
    );
    HandleStore::delete(&store, &id).await.expect("delete");
    let gone = store
        .put_with(&id, &json!("late"), Ttl::Default, Some(rev))
        .await
        .expect_err("a compare-and-set of a deleted handle");
    assert_eq!(gone.reason(), Some(handlestore_client::Reason::NotFound), "{gone:?}");
}
