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
    hold_sending(addr, calls, "Get", None).await
}

/// Calls of `method` held open on one node: each sent its request's
/// headers and, with `part`, that many bytes of a gRPC message announced
/// at 4 MiB, so that the node keeps them (and their bytes) until they are
/// dropped.
async fn hold_sending(addr: &str, calls: usize, method: &str, part: Option<usize>) -> Held {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut client, connection) = h2::client::handshake(tcp).await.expect("HTTP/2");
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    let (mut streams, mut answers) = (Vec::new(), Vec::new());
    for _ in 0..calls {
        client = client.ready().await.expect("ready");
        let request = http::Request::post(format!("http://{addr}/handlestore.v1.Handles/{method}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .expect("request");
        let (answer, mut stream) = client.send_request(request, false).expect("sent");
        if let Some(bytes) = part {
            let mut message = vec![0u8];
            message.extend_from_slice(&(4u32 << 20).to_be_bytes());
            message.resize(5 + bytes, 0);
            let sent = send_all(&mut stream, Bytes::from(message));
            tokio::time::timeout(Duration::from_secs(10), sent)
                .await
                .expect("the node took the bodies");
        }
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
    let detail = answer
        .headers()
        .get("grpc-status-details-bin")
        .expect("a reason of the table");
    let raw = detail.to_str().expect("ASCII").trim_end_matches('=');
    let detail = data_encoding::BASE64_NOPAD.decode(raw.as_bytes()).expect("base64");
    let detail = handlestore_proto::status_details::decode(&detail).expect("an ErrorDetail");
    assert_eq!(detail.reason, Reason::SlowRequest.name());
    assert!(refusal(&cluster).await.is_none(), "the places are free again");
    drop(held);
}

/// The request bytes a node may hold in the budget test (MiB), above the
/// largest request (about 5.1 MiB with the default limits).
const REQUEST_MEMORY_MB: usize = 8;

/// Sends `data` on `stream` as the node gives room for it (HTTP/2 flow
/// control), so that all of it has reached the node when this returns.
async fn send_all(stream: &mut h2::SendStream<Bytes>, mut data: Bytes) {
    while !data.is_empty() {
        stream.reserve_capacity(data.len());
        let room = std::future::poll_fn(|cx| stream.poll_capacity(cx))
            .await
            .expect("the stream is open")
            .expect("room to send");
        let chunk = data.split_to(room.min(data.len()));
        stream.send_data(chunk, false).expect("part of a body");
    }
}

/// A Put of a 1 MB value straight to node 1 (no retries): its refusal, if
/// it was refused for load (the handle does not exist: NOT_FOUND else).
async fn large_refusal(cluster: &TestCluster) -> Option<tonic::Status> {
    match large_put(cluster).await {
        Err(s) if Reason::of(&s) == Some(Reason::Overloaded) => Some(s),
        _ => None,
    }
}

/// A Put of a 1 MB value straight to node 1 (no retries), and its answer.
async fn large_put(cluster: &TestCluster) -> Result<(), tonic::Status> {
    let channel = cluster.client_for(1).channel(0).expect("channel");
    let mut request = tonic::Request::new(pb::PutRequest {
        namespace: "default".into(),
        store: "cart".into(),
        id: "AAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
        value: vec![b'x'; 1_000_000],
        ..Default::default()
    });
    request.set_timeout(Duration::from_secs(10));
    pb::handles_client::HandlesClient::new(channel)
        .put(request)
        .await
        .map(drop)
}

/// A flood of large writes: the requests in progress hold at most
/// `--max-request-memory-mb`; one that would go past it is refused as it
/// arrives, with the retry hint, while small calls go on; the client's
/// large write succeeds once the bytes are freed.
#[tokio::test(flavor = "multi_thread")]
async fn requests_past_the_nodes_byte_budget_are_refused_as_they_arrive() {
    let cluster = TestCluster::builder(1)
        .args(["--max-request-memory-mb", &REQUEST_MEMORY_MB.to_string()])
        .start()
        .await
        .expect("cluster");
    let store = cluster.client().handle_store::<String>("cart").build();
    let small = store.mint("tea".into(), Ttl::Never).await.expect("mint");
    assert!(
        large_refusal(&cluster).await.is_none(),
        "a large write fits an idle node"
    );
    // Three calls hold 7.5 MiB of the 8; 1 MB more does not fit.
    let held = hold_sending(&cluster.node(1).addr, 3, "Put", Some(5 << 19)).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let refused = loop {
        let answer = large_put(&cluster).await;
        if let Err(s) = &answer
            && Reason::of(s) == Some(Reason::Overloaded)
        {
            break answer.expect_err("refused");
        }
        assert!(tokio::time::Instant::now() < deadline, "never refused: {answer:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    assert!(
        refused.metadata().get("grpc-retry-pushback-ms").is_some(),
        "a retry hint"
    );
    assert!(
        refused.message().contains("--max-request-memory-mb"),
        "{}",
        refused.message()
    );
    assert_eq!(
        store.get(&small).await.expect("a small call goes on").as_deref(),
        Some("tea")
    );
    let large = tokio::spawn(async move { store.mint("y".repeat(900_000), Ttl::Never).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(held);
    let minted = tokio::time::timeout(Duration::from_secs(20), large)
        .await
        .expect("answered once the bytes were freed")
        .expect("task");
    minted.expect("the large write succeeds");
    assert!(large_refusal(&cluster).await.is_none(), "the budget is free again");
}
