//! The node's log as a log pipeline reads it (`--log-format json`): one
//! JSON object per line, each client call in a `request` span naming its
//! method, namespace, caller and outcome code, slow calls at warn with
//! their stages; and never a value or a credential in it, whatever a
//! client sends.

use std::time::Duration;

use handlestore_client::{Client, HandleStore, NodeChannel, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use serde_json::Value;

const NS: &str = "shop";
/// In every value written: it must never reach the log.
const VALUE_MARK: &str = "VALUE-MARK-7f3a9c";

/// Every line of every node's log, parsed; a line that is not one JSON
/// object fails the test.
fn log_lines(cluster: &TestCluster) -> Vec<Value> {
    let mut lines = Vec::new();
    for id in 1..=3 {
        for line in cluster.log(id).lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("n{id}: not JSON ({e}): {line}"));
            assert!(v.is_object(), "n{id}: not an object: {line}");
            for field in ["timestamp", "level"] {
                assert!(v.get(field).is_some(), "n{id}: no {field}: {line}");
            }
            lines.push(v);
        }
    }
    lines
}

/// The slow-request lines of calls of `method`.
fn calls<'a>(lines: &'a [Value], method: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["message"] == "slow request" && l["span"]["method"] == method)
        .collect()
}

/// A raw call of `path`, a method no service has.
async fn call_made_up(ch: NodeChannel, path: &'static str) -> tonic::Status {
    let mut grpc = tonic::client::Grpc::new(ch);
    grpc.ready().await.expect("ready");
    let codec = tonic_prost::ProstCodec::<pb::GetRequest, pb::GetResponse>::default();
    let path = tonic::codegen::http::uri::PathAndQuery::from_static(path);
    grpc.unary(tonic::Request::new(pb::GetRequest::default()), path, codec)
        .await
        .expect_err("no such method")
}

fn client_as(cluster: &TestCluster, token: &str) -> Client {
    Client::builder(cluster.endpoints())
        .namespace(NS)
        .token(token)
        .deadline(Duration::from_secs(10))
        .build()
        .expect("client")
}

/// A cluster with auth on and alice, who may write in `NS`: the cluster
/// (root's token set), root's token and alice's.
async fn cluster_with_alice() -> (TestCluster, String, String) {
    let mut cluster = TestCluster::builder(3)
        .args(["--log-format", "json", "--slow-request-threshold", "1us"])
        .start()
        .await
        .expect("cluster");
    let root = cluster
        .client()
        .auth_enable()
        .await
        .expect("enable")
        .expect("root token");
    cluster.set_token(Some(root.clone()));
    let admin = cluster.client();
    admin.role_add("shopper").await.expect("role");
    let mut grant = handlestore_client::auth::Permission {
        namespace: NS.into(),
        ..Default::default()
    };
    grant.access = handlestore_client::auth::Access::Write as i32;
    admin.role_grant("shopper", grant).await.expect("grant");
    let alice = admin
        .user_add("alice", &["shopper".to_string()], false)
        .await
        .expect("user")
        .expect("token");

    (cluster, root, alice)
}

/// Calls refused: a made-up token with a namespace of quotes and
/// newlines, a made-up token, and a made-up method of a known service,
/// which is neither a metric's label nor the log's method.
async fn refused_calls(cluster: &TestCluster, id: &str) {
    let forged = "x\"}\n{\"level\":\"ERROR\",\"message\":\"forged\"}";
    let bad = client_as(cluster, "hs1_NOTATOKEN_AAAA")
        .with_namespace(forged)
        .map(|c| c.handle_store::<serde_json::Value>("cart").build());
    if let Ok(bad) = bad {
        bad.get(id).await.expect_err("a bad token and namespace");
    }
    let made_up = client_as(cluster, "hs1_AAAAAAAAAAAAAAAA_BBBB")
        .channel(0)
        .expect("channel");
    let mut raw = pb::handles_client::HandlesClient::new(made_up);
    let req = pb::GetRequest {
        namespace: NS.into(),
        store: "cart".into(),
        id: id.to_string(),
        ..Default::default()
    };
    let refused = raw.get(req).await.expect_err("a made-up token");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);

    let made_up = call_made_up(
        cluster.client().channel(0).expect("channel"),
        "/handlestore.v1.Handles/MadeUpXyz",
    )
    .await;
    assert_eq!(made_up.code(), tonic::Code::Unimplemented);
    let scraped = reqwest::get(format!(
        "http://{}/metrics",
        cluster.endpoints()[0].trim_start_matches("http://")
    ))
    .await
    .expect("scrape")
    .text()
    .await
    .expect("body");
    assert!(!scraped.contains("MadeUpXyz"), "a made-up label");
    assert!(
        scraped.contains(r#"grpc_method="unknown",grpc_code="Unimplemented""#),
        "the made-up call counted as unknown"
    );
}

