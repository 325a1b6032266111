//! Legacy MCP sessions (`Mcp-Session-Id`) on the cluster: two
//! `cart_server --legacy-sessions` replicas behind a round-robin front with
//! no sticky routing. A session opened on one replica is served by the
//! other and survives a replica restart; another user's bearer token gets
//! nothing from it; a stream resumed with `Last-Event-ID` on the other
//! replica replays what the client missed.

use std::time::Duration;

use handlestore_client::{ListOptions, StateTool};
use handlestore_tests::TestCluster;
use handlestore_tests::mcp::{CartServer, RoundRobin, call, connect};
use handlestore_tests::mcp_raw::{self, RawMcp as Raw, SseEvent};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The JSON-RPC answer among `events`, with its event id.
fn answer(events: &[SseEvent], id: u64) -> (String, Value) {
    mcp_raw::answer(events, id).unwrap_or_else(|| panic!("no answer to request {id} in {events:?}"))
}

async fn legacy_replicas(cluster: &TestCluster) -> (CartServer, CartServer) {
    let flags = ["--legacy-sessions", "--session-ttl", "10m"];
    CartServer::pair(cluster, &flags).await.expect("two replicas")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_rmcp_client_keeps_its_session_across_replicas_and_a_restart() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (mut a, b) = legacy_replicas(&cluster).await;
    let front = RoundRobin::start(vec![a.url(), b.url()]).await.expect("front");
    let mcp = connect(&front.url()).await.expect("mcp client");

    let sessions = cluster.client().state_tool();
    let stored = sessions
        .list("mcp/sessions/", ListOptions::default())
        .await
        .expect("list sessions");
    assert_eq!(stored.entries.len(), 1, "initialize stored one session in the cluster");

    let cart_id = call(&mcp, "create_cart", json!({})).await.ok()["cart_id"]
        .as_str()
        .expect("cart_id")
        .to_string();
    for sku in ["apple", "pear"] {
        call(&mcp, "add_item", json!({"cart_id": cart_id, "sku": sku, "quantity": 1}))
            .await
            .ok();
    }
    let hits = front.hits();
    assert!(
        hits.iter().all(|&h| h >= 2),
        "both replicas served the session: {hits:?}"
    );

    // Replica a forgets every session it had in memory.
    a.restart().await.expect("restart a");
    for sku in ["fig", "kiwi"] {
        call(&mcp, "add_item", json!({"cart_id": cart_id, "sku": sku, "quantity": 1}))
            .await
            .ok();
    }
    let cart = call(&mcp, "get_cart", json!({"cart_id": cart_id})).await.ok();
    assert_eq!(cart["cart"]["lines"].as_array().map(Vec::len), Some(4), "{cart}");
    let log = a.log();
    let since_restart = log.rsplit("cart server ready").next().unwrap_or_default();
    assert!(
        since_restart.contains("create new session"),
        "the restarted replica restored the session from the cluster:\n{log}"
    );
    let stored = sessions
        .list("mcp/sessions/", ListOptions::default())
        .await
        .expect("list sessions");
    assert_eq!(stored.entries.len(), 1, "the client never opened a second session");
}

