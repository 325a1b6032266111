//! Reads carried together (the Reads service, and the client's coalescing
//! of concurrent point reads): each read is answered exactly as its own
//! method would answer it; a response never passes its size bound; a
//! coalesced read stays linearizable.

use std::sync::Arc;

use futures::future::join_all;
use handlestore_client::{Client, HandleStore, StateTool, StateValue, StoreOptions, Ttl};
use handlestore_proto::status_details;
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use pb::read::Op;
use pb::read_result::Result as Res;
use pb::reads_client::ReadsClient;
use serde_json::{Value, json};
use tonic::Code;

fn get(id: &str, read: Option<pb::ReadOptions>) -> pb::Read {
    pb::Read {
        op: Some(Op::Get(pb::GetRequest {
            store: "r".into(),
            id: id.into(),
            read,
            ..Default::default()
        })),
    }
}

fn retrieve(key: &str) -> pb::Read {
    pb::Read {
        op: Some(Op::Retrieve(pb::RetrieveRequest {
            key: key.into(),
            ..Default::default()
        })),
    }
}

/// The code a read's result stands for (Ok for an answer).
fn code(r: &pb::ReadResult) -> Code {
    match &r.result {
        Some(Res::Failure(f)) => Code::from_i32(f.code),
        Some(_) => Code::Ok,
        None => panic!("a read answered with nothing"),
    }
}

fn reason(r: &pb::ReadResult) -> String {
    match &r.result {
        Some(Res::Failure(f)) => {
            let d = status_details::decode(&f.details).expect("an ErrorDetail");
            d.reason
        }
        _ => String::new(),
    }
}

async fn submit(cluster: &TestCluster, reads: Vec<pb::Read>) -> Result<pb::ReadsResponse, tonic::Status> {
    let ch = cluster.client().channel(0).expect("channel");
    let stub = ReadsClient::new(ch).max_decoding_message_size(64 << 20);
    stub.clone()
        .submit(pb::ReadsRequest { reads })
        .await
        .map(|r| r.into_inner())
}

