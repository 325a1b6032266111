//! Resource subscriptions across replicas: a client listening
//! (`subscriptions/listen`, protocol 2026-07-28) on one cart_server replica
//! hears the changes made through the other, because both publish to and
//! listen on the cluster's resource bus.

use std::time::Duration;

use handlestore_client::{ListOptions, ResourceBus, StateTool};
use handlestore_tests::TestCluster;
use handlestore_tests::mcp::{CartServer, call, connect, connect_confirming};
use rmcp::model::{ReadResourceRequestParams, ResourceContents, ServerNotification, SubscriptionFilter};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn a_listener_on_one_replica_hears_changes_made_through_the_other() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let (a, b) = CartServer::pair(&cluster, &[]).await.expect("two replicas");
    let writer = connect(&a.mcp_url()).await.expect("writer");
    let cart_of = |v: Value| v["cart_id"].as_str().expect("cart_id").to_string();
    let watched = cart_of(call(&writer, "create_cart", json!({})).await.ok());
    let other = cart_of(call(&writer, "create_cart", json!({})).await.ok());

    let listener = connect_confirming(&b.mcp_url()).await.expect("listener");
    let mut filter = SubscriptionFilter::new();
    let uri = format!("cart://{watched}");
    filter.resource_subscriptions = Some(vec![uri.clone(), "file:///etc/passwd".into()]);
    let mut sub = listener.listen(filter).await.expect("listen");
    assert_eq!(
        sub.acknowledged().resource_subscriptions,
        Some(vec![uri.clone()]),
        "only carts are accepted"
    );

    // A change to another cart is not sent; the watched cart's is, once.
    call(
        &writer,
        "add_item",
        json!({"cart_id": other, "sku": "x", "quantity": 1}),
    )
    .await
    .ok();
    call(
        &writer,
        "add_item",
        json!({"cart_id": watched, "sku": "apple", "quantity": 2}),
    )
    .await
    .ok();
    let note = tokio::time::timeout(Duration::from_secs(20), sub.next())
        .await
        .expect("an update within 20 s")
        .expect("subscription")
        .expect("open");
    match note {
        ServerNotification::ResourceUpdatedNotification(n) => assert_eq!(n.params.uri, uri),
        other => panic!("unexpected notification {other:?}"),
    }
    call(&writer, "checkout", json!({"cart_id": watched})).await.ok();
    let note = tokio::time::timeout(Duration::from_secs(20), sub.next())
        .await
        .expect("the checkout's update within 20 s")
        .expect("subscription")
        .expect("open");
    assert!(
        matches!(note, ServerNotification::ResourceUpdatedNotification(ref n) if n.params.uri == uri),
        "{note:?}"
    );

    // The listener reads the cart as a resource, on its own replica.
    let read = listener
        .read_resource(ReadResourceRequestParams::new(uri.clone()))
        .await
        .expect("read_resource");
    let text = match &read.contents[0] {
        ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("unexpected contents {other:?}"),
    };
    let cart: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(cart["lines"].as_array().map(Vec::len), Some(1), "{cart}");
    assert!(cart["order_id"].is_string(), "{cart}");
    let missing = listener
        .read_resource(ReadResourceRequestParams::new("cart://cart-AAAAAAAAAAAAAAAAAAAAAAAAAA"))
        .await;
    assert!(missing.is_err(), "an unknown cart is not a resource");

    // The listeners followed the carts' own writes: nothing was published.
    let published = cluster
        .client()
        .state_tool()
        .list("mcp/resources/", ListOptions::default())
        .await
        .expect("list");
    assert!(published.entries.is_empty(), "{:?}", published.entries);
}

/// A subscriber of the resource bus hears every update published after
/// `subscribe` returned, from another replica, also when that subscribe
/// is the process's first (it starts the bus's watch): each round a fresh
/// bus on node 3 subscribes, and node 2 publishes at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_published_right_after_subscribe_returned_is_heard() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let publisher = ResourceBus::new(&cluster.client_for(2));
    for i in 0..30 {
        let bus = ResourceBus::new(&cluster.client_for(3));
        let mut rx = bus.subscribe().await.expect("subscribe");
        let uri = format!("cart://round-{i}");
        let revision = publisher.publish(&uri).await.expect("publish");
        let heard = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match rx.recv().await {
                    Ok(u) if u.uri == uri => return u,
                    Ok(_) => continue,
                    Err(e) => panic!("round {i}: {e}"),
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("round {i}: the update published after subscribe was lost"));
        assert_eq!(heard.revision, revision);
    }
}

/// A bus following a handle store hears each put and delete of its
/// handles, made through another node, as an update of `<prefix><id>` at
/// the write's revision, and has nothing to publish itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bus_following_a_store_hears_its_handles_writes_and_publishes_nothing() {
    use handlestore_client::{Error, HandleStore, Ttl};
    let cluster = TestCluster::start(3).await.expect("cluster");
    let bus = ResourceBus::following_store(&cluster.client_for(3), "cart", "cart://");
    let mut rx = bus.subscribe().await.expect("subscribe");
    let writer = cluster.client_for(2);
    let carts = writer.handle_store::<Value>("cart").prefix("cart").build();
    let others = writer.handle_store::<Value>("other").build();
    let id = carts.mint(json!({"lines": []}), Ttl::Default).await.expect("mint");
    others
        .mint(json!({}), Ttl::Default)
        .await
        .expect("another store's mint");
    carts.put(&id, json!({"lines": [1]}), Ttl::Default).await.expect("put");
    carts.delete(&id).await.expect("delete");
    let uri = format!("cart://{id}");
    let mut heard = Vec::new();
    while heard.len() < 3 {
        let u = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("heard only {heard:?}"))
            .expect("open");
        heard.push(u);
    }
    assert!(heard.iter().all(|u| u.uri == uri), "{heard:?}");
    assert!(heard.windows(2).all(|w| w[0].revision < w[1].revision), "{heard:?}");
    assert!(matches!(bus.publish(&uri).await, Err(Error::InvalidArgument(_))));
}
