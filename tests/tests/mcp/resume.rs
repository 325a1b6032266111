//! Resumed streams with rmcp's own client (docs/dev/resume.md,
//! docs/mcp.md): two rmcp replicas over one cluster, each with its own
//! handlestore client and `ClusterEventStore::streamable_http_service`; a
//! front per client that cuts a `tools/call` stream after K messages (0,
//! the middle, every notification but not the answer) and sends the
//! client's reconnection to the other replica. A fast tool (its
//! notifications at once) and a slow one (1.2 s apart); the 2025-11-25
//! handshake and 2026-07-28 (`server/discover`), stateless and with legacy
//! sessions. While the origin lives, the client gets every event once, in
//! order, and the result once; when the origin is killed, every event it
//! stored once, in order, then the `origin_lost` error, within the
//! liveness TTL of the kill. A resumption that starts after the origin's
//! liveness record expired still answers for the request, with its id as
//! sent (from `requests/<token>`).

use std::time::{Duration, Instant};

use handlestore_client::rmcp_seams::EVENTS_PREFIX;
use handlestore_client::rmcp_seams::contract::{LIVE_TTL, ORIGIN_LOST_CODE, ORIGIN_LOST_MESSAGE, ORIGIN_LOST_REASON};
use handlestore_client::{ListOptions, StateTool, StateValue};
use handlestore_tests::TestCluster;
use handlestore_tests::mcp::CALL_TIMEOUT;
use handlestore_tests::mcp_raw::{RawMcp, sse_events};
use handlestore_tests::mcp_resume::{CutFront, Progress, ProgressClient, Replica, Seen, Serving, TICKS, call, connect};
use reqwest::StatusCode;
use rmcp::ClientLifecycleMode;
use rmcp::model::ProtocolVersion;
use serde_json::{Value, json};

/// Messages let through before the cut: none, half the notifications, all
/// of them (the answer is what is missed).
const CUTS: [usize; 3] = [0, TICKS as usize / 2, TICKS as usize];

/// How long after its origin is killed a call must have ended: the
/// liveness record's TTL, plus the node's sweep and the round trips.
const ORIGIN_LOST_WITHIN: Duration = LIVE_TTL.saturating_add(Duration::from_secs(5));

#[derive(Debug, Clone, Copy)]
enum Handshake {
    /// `initialize` (2025-11-25): a session where the replicas keep them.
    Initialize,
    /// `server/discover` (2026-07-28): no session, per-request metadata.
    Discover,
}

