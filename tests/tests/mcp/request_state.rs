//! The replicated key ring and the request-state codec on real nodes and
//! real MCP replicas: a blob sealed through one replica opens on another,
//! after restarts and across a rotation, until its key is retired.

use std::time::Duration;

use handlestore_client::request_state::Mode;
use handlestore_client::{ClientStateStore, Error, RequestStateCodec, StateTool, StateValue};
use handlestore_tests::TestCluster;
use handlestore_tests::mcp::{CartServer, RoundRobin, call, connect_confirming, text_of};
use rmcp::model::{CallToolRequestParams, CallToolResponse, ElicitResult, ElicitationAction};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn keyring_lifecycle_and_codec_across_nodes() {
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let out = cluster.cli(&["keyring", "list"]);
    assert_eq!(out.status.code(), Some(1), "no ring yet");
    let out = cluster.cli(&["keyring", "create"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first = String::from_utf8_lossy(&out.stdout)
        .trim()
        .trim_start_matches("created key ")
        .to_string();
    let out = cluster.cli(&["keyring", "create"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already"),
        "a second create is refused"
    );

    // Sealed through node 1, opened through node 3.
    let c1 = cluster.client_for(1);
    let c3 = cluster.client_for(3);
    let seal = RequestStateCodec::from_cluster(&c1, Mode::Signed)
        .await
        .expect("codec 1");
    let open = RequestStateCodec::from_cluster(&c3, Mode::Signed)
        .await
        .expect("codec 3");
    let state = json!({"step": 2, "cart": "cart-1"});
    let old_blob = seal
        .encode(&state, "alice", Some("checkout"), Duration::from_secs(600))
        .await
        .expect("seal");
    assert_eq!(
        open.decode(&old_blob, "alice", Some("checkout")).await,
        Some(state.clone())
    );
    assert_eq!(
        open.decode(&old_blob, "bob", Some("checkout")).await,
        None,
        "bound to the subject"
    );

    // The ring survives a full restart of the cluster.
    for id in 1..=3 {
        cluster.kill(id);
    }
    for id in 1..=3 {
        cluster.restart(id).expect("restart");
    }
    cluster.wait_leader(Duration::from_secs(20)).await.expect("leader");
    let after = RequestStateCodec::from_cluster(&cluster.client(), Mode::Signed)
        .await
        .expect("codec after restart");
    assert_eq!(
        after.decode(&old_blob, "alice", Some("checkout")).await,
        Some(state.clone()),
        "after restarts"
    );

    // Rotate: new blobs use the new key; old ones still open.
    let out = cluster.cli(&["keyring", "rotate"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list = String::from_utf8_lossy(&cluster.cli(&["keyring", "list"]).stdout).to_string();
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(
        list.lines().any(|l| l.starts_with(&first) && l.contains("active")),
        "{list}"
    );
    assert!(!list.contains("secret"), "list shows no secrets");
    after.refresh().await.expect("refresh");
    let new_blob = after
        .encode(&state, "alice", None, Duration::from_secs(600))
        .await
        .expect("seal");
    open.refresh().await.expect("refresh");
    assert_eq!(
        open.decode(&old_blob, "alice", Some("checkout")).await,
        Some(state.clone()),
        "across a rotation"
    );
    assert_eq!(open.decode(&new_blob, "alice", None).await, Some(state.clone()));

    // The primary cannot be retired; the old key can, and then its blobs die.
    let primary = list
        .lines()
        .find(|l| l.contains("primary"))
        .and_then(|l| l.split_whitespace().next())
        .expect("primary");
    let out = cluster.cli(&["keyring", "retire", primary]);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("is the primary; rotate first"), "{said}");
    assert!(!said.contains("revision mismatch"), "{said}");
    assert!(cluster.cli(&["keyring", "retire", &first]).status.success());
    open.refresh().await.expect("refresh");
    assert_eq!(
        open.decode(&old_blob, "alice", Some("checkout")).await,
        None,
        "a retired key verifies nothing"
    );
    assert_eq!(open.decode(&new_blob, "alice", None).await, Some(state));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_checkout_confirmation_sealed_by_one_replica_is_accepted_by_the_other() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let flags = ["--confirm-checkout", "--keyring-refresh", "1s"];
    let (a, b) = CartServer::pair(&cluster, &flags).await.expect("two replicas");
    let front = RoundRobin::start(vec![a.url(), b.url()]).await.expect("front");
    let mcp = connect_confirming(&front.url()).await.expect("client");
    let new_cart = || async {
        let id = call(&mcp, "create_cart", json!({})).await.ok()["cart_id"]
            .as_str()
            .expect("id")
            .to_string();
        call(&mcp, "add_item", json!({"cart_id": id, "sku": "book", "quantity": 1}))
            .await
            .ok();
        id
    };
    let args = |id: &str| json!({"cart_id": id}).as_object().cloned().expect("object");

    // Round one on one replica: input required, with sealed state.
    let cart = new_cart().await;
    let before = front.hits();
    let first = mcp
        .call_tool_once(CallToolRequestParams::new("checkout").with_arguments(args(&cart)))
        .await
        .expect("round one");
    let CallToolResponse::InputRequired(ir) = first else {
        panic!("expected input_required, got {first:?}")
    };
    let sealed = ir.request_state.clone().expect("request state");
    assert!(sealed.starts_with("v1."), "{sealed}");
    assert!(ir.input_requests.as_ref().is_some_and(|r| r.contains_key("confirm")));
    let yes = serde_json::to_value(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true})))
        .expect("json");
    let responses: rmcp::model::InputResponses = [("confirm".to_string(), yes)].into_iter().collect();

    // Round two on the other replica: accepted.
    let second = mcp
        .call_tool_once(
            CallToolRequestParams::new("checkout")
                .with_arguments(args(&cart))
                .with_request_state(sealed.clone())
                .with_input_responses(responses.clone()),
        )
        .await
        .expect("round two");
    let after = front.hits();
    let served: Vec<usize> = after.iter().zip(&before).map(|(x, y)| x - y).collect();
    assert_eq!(
        served.iter().filter(|n| **n > 0).count(),
        2,
        "the rounds went to different replicas: {served:?}"
    );
    let CallToolResponse::Complete(done) = second else {
        panic!("expected a result, got {second:?}")
    };
    assert_ne!(done.is_error, Some(true), "{}", text_of(&done));
    let order = done.structured_content.expect("structured")["order_id"].clone();
    assert!(order.is_string());

    // A tampered state, or one for another cart, is refused.
    let other = new_cart().await;
    for (cart_id, state) in [
        (cart.as_str(), format!("{}x", &sealed[..sealed.len() - 1])),
        (other.as_str(), sealed.clone()),
    ] {
        let r = mcp
            .call_tool_once(
                CallToolRequestParams::new("checkout")
                    .with_arguments(args(cart_id))
                    .with_request_state(state)
                    .with_input_responses(responses.clone()),
            )
            .await
            .expect("call");
        let CallToolResponse::Complete(r) = r else {
            panic!("expected a tool error")
        };
        assert_eq!(r.is_error, Some(true));
        assert!(text_of(&r).contains("invalid or expired"), "{}", text_of(&r));
    }

    // The high-level client drives both rounds itself.
    let done = mcp
        .call_tool(CallToolRequestParams::new("checkout").with_arguments(args(&other)))
        .await
        .expect("checkout");
    assert_ne!(done.is_error, Some(true), "{}", text_of(&done));
    assert!(done.structured_content.expect("structured")["order_id"].is_string());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_client_state_survives_its_restart() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let client = cluster.client().with_namespace("clients").expect("ns");
    client.keyring_rotate(true).await.expect("create ring");
    {
        let s = ClientStateStore::from_cluster(&client, "api.example.com-alice")
            .await
            .expect("store");
        s.set_session_id("session-123").await.expect("set");
        s.set_access_token("tok-SECRET-value").await.expect("set");
        s.set_protocol_version("2026-07-28").await.expect("set");
        s.set_server_capabilities(&json!({"tools": {"listChanged": true}}))
            .await
            .expect("set");
    }
    // "Restart": a new process would build everything anew, here through
    // another node.
    let again = cluster.client_for(3).with_namespace("clients").expect("ns");
    let s = ClientStateStore::from_cluster(&again, "api.example.com-alice")
        .await
        .expect("store");
    assert_eq!(s.session_id().await.expect("get").as_deref(), Some("session-123"));
    assert_eq!(
        s.access_token().await.expect("get").as_deref(),
        Some("tok-SECRET-value")
    );
    assert_eq!(s.protocol_version().await.expect("get").as_deref(), Some("2026-07-28"));
    assert_eq!(
        s.server_capabilities().await.expect("get"),
        Some(json!({"tools": {"listChanged": true}}))
    );
    let raw = again
        .state_tool()
        .retrieve("mcp-clients/api.example.com-alice/access-token")
        .await
        .expect("raw")
        .and_then(|e| e.value);
    let Some(StateValue::Json(raw)) = raw else {
        panic!("stored as JSON text")
    };
    let raw = raw.as_str().expect("string");
    assert!(
        raw.starts_with("v1e.") && !raw.contains("SECRET"),
        "the token is stored encrypted: {raw}"
    );
    s.clear_session_id().await.expect("clear");
    assert_eq!(s.session_id().await.expect("get"), None);
    s.clear().await.expect("clear all");
    assert_eq!(s.access_token().await.expect("get"), None);
    // Without a ring the store refuses to start (it could not encrypt).
    let bare = cluster.client().with_namespace("no-ring").expect("ns");
    assert!(matches!(
        ClientStateStore::from_cluster(&bare, "x").await,
        Err(Error::NotFound(_))
    ));
}

/// SEP-2322's one-time redemption across replicas: of many concurrent
/// opens of one blob through different nodes exactly one succeeds, and a
/// redeemed blob stays redeemed after the leader is killed.
#[tokio::test(flavor = "multi_thread")]
async fn single_use_request_state_opens_once_across_nodes_and_failover() {
    use handlestore_client::SingleUse;
    let mut cluster = TestCluster::start(3).await.expect("cluster");
    let out = cluster.cli(&["keyring", "create"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let codec = |id: u64| {
        let client = cluster.client_for(id);
        async move {
            let c = RequestStateCodec::from_cluster(&client, Mode::Encrypted)
                .await
                .expect("codec");
            std::sync::Arc::new(c.with_single_use(SingleUse::new(&client)))
        }
    };
    let codecs = [codec(1).await, codec(2).await, codec(3).await];
    let blob = codecs[0]
        .encode(&json!({"step": 1}), "alice", None, Duration::from_secs(60))
        .await
        .expect("seal");
    let opens: Vec<_> = (0..9)
        .map(|i| {
            let (c, b) = (codecs[i % 3].clone(), blob.clone());
            tokio::spawn(async move { c.decode(&b, "alice", None).await })
        })
        .collect();
    let mut opened = 0;
    for o in opens {
        opened += o.await.expect("task").is_some() as usize;
    }
    assert_eq!(opened, 1, "exactly one of nine concurrent opens wins");

    let second = codecs[1]
        .encode(&json!({"step": 2}), "alice", None, Duration::from_secs(60))
        .await
        .expect("seal");
    assert_eq!(codecs[2].decode(&second, "alice", None).await, Some(json!({"step": 2})));
    let leader = cluster.wait_leader(Duration::from_secs(10)).await.expect("leader");
    cluster.kill(leader);
    for c in codecs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i as u64 + 1 != leader)
        .map(|(_, c)| c)
    {
        assert_eq!(c.decode(&blob, "alice", None).await, None, "redeemed before the kill");
        assert_eq!(c.decode(&second, "alice", None).await, None, "redeemed before the kill");
    }
    let third = codecs[(leader as usize) % 3]
        .encode(&json!({"step": 3}), "alice", None, Duration::from_secs(60))
        .await
        .expect("seal after the kill");
    let survivor = &codecs[(leader as usize) % 3];
    assert_eq!(survivor.decode(&third, "bob", None).await, None, "another subject");
    assert_eq!(survivor.decode(&third, "alice", None).await, Some(json!({"step": 3})));
    assert_eq!(survivor.decode(&third, "alice", None).await, None);
}