#[tokio::test(flavor = "multi_thread")]
async fn each_read_of_a_call_is_answered_as_its_own_method_would() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let client = cluster.client();
    let id = client
        .handle_store::<Value>("r")
        .build()
        .mint(json!({"n": 1}), Ttl::Never)
        .await
        .expect("mint");
    client
        .state_tool()
        .store("k", StateValue::Json(json!("v")), StoreOptions::default())
        .await
        .expect("store");
    let bad_consistency = pb::ReadOptions {
        consistency: 99,
        min_revision: 0,
    };
    let reads = vec![
        get(&id, None),
        get("h-AAAAAAAAAAAAAAAAAAAAAAAAAA", None),
        get("not an id!", None),
        get(&id, Some(bad_consistency)),
        retrieve("k"),
        retrieve("absent"),
        retrieve(""),
        pb::Read { op: None },
    ];
    let r = submit(&cluster, reads).await.expect("call");
    let codes: Vec<Code> = r.results.iter().map(code).collect();
    assert_eq!(
        codes,
        [
            Code::Ok,
            Code::NotFound,
            Code::InvalidArgument,
            Code::InvalidArgument,
            Code::Ok,
            Code::NotFound,
            Code::InvalidArgument,
            Code::InvalidArgument
        ]
    );
    match &r.results[0].result {
        Some(Res::Get(g)) => assert_eq!(g.value, br#"{"n":1}"#),
        other => panic!("{other:?}"),
    }
    match &r.results[4].result {
        Some(Res::Retrieve(e)) => assert_eq!(e.entry.as_ref().expect("entry").key, "k"),
        other => panic!("{other:?}"),
    }

    // Too many reads fail the call; none is served.
    let many = (0..1001).map(|_| retrieve("k")).collect();
    let s = submit(&cluster, many).await.expect_err("1001 reads");
    assert_eq!(s.code(), Code::InvalidArgument, "{s:?}");
    assert!(s.message().contains("1001"), "{s:?}");
    let empty = submit(&cluster, vec![]).await.expect("no reads");
    assert!(empty.results.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_response_stops_at_its_bound_and_the_client_sends_the_rest_again() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let client = Client::builder(cluster.endpoints())
        .max_read_calls(1)
        .build()
        .expect("client");
    let tool = client.state_tool();
    let big = "x".repeat(900 << 10);
    for i in 0..10 {
        tool.store(
            &format!("big{i}"),
            StateValue::Bytes(format!("{big}{i}").into_bytes()),
            StoreOptions::default(),
        )
        .await
        .expect("store");
    }
    // Raw: the answers stop past 4 MiB (the first always goes); the rest
    // are unserved, `batch_full`.
    let reads = (0..10).map(|i| retrieve(&format!("big{i}"))).collect();
    let r = submit(&cluster, reads).await.expect("call");
    let served = r.results.iter().take_while(|r| code(r) == Code::Ok).count();
    assert!(
        (1..10).contains(&served),
        "{served} of 10 answers of 900 KiB in one response"
    );
    for rest in &r.results[served..] {
        assert_eq!(
            (code(rest), reason(rest)),
            (Code::ResourceExhausted, "batch_full".into())
        );
    }

    // The client: every read gets its own value.
    let tool = Arc::new(tool);
    let got = join_all((0..30).map(|i| {
        let tool = tool.clone();
        async move { tool.retrieve(&format!("big{}", i % 10)).await }
    }))
    .await;
    for (i, g) in got.into_iter().enumerate() {
        let e = g.expect("retrieve").expect("present");
        assert_eq!(
            e.value,
            Some(StateValue::Bytes(format!("{big}{}", i % 10).into_bytes())),
            "read {i}"
        );
    }
    let stats = client.read_stats();
    assert_eq!(stats.reads, 30);
    assert!(stats.calls < 30, "{stats:?}");
}

/// Concurrent reads share calls, each gets its own answer, and a read that
/// rode in a call with others still sees every write acknowledged before
/// it began (from three clients: the reader's calls go to one node, the
/// writer's to the leader).
#[tokio::test(flavor = "multi_thread")]
async fn coalesced_reads_share_calls_and_stay_linearizable() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let writer = cluster.client();
    let reader = Client::builder(cluster.endpoints())
        .max_read_calls(1)
        .build()
        .expect("client");
    let wstore = Arc::new(writer.handle_store::<Value>("lin").build());
    let rstore = Arc::new(reader.handle_store::<Value>("lin").build());
    let rtool = Arc::new(reader.state_tool());
    let ids: Vec<String> = join_all((0..32).map(|i| wstore.mint(json!(i), Ttl::Never)))
        .await
        .into_iter()
        .map(|r| r.expect("mint"))
        .collect();
    let tasks = ids.into_iter().enumerate().map(|(task, id)| {
        let (w, r, t, wt) = (wstore.clone(), rstore.clone(), rtool.clone(), writer.state_tool());
        tokio::spawn(async move {
            for n in 1..=10 {
                w.put(&id, json!(n), Ttl::Never).await.expect("put");
                assert_eq!(r.get(&id).await.expect("get"), Some(json!(n)), "task {task}");
                let key = format!("k{task}");
                wt.store(&key, StateValue::Json(json!(n)), StoreOptions::default())
                    .await
                    .expect("store");
                let e = t.retrieve(&key).await.expect("retrieve").expect("present");
                assert_eq!(e.value, Some(StateValue::Json(json!(n))), "task {task}");
            }
            // Absent ones are absent.
            assert_eq!(r.get("h-AAAAAAAAAAAAAAAAAAAAAAAAAA").await.expect("get"), None);
        })
    });
    for t in join_all(tasks).await {
        t.expect("task");
    }
    let stats = reader.read_stats();
    assert_eq!(stats.reads, 32 * 21);
    assert!(stats.calls < stats.reads, "the reads shared calls: {stats:?}");
}
