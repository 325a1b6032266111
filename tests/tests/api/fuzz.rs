//! Every gRPC method of a node, fed hostile requests: a valid request of
//! the method damaged (cut short, bytes flipped, bytes inserted) or
//! arbitrary bytes, sent as they are. Each is answered with a status of
//! its own and the node goes on: never a panic, never an answer a handler
//! should not give (UNKNOWN, DATA_LOSS, or INTERNAL other than gRPC's own
//! for a request that does not parse), and a method that exists is never
//! UNIMPLEMENTED. Methods that change membership or turn auth on come
//! last, so the rest are tried on a working cluster.

use std::time::Duration;

use bytes::{Buf, BufMut};
use handlestore_client::NodeChannel;
use handlestore_proto::methods::METHODS;
use handlestore_proto::testkit::damaged;
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use proptest::test_runner::{Config, TestRunner};
use prost::Message;
use tonic::Code;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

/// Cases per method in the test command (`PROPTEST_CASES` overrides it).
const CASES: u32 = 24;

/// Longer than any call may take (a read waits at most 5 s to catch up).
const HANG: Duration = Duration::from_secs(20);

/// Sends and takes raw bytes: the request is whatever the test made.
#[derive(Default, Clone, Copy)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let mut v = vec![0; src.remaining()];
        src.copy_to_slice(&mut v);
        Ok(Some(v))
    }
}

/// A valid request of `method` (its last part), where one is worth
/// starting from; the empty message (valid for every method) otherwise.
fn seed(method: &str) -> Vec<u8> {
    let (ns, store, id) = (
        "fz".to_string(),
        "cart".to_string(),
        "AAAAAAAAAAAAAAAAAAAAAAAAAA".to_string(),
    );
    let value = Some(pb::StateValue {
        kind: Some(pb::state_value::Kind::Json("{\"a\":1}".into())),
    });
    match method.rsplit('/').next().unwrap_or_default() {
        "Mint" | "Put" => pb::PutRequest {
            namespace: ns,
            store,
            id,
            value: b"{}".to_vec(),
            ..Default::default()
        }
        .encode_to_vec(),
        "Get" | "Delete" | "Len" | "List" | "Evict" => pb::GetRequest {
            namespace: ns,
            store,
            id,
            ..Default::default()
        }
        .encode_to_vec(),
        "Store" | "Retrieve" | "Exists" => pb::StoreRequest {
            namespace: ns,
            key: "a/b".into(),
            value,
            ..Default::default()
        }
        .encode_to_vec(),
        "BatchStore" => pb::BatchStoreRequest {
            namespace: ns,
            items: vec![pb::StoreItem {
                key: "a/c".into(),
                value,
                ..Default::default()
            }],
            ..Default::default()
        }
        .encode_to_vec(),
        "Watch" => pb::WatchRequest {
            namespace: ns,
            target: Some(pb::watch_request::Target::Prefix("a/".into())),
            ..Default::default()
        }
        .encode_to_vec(),
        _ => Vec::new(),
    }
}

/// Last: the methods whose success changes who may call or who is a
/// member.
fn last(method: &str) -> bool {
    [
        "ChangeMembership",
        "AddLearner",
        "TransferLeader",
        "AuthEnable",
        "AuthDisable",
    ]
    .iter()
    .any(|m| method.ends_with(&format!("/{m}")))
}

/// Sends `body` to `method`, as a stream where the method takes or gives
/// one, and returns the code it ended with (the first message of an
/// answer that streams is enough).
async fn call(ch: NodeChannel, method: &str, body: Vec<u8>) -> Code {
    let mut grpc = tonic::client::Grpc::new(ch);
    if grpc.ready().await.is_err() {
        return Code::Unavailable;
    }
    let path = tonic::codegen::http::uri::PathAndQuery::try_from(format!("/{method}")).expect("a method's path");
    let mut req = tonic::Request::new(body);
    req.set_timeout(Duration::from_secs(5));
    let streams_back = method.ends_with("/Watch") || method.ends_with("/SnapshotSave");
    let res = if streams_back {
        match grpc.server_streaming(req, path, Raw).await {
            Ok(r) => r.into_inner().message().await.map(drop),
            Err(s) => Err(s),
        }
    } else if method.ends_with("/InstallSnapshot") {
        let body = req.into_inner();
        let req = tonic::Request::new(futures::stream::iter([body]));
        grpc.client_streaming(req, path, Raw).await.map(drop)
    } else {
        grpc.unary(req, path, Raw).await.map(drop)
    };
    match res {
        Ok(()) => Code::Ok,
        Err(s) if s.code() == Code::Internal && s.message().starts_with("failed to decode Protobuf message") => {
            Code::InvalidArgument
        }
        Err(s) => {
            assert!(
                !matches!(
                    s.code(),
                    Code::Unknown | Code::DataLoss | Code::Internal | Code::Unimplemented
                ),
                "{method}: {s:?}"
            );
            s.code()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_answers_hostile_requests_with_a_status_and_the_node_goes_on() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let mut methods: Vec<&'static str> = METHODS.to_vec();
    methods.sort_by_key(|m| last(m));
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok());
    let config = Config {
        cases: cases.unwrap_or(CASES),
        failure_persistence: None,
        ..Config::default()
    };
    let rt = tokio::runtime::Handle::current();
    for method in methods {
        let ch = cluster.client().channel(0).expect("channel");
        let mut runner = TestRunner::new(config.clone());
        let ran = tokio::task::block_in_place(|| {
            runner.run(&damaged(seed(method)), |body| {
                let answered = rt.block_on(tokio::time::timeout(HANG, call(ch.clone(), method, body)));
                assert!(answered.is_ok(), "{method}: no answer within {HANG:?}");
                Ok(())
            })
        });
        ran.unwrap_or_else(|e| panic!("{method}: {e}"));
    }
    for id in 1..=3 {
        let log = cluster.log(id);
        assert!(!log.contains("panicked"), "node {id} panicked:\n{log}");
    }
    let status = pb::admin_client::AdminClient::new(cluster.client().channel(0).expect("channel"))
        .status(pb::StatusRequest {})
        .await;
    // Answered: done, or refused for want of a token (a hostile
    // AuthEnable may have turned auth on).
    let answered = status
        .as_ref()
        .map_or_else(|s| s.code() == Code::Unauthenticated, |_| true);
    assert!(answered, "node 1 still answers: {status:?}");
}
