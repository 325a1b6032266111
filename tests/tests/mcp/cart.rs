//! The cart server with a real MCP client: two stateless replicas behind a
//! round-robin front share carts through handlestore.

use std::time::Duration;

use handlestore_tests::TestCluster;
use handlestore_tests::mcp::{CartServer, RoundRobin, ToolOutcome, call, connect};
use serde_json::{Value, json};

fn lines(cart: &Value) -> Vec<Value> {
    cart["cart"]["lines"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn cart_flows_across_two_replicas() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (a, b) = CartServer::pair(&cluster, &[]).await.expect("two replicas");
    let front = RoundRobin::start(vec![a.url(), b.url()]).await.expect("front");
    let mcp = connect(&front.url()).await.expect("mcp client");

    let tools = mcp.list_all_tools().await.expect("list tools");
    let mut names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["add_item", "checkout", "create_cart", "get_cart"]);
    let add = tools.iter().find(|t| t.name == "add_item").expect("add_item");
    let schema = serde_json::to_value(&add.input_schema).expect("schema");
    for field in ["cart_id", "sku", "quantity"] {
        assert!(
            schema["properties"][field].is_object(),
            "add_item's schema has {field}: {schema}"
        );
    }

    for flow in 0..3 {
        // Each call goes to the other replica than the one before.
        let cart_id = call(&mcp, "create_cart", json!({})).await.ok()["cart_id"]
            .as_str()
            .expect("cart_id")
            .to_string();
        assert!(cart_id.starts_with("cart-"), "{cart_id}");
        for (i, sku) in ["apple", "pear", "fig"].iter().enumerate() {
            let r = call(
                &mcp,
                "add_item",
                json!({"cart_id": cart_id, "sku": sku, "quantity": i + 1}),
            )
            .await
            .ok();
            assert_eq!(
                lines(&r).len(),
                i + 1,
                "flow {flow}: each add lands, on whichever replica"
            );
        }
        let cart = call(&mcp, "get_cart", json!({"cart_id": cart_id})).await.ok();
        assert_eq!(lines(&cart).len(), 3);
        let first = call(&mcp, "checkout", json!({"cart_id": cart_id})).await.ok();
        let order_id = first["order_id"].as_str().expect("order_id").to_string();
        let again = call(&mcp, "checkout", json!({"cart_id": cart_id})).await.ok();
        assert_eq!(
            again["order_id"],
            json!(order_id),
            "a retried checkout answers the same order id"
        );
        let late = call(
            &mcp,
            "add_item",
            json!({"cart_id": cart_id, "sku": "late", "quantity": 1}),
        )
        .await;
        assert!(late.tool_error().contains("already checked out"));
    }

    // Three checkouts (plus retries) made exactly three orders.
    let orders = cluster.client().handle_store::<Value>("order").build();
    assert_eq!(
        handlestore_client::HandleStore::len(&orders).await.expect("len"),
        3,
        "no checkout made two orders"
    );

    // Bad ids are tool errors, not crashes.
    let unknown = handlestore_client::id::new_handle_id("cart");
    for (tool, args) in [
        ("get_cart", json!({"cart_id": unknown})),
        ("add_item", json!({"cart_id": unknown, "sku": "x", "quantity": 1})),
        ("checkout", json!({"cart_id": unknown})),
        ("get_cart", json!({"cart_id": "not a cart id"})),
    ] {
        let msg = call(&mcp, tool, args.clone()).await.tool_error();
        assert!(msg.starts_with("unknown cart_id: "), "{tool} {args}: {msg}");
    }
    let cart_id = call(&mcp, "create_cart", json!({})).await.ok()["cart_id"]
        .as_str()
        .expect("id")
        .to_string();
    let msg = call(&mcp, "add_item", json!({"cart_id": cart_id, "sku": "x", "quantity": 0}))
        .await
        .tool_error();
    assert!(msg.contains("quantity"), "{msg}");
    let msg = call(&mcp, "checkout", json!({"cart_id": cart_id})).await.tool_error();
    assert!(msg.contains("empty"), "{msg}");
    // The server is still fine after all that.
    assert!(matches!(
        call(&mcp, "get_cart", json!({"cart_id": cart_id})).await,
        ToolOutcome::Ok(_)
    ));
    let hits = front.hits();
    assert!(hits.iter().all(|h| *h > 10), "both replicas served the flows: {hits:?}");
    mcp.cancel().await.expect("close");
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_adds_through_both_replicas_all_land() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (a, b) = CartServer::pair(&cluster, &[]).await.expect("two replicas");
    let front = RoundRobin::start(vec![a.url(), b.url()]).await.expect("front");
    let mcp = connect(&front.url()).await.expect("mcp client");
    let cart_id = call(&mcp, "create_cart", json!({})).await.ok()["cart_id"]
        .as_str()
        .expect("id")
        .to_string();

    let mut calls = Vec::new();
    for i in 0..20 {
        let url = front.url();
        let cart_id = cart_id.clone();
        calls.push(tokio::spawn(async move {
            let mcp = connect(&url).await.expect("client");
            let out = call(
                &mcp,
                "add_item",
                json!({"cart_id": cart_id, "sku": format!("sku-{i}"), "quantity": 1}),
            )
            .await;
            let _ = mcp.cancel().await;
            out
        }));
    }
    for c in calls {
        c.await.expect("task").ok();
    }
    let cart = call(&mcp, "get_cart", json!({"cart_id": cart_id})).await.ok();
    let mut skus: Vec<String> = lines(&cart)
        .iter()
        .map(|l| l["sku"].as_str().unwrap_or("").to_string())
        .collect();
    skus.sort();
    let mut want: Vec<String> = (0..20).map(|i| format!("sku-{i}")).collect();
    want.sort();
    assert_eq!(skus, want, "all 20 concurrent adds landed, none twice");

    // A retried add_item with the same request_id is not added twice.
    for _ in 0..2 {
        call(
            &mcp,
            "add_item",
            json!({"cart_id": cart_id, "sku": "once", "quantity": 1, "request_id": "r-1"}),
        )
        .await
        .ok();
    }
    let cart = call(&mcp, "get_cart", json!({"cart_id": cart_id})).await.ok();
    assert_eq!(lines(&cart).len(), 21);
    tokio::time::sleep(Duration::from_millis(10)).await;
}