/// With every call "slow" (a threshold of 1µs), each call is one warn line
/// whose span names the method, the namespace, the user and the code, with
/// the stages it went through; a refused call has its code and no user;
/// tokens and values never appear, nor does a forged line from a
/// namespace full of quotes and newlines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_logged_as_json_with_their_caller_and_stages_and_no_secret() {
    let (cluster, root, alice) = cluster_with_alice().await;
    let carts = client_as(&cluster, &alice)
        .handle_store::<serde_json::Value>("cart")
        .build();
    let id = carts
        .mint(serde_json::json!({ "item": VALUE_MARK }), Ttl::Never)
        .await
        .expect("mint");
    carts
        .put(&id, serde_json::json!({ "item": VALUE_MARK, "n": 2 }), Ttl::Never)
        .await
        .expect("put");
    assert!(carts.get(&id).await.expect("get").is_some());
    refused_calls(&cluster, &id).await;

    let lines = log_lines(&cluster);
    let text: String = lines.iter().map(Value::to_string).collect();
    for secret in [
        root.as_str(),
        alice.as_str(),
        VALUE_MARK,
        "hs1_AAAAAAAAAAAAAAAA_BBBB",
        "forged",
    ] {
        assert!(!text.contains(secret), "the log holds {secret:?}");
    }
    assert!(
        !lines.iter().any(|l| l["level"] == "ERROR"),
        "an error line: a forged one?"
    );

    // The client sends mints and puts through Writes.Submit.
    for (method, stage) in [
        ("handlestore.v1.Writes/Submit", "commit="),
        ("handlestore.v1.Handles/Get", "read="),
    ] {
        let ok: Vec<_> = calls(&lines, method)
            .into_iter()
            .filter(|l| l["span"]["principal"] == "alice")
            .collect();
        let line = ok
            .first()
            .unwrap_or_else(|| panic!("no slow-request line of alice's {method}: {lines:?}"));
        assert_eq!(line["level"], "WARN", "{line}");
        assert_eq!(line["span"]["name"], "request", "{line}");
        assert_eq!(line["span"]["namespace"], NS, "{line}");
        assert_eq!(line["span"]["code"], "OK", "{line}");
        assert!(line["elapsed_ms"].as_f64().is_some(), "{line}");
        let stages = line["stages"].as_str().unwrap_or_default();
        assert!(stages.contains("auth=") && stages.contains(stage), "{method}: {stages}");
    }
    assert!(!text.contains("MadeUpXyz"), "the log holds a made-up method");
    assert!(
        lines
            .iter()
            .any(|l| l["span"]["method"] == "unknown" && l["span"]["code"] == "Unimplemented"),
        "the made-up call is logged as unknown"
    );
    let gets = calls(&lines, "handlestore.v1.Handles/Get");
    assert!(
        gets.iter()
            .any(|l| l["span"]["code"] == "Unauthenticated" && l["span"].get("principal").is_none()),
        "a refused call: its code and no principal: {gets:?}"
    );
}

/// The default text log stays text, and a call under the default
/// threshold (1s) is not logged at info.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_calls_are_not_logged_at_info() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let carts = cluster.client().handle_store::<serde_json::Value>("cart").build();
    let id = carts
        .mint(serde_json::json!({ "v": VALUE_MARK }), Ttl::Never)
        .await
        .expect("mint");
    assert!(carts.get(&id).await.expect("get").is_some());
    let log = cluster.log(1);
    assert!(!log.contains("slow request") && !log.contains(VALUE_MARK), "{log}");
    assert!(serde_json::from_str::<Value>(log.lines().next().unwrap_or_default()).is_err());
}
