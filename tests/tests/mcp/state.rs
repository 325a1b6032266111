//! `handlestore mcp`: every state tool round-trips through a real MCP client.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use handlestore_tests::mcp::{McpClient, call, connect};
use handlestore_tests::{TestCluster, free_port, handlestore_bin};
use serde_json::json;

struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_state_tool_round_trips() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (_server, port) = start_mcp_server(&cluster).await;
    let mcp = connect(&format!("http://127.0.0.1:{port}/mcp")).await.expect("client");
    the_tools_are_listed_with_their_schemas(&mcp).await;
    one_key_at_a_time(&mcp).await;
    batches_lists_and_deletes(&mcp).await;

    // What the MCP server stored is in the cluster, in its namespace.
    let tool = cluster.client().with_namespace("agents").expect("ns").state_tool();
    handlestore_client::StateTool::store(
        &tool,
        "from-rust",
        json!("hi").into(),
        handlestore_client::StoreOptions::default(),
    )
    .await
    .expect("store");
    let r = call(&mcp, "state_retrieve", json!({"key": "from-rust"})).await.ok();
    assert_eq!(r["value"], json!("hi"));
    mcp.cancel().await.expect("close");
}

/// `handlestore mcp` over `cluster`, in namespace "agents", once it
/// accepts connections; and its port.
async fn start_mcp_server(cluster: &TestCluster) -> (Kill, u16) {
    let port = free_port();
    let server = Kill(
        Command::new(handlestore_bin())
            .args(["mcp", "--listen", &format!("127.0.0.1:{port}"), "--namespace", "agents"])
            .env("HANDLESTORE_ENDPOINTS", cluster.endpoints().join(","))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn handlestore mcp"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < deadline, "handlestore mcp did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (server, port)
}

async fn the_tools_are_listed_with_their_schemas(mcp: &McpClient) {
    let tools = mcp.list_all_tools().await.expect("tools");
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "state_batch_retrieve",
            "state_batch_store",
            "state_delete",
            "state_exists",
            "state_list",
            "state_retrieve",
            "state_store"
        ]
    );
    for t in &tools {
        let schema = serde_json::to_value(&t.input_schema).expect("schema");
        assert_eq!(schema["type"], "object", "{}: {schema}", t.name);
        assert!(
            schema["properties"].is_object(),
            "{} has a schema for its arguments: {schema}",
            t.name
        );
    }
}

/// Store, retrieve, and the errors of a store: a wrong revision, a bad key.
async fn one_key_at_a_time(mcp: &McpClient) {
    let r = call(
        mcp,
        "state_store",
        json!({"key": "checkpoints/a7/latest", "value": {"step": 3}}),
    )
    .await
    .ok();
    let rev = r["revision"].as_u64().expect("revision");
    let r = call(mcp, "state_retrieve", json!({"key": "checkpoints/a7/latest"}))
        .await
        .ok();
    assert_eq!(
        (r["found"].clone(), r["value"].clone()),
        (json!(true), json!({"step": 3}))
    );
    let r = call(mcp, "state_retrieve", json!({"key": "checkpoints/none"}))
        .await
        .ok();
    assert_eq!(r["found"], json!(false));
    let msg = call(
        mcp,
        "state_store",
        json!({"key": "checkpoints/a7/latest", "value": 4, "expected_revision": rev + 99}),
    )
    .await
    .tool_error();
    assert!(msg.contains("revision mismatch"), "{msg}");
    let msg = call(mcp, "state_store", json!({"key": "bad//key", "value": 1}))
        .await
        .tool_error();
    assert!(msg.contains("invalid argument"), "{msg}");
}

/// Batches, existence, listing in pages, deleting by prefix and by key.
async fn batches_lists_and_deletes(mcp: &McpClient) {
    let r = call(
        mcp,
        "state_batch_store",
        json!({"items": [
            {"key": "logs/a7/001", "value": "one"},
            {"key": "logs/a7/002", "value": "two", "ttl_seconds": 3600},
            {"key": "logs/a7/003", "value": "three"}
        ]}),
    )
    .await
    .ok();
    assert_eq!(r["stored"], json!(3));
    let r = call(mcp, "state_exists", json!({"key": "logs/a7/002"})).await.ok();
    assert_eq!(r["exists"], json!(true));
    let r = call(
        mcp,
        "state_list",
        json!({"prefix": "logs/a7/", "limit": 2, "with_values": true}),
    )
    .await
    .ok();
    let entries = r["entries"].as_array().expect("entries");
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (entries[0]["key"].clone(), entries[0]["value"].clone()),
        (json!("logs/a7/001"), json!("one"))
    );
    let token = r["next_page_token"].as_str().expect("more pages").to_string();
    let r = call(mcp, "state_list", json!({"prefix": "logs/a7/", "page_token": token}))
        .await
        .ok();
    assert_eq!(r["entries"][0]["key"], json!("logs/a7/003"));
    assert_eq!(r["next_page_token"], json!(null));
    let r = call(
        mcp,
        "state_batch_retrieve",
        json!({"keys": ["logs/a7/001", "logs/a7/999"]}),
    )
    .await
    .ok();
    assert_eq!(r["entries"][0]["value"], json!("one"));
    assert_eq!(r["entries"][1]["found"], json!(false));
    let r = call(mcp, "state_delete", json!({"key": "logs/a7/", "prefix": true}))
        .await
        .ok();
    assert_eq!((r["deleted"].clone(), r["more"].clone()), (json!(3), json!(false)));
    let r = call(mcp, "state_delete", json!({"key": "checkpoints/a7/latest"}))
        .await
        .ok();
    assert_eq!(r["deleted"], json!(1));
}