#[tokio::test(flavor = "multi_thread")]
async fn another_principal_gets_nothing_from_a_session() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (a, b) = legacy_replicas(&cluster).await;
    let mut alice = Raw::new("alice-token");
    let session = alice.open(&a.mcp_url()).await.expect("open");

    // Bob holds alice's session id, on either replica.
    let mut bob = Raw::new("bob-token");
    bob.session = Some(session.clone());
    for url in [b.mcp_url(), a.mcp_url()] {
        let (status, _) = bob.call_tool(&url, 1, "create_cart", json!({})).await.expect("call");
        assert_eq!(status, StatusCode::NOT_FOUND, "bob is refused on {url}");
        let (status, _) = bob.resume(&url, "AAAAAAAAAAAAAAAAAAAAAAAAAA.1").await.expect("resume");
        assert_eq!(status, StatusCode::NOT_FOUND, "bob's GET is refused on {url}");
    }
    // Alice goes on, on the other replica.
    let (status, events) = alice
        .call_tool(&b.mcp_url(), 2, "create_cart", json!({}))
        .await
        .expect("call");
    assert_eq!(status, StatusCode::OK);
    let (_, reply) = answer(&events, 2);
    assert!(reply["result"]["structuredContent"]["cart_id"].is_string(), "{reply}");

    // A made-up session id is unknown everywhere.
    let mut stranger = Raw::new("alice-token");
    stranger.session = Some("no-such-session".into());
    let (status, _) = stranger
        .call_tool(&b.mcp_url(), 3, "create_cart", json!({}))
        .await
        .expect("call");
    assert_eq!(status, StatusCode::NOT_FOUND);

    // DELETE ends the session on every replica.
    let res = alice
        .request(reqwest::Method::DELETE, &b.mcp_url())
        .send()
        .await
        .expect("delete");
    assert!(res.status().is_success(), "{}", res.status());
    // Replica b has no session any more; a learns of the deletion through
    // its watch of the sessions, within moments.
    let (status, _) = alice
        .call_tool(&b.mcp_url(), 4, "create_cart", json!({}))
        .await
        .expect("call");
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "a deleted session is gone where it was deleted"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _) = alice
            .call_tool(&a.mcp_url(), 5, "create_cart", json!({}))
            .await
            .expect("call");
        if status == StatusCode::NOT_FOUND {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "replica a still serves the deleted session: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_resumed_on_the_other_replica_replays_what_was_missed() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (a, b) = legacy_replicas(&cluster).await;
    let mut alice = Raw::new("alice-token");
    alice.open(&a.mcp_url()).await.expect("open");

    let (status, events) = alice
        .call_tool(&a.mcp_url(), 1, "create_cart", json!({}))
        .await
        .expect("call");
    assert_eq!(status, StatusCode::OK);
    let priming = events
        .first()
        .and_then(|e| e.id.clone())
        .expect("a priming event with an id");
    let (answer_id, reply) = answer(&events, 1);
    assert_ne!(priming, answer_id);

    // The client "missed" everything after the priming event: it resumes
    // on the other replica, which never saw this stream.
    let (status, replayed) = alice.resume(&b.mcp_url(), &priming).await.expect("resume");
    assert_eq!(status, StatusCode::OK);
    let (replayed_id, replayed_reply) = answer(&replayed, 1);
    assert_eq!(replayed_id, answer_id, "the replay keeps the event's id");
    assert_eq!(replayed_reply, reply, "and its content");

    // Resuming after the last event replays nothing; a made-up id too.
    let (_, after_last) = alice.resume(&b.mcp_url(), &answer_id).await.expect("resume");
    assert!(after_last.iter().all(|e| e.data.is_empty()), "{after_last:?}");
    let (_, garbage) = alice.resume(&a.mcp_url(), "not-an-event-id").await.expect("resume");
    assert!(garbage.iter().all(|e| e.data.is_empty()), "{garbage:?}");
}

/// Reads the child's next stdout line, or fails with its stderr.
async fn line_of(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    child: &mut tokio::process::Child,
    want: &str,
) -> String {
    use tokio::io::AsyncReadExt;
    match tokio::time::timeout(Duration::from_secs(90), lines.next_line()).await {
        Ok(Ok(Some(line))) if line.starts_with(want) => line[want.len()..].trim().to_string(),
        other => {
            let _ = child.kill().await;
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err).await;
            }
            panic!("the Python client did not print {want:?} ({other:?}):\n{err}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_client_keeps_its_session_across_replicas_and_a_restart() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let python = match handlestore_tests::python::interpreter() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("skipped: no Python MCP SDK: {why}");
            return;
        }
    };
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (mut a, b) = legacy_replicas(&cluster).await;
    let front = RoundRobin::start(vec![a.url(), b.url()]).await.expect("front");
    let mut child = tokio::process::Command::new(&python)
        .arg(handlestore_tests::python::script("legacy_session_client.py"))
        .args([front.url().as_str(), "python-user"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let cart_id = line_of(&mut lines, &mut child, "phase1 ").await;
    assert!(cart_id.starts_with("cart-"), "{cart_id}");
    let hits = front.hits();
    assert!(
        hits.iter().all(|&h| h >= 2),
        "both replicas served the session: {hits:?}"
    );

    a.restart().await.expect("restart a");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"go\n").await.expect("write");
    let done: Value = serde_json::from_str(&line_of(&mut lines, &mut child, "done ").await).expect("json");
    assert_eq!(
        done["cart"]["cart"]["lines"].as_array().map(Vec::len),
        Some(4),
        "{done}"
    );
    let protocol = done["protocol"].as_str().unwrap_or_default();
    assert!(
        !protocol.is_empty() && protocol < "2026-07-28",
        "a handshake (session) protocol was spoken: {protocol}"
    );
    let stored = cluster
        .client()
        .state_tool()
        .list("mcp/sessions/", ListOptions::default())
        .await
        .expect("list sessions");
    assert_eq!(stored.entries.len(), 1, "one session, in the cluster");
}
