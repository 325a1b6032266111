//! Overload: a node that serves `--max-concurrent-calls` calls refuses one
//! more at once, before reading its request, with UNAVAILABLE
//! (`overloaded`) and a retry hint; `status` still answers; the client
//! waits and tries again, and gets its answer once a place is free. A call
//! whose request never arrives gives its place back.

use std::time::Duration;

use bytes::Bytes;
use handlestore_client::{HandleStore, Ttl};
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;

/// How long a node waits for a request once its headers came
/// (`admission::BODY_WITHIN`).
const BODY_WITHIN: Duration = Duration::from_secs(10);

const PLACES: usize = 4;

/// Calls held open on one node: each sent its request's headers and none
/// of its body, so the node keeps its place until they are dropped.
struct Held {
    _streams: Vec<h2::SendStream<Bytes>>,
    answers: Vec<h2::client::ResponseFuture>,
    connection: tokio::task::JoinHandle<()>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

async fn hold(addr: &str, calls: usize) -> Held {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut client, connection) = h2::client::handshake(tcp).await.expect("HTTP/2");
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    let (mut streams, mut answers) = (Vec::new(), Vec::new());
    for _ in 0..calls {
        client = client.ready().await.expect("ready");
        let request = http::Request::post(format!("http://{addr}/handlestore.v1.Handles/Get"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .expect("request");
        let (answer, stream) = client.send_request(request, false).expect("sent");
        answers.push(answer);
        streams.push(stream);
    }
    Held {
        _streams: streams,
        answers,
        connection,
    }
}

/// A Get straight to node 1 (no retries): its refusal, if it was refused
/// for load (a Get of an absent handle is otherwise NOT_FOUND).
async fn refusal(cluster: &TestCluster) -> Option<tonic::Status> {
    let channel = cluster.client_for(1).channel(0).expect("channel");
    let mut request = tonic::Request::new(pb::GetRequest {
        namespace: "default".into(),
        store: "cart".into(),
        id: "none".into(),
        read: None,
    });
    request.set_timeout(Duration::from_secs(10));
    match pb::handles_client::HandlesClient::new(channel).get(request).await {
        Err(s) if Reason::of(&s) == Some(Reason::Overloaded) => Some(s),
        _ => None,
    }
}

/// The refusal once the held calls have taken every place.
async fn refused(cluster: &TestCluster) -> tonic::Status {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(s) = refusal(cluster).await {
            return s;
        }
        assert!(tokio::time::Instant::now() < deadline, "never refused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn one_node(places: usize) -> TestCluster {
    TestCluster::builder(1)
        .args(["--max-concurrent-calls", &places.to_string()])
        .start()
        .await
        .expect("cluster")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_past_the_nodes_places_is_refused_at_once_with_a_retry_hint() {
    let cluster = one_node(PLACES).await;
    let store = cluster.client().handle_store::<String>("cart").build();
    let id = store.mint("tea".into(), Ttl::Never).await.expect("mint");
    let held = hold(&cluster.node(1).addr, PLACES).await;
    let refused = refused(&cluster).await;
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    let hint = refused.metadata().get("grpc-retry-pushback-ms").expect("a retry hint");
    let ms: u64 = hint.to_str().expect("ascii").parse().expect("milliseconds");
    assert!((1..=5_000).contains(&ms), "{ms} ms");
    assert!(
        refused.message().contains("--max-concurrent-calls"),
        "{}",
        refused.message()
    );
    // An operator can still ask the node how it is.
    cluster.status(1).await.expect("status answers under load");

    // The client waits as asked and tries again: its call is answered
    // once a place is free.
    let waiting = tokio::spawn(async move { store.get(&id).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "the client waits while the node is full");
    drop(held);
    let got = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("answered once places were freed")
        .expect("task");
    assert_eq!(got.expect("get").as_deref(), Some("tea"));
    assert!(refusal(&cluster).await.is_none(), "a place is free again");
}

/// A client that sends a call's headers and never its request (slowloris)
/// holds its place only until the request is overdue.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_whose_request_never_arrives_gives_its_place_back() {
    let cluster = one_node(PLACES).await;
    let mut held = hold(&cluster.node(1).addr, PLACES).await;
    refused(&cluster).await;
    let within = BODY_WITHIN + Duration::from_secs(10);
    let answer = tokio::time::timeout(within, held.answers.pop().expect("a held call"))
        .await
        .expect("the held call was answered")
        .expect("an answer");
    let code = answer
        .headers()
        .get("grpc-status")
        .map(|v| v.to_str().unwrap_or("").to_string());
    assert_eq!(code.as_deref(), Some("4"), "DEADLINE_EXCEEDED: {answer:?}");
    assert!(refusal(&cluster).await.is_none(), "the places are free again");
    drop(held);
}