impl Handshake {
    fn lifecycle(self) -> ClientLifecycleMode {
        match self {
            Handshake::Initialize => ClientLifecycleMode::Initialize,
            Handshake::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Case {
    tool: &'static str,
    keep: usize,
    handshake: Handshake,
}

/// Every case of `tools` × [`CUTS`] × `handshakes`.
fn cases(tools: &[&'static str], handshakes: &[Handshake]) -> Vec<Case> {
    let mut all = Vec::new();
    for &tool in tools {
        for keep in CUTS {
            for &handshake in handshakes {
                all.push(Case { tool, keep, handshake });
            }
        }
    }
    all
}

/// A connected client behind its own front.
struct Run {
    case: Case,
    front: CutFront,
    client: ProgressClient,
    progress: Progress,
}

impl Run {
    async fn open(case: Case, origin: &Replica, follower: &Replica) -> Run {
        let front = CutFront::start(origin.url(), follower.url(), case.keep)
            .await
            .expect("front");
        let (client, progress) = connect(&front.url(), case.handshake.lifecycle())
            .await
            .unwrap_or_else(|e| panic!("{case:?}: connect: {e:#}"));
        Run {
            case,
            front,
            client,
            progress,
        }
    }

    /// Calls the case's tool, bounded by `limit`.
    async fn call(&self, limit: Duration) -> Result<String, String> {
        match tokio::time::timeout(limit, call(&self.client, self.case.tool)).await {
            Ok(outcome) => outcome,
            Err(_) => panic!("{:?}: the call hung past {limit:?}", self.case),
        }
    }
}

/// The events of the call's stream the client received, checked to be
/// one stream, each event once, in order; and the messages among them.
fn call_stream(run: &Run) -> Vec<Value> {
    let seen: Vec<Seen> = run.front.seen();
    let case = run.case;
    let token = seen
        .iter()
        .find(|s| s.call && s.id.is_some())
        .and_then(Seen::token)
        .unwrap_or_else(|| panic!("{case:?}: no event on the call's stream: {seen:?}"))
        .to_string();
    let stream: Vec<&Seen> = seen.iter().filter(|s| s.token() == Some(&token)).collect();
    let seqs: Vec<u64> = stream.iter().filter_map(|s| s.seq()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "{case:?}: every event once, in order: {seqs:?}"
    );
    assert!(
        stream.iter().any(|s| s.resumed),
        "{case:?}: the client resumed on the other replica: {seen:?}"
    );
    assert_eq!(
        run.front.resumptions(),
        1,
        "{case:?}: one resumption carried the rest of the call (it followed the stream, no polling)"
    );
    stream.iter().filter_map(|s| s.message.clone()).collect()
}

/// The messages the cluster holds for the stream `token`, in order.
async fn stored(cluster: &TestCluster, token: &str) -> Vec<Value> {
    let page = cluster
        .client()
        .state_tool()
        .list(
            &format!("mcp/events/events/{token}/"),
            ListOptions {
                limit: 1000,
                page_token: None,
                with_values: true,
            },
        )
        .await
        .expect("list the stream's events");
    page.entries
        .into_iter()
        .filter_map(|e| match e.value {
            Some(StateValue::Json(v)) => Some(v["message"].clone()),
            _ => None,
        })
        .filter(|m| !m.is_null())
        .collect()
}

/// The call's token, as the client saw it.
fn token_of(run: &Run) -> String {
    let seen = run.front.seen();
    let first = seen.iter().find(|s| s.call && s.id.is_some()).expect("a call event");
    first.token().expect("token").to_string()
}

fn responses(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m.get("method").is_none() && (m.get("result").is_some() || m.get("error").is_some()))
        .collect()
}

fn progress_of(messages: &[Value]) -> Vec<f64> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter_map(|m| m["params"]["progress"].as_f64())
        .collect()
}

/// What every case holds: the client got exactly the stored events of its
/// call, once each, in order, with one answer among them.
async fn check_delivery(cluster: &TestCluster, run: &Run) -> Vec<Value> {
    let case = run.case;
    let messages = call_stream(run);
    let stored = stored(cluster, &token_of(run)).await;
    assert_eq!(
        messages, stored,
        "{case:?}: the client got every stored event once, in order"
    );
    assert_eq!(responses(&messages).len(), 1, "{case:?}: one answer: {messages:?}");
    let wire = progress_of(&messages);
    assert_eq!(
        handled(run, wire.len()).await,
        sorted(wire),
        "{case:?}: the client's handler saw every notification once"
    );
    messages
}

/// The progress the client's handler saw, sorted, once it saw `n` (or a
/// moment passed): rmcp runs each notification's handler in a task of its
/// own, so their order is not the wire's, and the last may still run when
/// the call returns.
async fn handled(run: &Run, n: usize) -> Vec<f64> {
    let deadline = Instant::now() + Duration::from_secs(2);
    while run.progress.values().len() < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sorted(run.progress.values())
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}

async fn replicas(cluster: &TestCluster, serving: Serving) -> (Replica, Replica) {
    let origin = Replica::start(cluster.endpoints(), serving).expect("origin replica");
    let follower = Replica::start(cluster.endpoints(), serving).expect("follower replica");
    (origin, follower)
}

/// Every case while the origin lives: the result once, every notification
/// once, in order.
async fn origin_alive(serving: Serving, handshakes: &[Handshake]) {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (origin, follower) = replicas(&cluster, serving).await;
    let mut runs = Vec::new();
    for case in cases(&["fast", "slow"], handshakes) {
        runs.push(Run::open(case, &origin, &follower).await);
    }
    let outcomes = futures::future::join_all(runs.iter().map(|r| r.call(CALL_TIMEOUT))).await;
    for (run, outcome) in runs.iter().zip(outcomes) {
        let case = run.case;
        assert_eq!(outcome.as_deref(), Ok("done"), "{case:?}");
        let messages = check_delivery(&cluster, run).await;
        let every: Vec<f64> = (1..=TICKS).map(f64::from).collect();
        assert_eq!(progress_of(&messages), every, "{case:?}: every notification, in order");
        assert!(
            responses(&messages)[0].get("result").is_some(),
            "{case:?}: {messages:?}"
        );
    }
}

/// The slow tool's cases with the origin killed once every stream is cut:
/// what the origin stored once, in order, then `origin_lost`, soon.
async fn origin_killed(serving: Serving, handshakes: &[Handshake]) {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (mut origin, follower) = replicas(&cluster, serving).await;
    let mut runs = Vec::new();
    for case in cases(&["slow"], handshakes) {
        runs.push(Run::open(case, &origin, &follower).await);
    }
    let limit = CALL_TIMEOUT + ORIGIN_LOST_WITHIN;
    let calls = futures::future::join_all(runs.iter().map(|r| async move {
        let outcome = r.call(limit).await;
        (outcome, Instant::now())
    }));
    let kill = async {
        for run in &runs {
            run.front.cut().await;
        }
        origin.kill();
        Instant::now()
    };
    let (outcomes, killed_at) = tokio::join!(calls, kill);
    for (run, (outcome, ended_at)) in runs.iter().zip(outcomes) {
        let case = run.case;
        let error = outcome.expect_err("the call fails: its origin died");
        assert!(error.contains(ORIGIN_LOST_MESSAGE), "{case:?}: {error}");
        let after = ended_at.saturating_duration_since(killed_at);
        assert!(
            after <= ORIGIN_LOST_WITHIN,
            "{case:?}: the call ended {after:?} after its origin died (bound {ORIGIN_LOST_WITHIN:?})"
        );
        let messages = check_delivery(&cluster, run).await;
        let answer = responses(&messages)[0];
        assert_eq!(answer["error"]["code"], ORIGIN_LOST_CODE, "{case:?}: {answer}");
        assert_eq!(answer["error"]["data"]["reason"], ORIGIN_LOST_REASON, "{case:?}");
        assert!(
            progress_of(&messages).len() >= case.keep,
            "{case:?}: what went out before the cut was stored: {messages:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_calls_cut_anywhere_end_on_the_other_replica_while_the_origin_lives() {
    origin_alive(Serving::Stateless, &[Handshake::Initialize, Handshake::Discover]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stateless_calls_whose_origin_died_end_with_origin_lost() {
    origin_killed(Serving::Stateless, &[Handshake::Initialize, Handshake::Discover]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn session_calls_cut_anywhere_end_on_the_other_replica_while_the_origin_lives() {
    origin_alive(Serving::Sessions, &[Handshake::Initialize]).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn session_calls_whose_origin_died_end_with_origin_lost() {
    origin_killed(Serving::Sessions, &[Handshake::Initialize]).await;
}

/// POSTs a `tools/call` of the slow tool with request id `id` and reads
/// its stream only up to its first event: that event's id.
async fn first_event_of_call(raw: &RawMcp, url: &str, id: &Value) -> String {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}}});
    let mut res = raw
        .request(reqwest::Method::POST, url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .expect("POST tools/call");
    assert_eq!(res.status(), StatusCode::OK);
    let mut text = String::new();
    loop {
        let chunk = tokio::time::timeout(CALL_TIMEOUT, res.chunk())
            .await
            .expect("an event in time")
            .expect("read the stream")
            .expect("the stream ended before its first event");
        text.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(id) = sse_events(&text).into_iter().find_map(|e| e.id) {
            return id;
        }
    }
}

/// The value under `key`, once it is gone: waits at most `limit`.
async fn wait_gone(cluster: &TestCluster, key: &str, limit: Duration) {
    let state = cluster.client().state_tool();
    let deadline = Instant::now() + limit;
    while state.retrieve(key).await.expect("retrieve").is_some() {
        assert!(Instant::now() < deadline, "{key} still there after {limit:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The origin dies right after a call's first event; the client resumes
/// on the other replica only once the origin's liveness record has
/// expired. The follower reads the request's id from `requests/<token>`
/// (as sent: the string "7", not the number 7) and answers for it with
/// `origin_lost`. The stream's head is only `{token, seq}`.
#[tokio::test(flavor = "multi_thread")]
async fn a_resumption_after_the_liveness_record_expired_answers_for_the_request_as_sent() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (mut origin, follower) = replicas(&cluster, Serving::Stateless).await;
    let raw = RawMcp::new("resume-test");
    let request_id = json!("7");
    let first = first_event_of_call(&raw, &origin.url(), &request_id).await;
    origin.kill();
    let token = first.split('.').next().expect("a token").to_string();
    wait_gone(&cluster, &format!("{EVENTS_PREFIX}/live/{token}"), ORIGIN_LOST_WITHIN).await;

    let (status, events) = raw.resume(&follower.url(), &first).await.expect("resume");
    assert_eq!(status, StatusCode::OK);
    let messages: Vec<Value> = events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| serde_json::from_str(&e.data).expect("a JSON-RPC message"))
        .collect();
    let [answer] = messages.as_slice() else {
        panic!("one answer after the first event: {messages:?}");
    };
    assert_eq!(answer["id"], request_id, "the id as sent, type and all: {answer}");
    assert_eq!(answer["error"]["code"], ORIGIN_LOST_CODE, "{answer}");
    assert_eq!(answer["error"]["message"], ORIGIN_LOST_MESSAGE, "{answer}");
    assert_eq!(answer["error"]["data"]["reason"], ORIGIN_LOST_REASON, "{answer}");

    let heads = cluster
        .client()
        .state_tool()
        .list(
            &format!("{EVENTS_PREFIX}/streams/"),
            ListOptions {
                limit: 10,
                page_token: None,
                with_values: true,
            },
        )
        .await
        .expect("list the heads");
    let heads: Vec<Value> = heads
        .entries
        .into_iter()
        .filter_map(|e| match e.value {
            Some(StateValue::Json(v)) => Some(v),
            _ => None,
        })
        .collect();
    assert_eq!(heads, [json!({"token": token, "seq": 2})], "the head is {{token, seq}}");
}
