//! Admin over what a store holds: `handlestore handle list` (pages, the
//! fields, no values unless asked, `--json`) and `handle evict` by id, by
//! prefix and every expired one; bad input refused with INVALID_ARGUMENT.

use std::time::Duration;

use handlestore_client::{ClusterHandleStore, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::TestCluster;
use serde_json::{Value, json};
use tonic::Code;

fn cli(cluster: &TestCluster, args: &[&str]) -> String {
    let out = cluster.cli(args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn listed(cluster: &TestCluster, extra: &[&str]) -> Vec<Value> {
    let out = cli(
        cluster,
        &[&["handle", "list", "--store", "cart", "--json"], extra].concat(),
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("no JSON ({e}): {out}"));
    v.as_array().expect("an array").clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_shows_a_store_page_by_page_and_evict_removes_by_id_prefix_and_expiry() {
    let cluster = TestCluster::builder(3)
        // The sweep would remove expired handles before evict could.
        .args(["--sweep-interval", "1h"])
        .start()
        .await
        .expect("cluster");
    let carts: ClusterHandleStore<Value> = cluster.client().handle_store("cart").prefix("vip").build();
    let plain: ClusterHandleStore<Value> = cluster.client().handle_store("cart").build();
    let mut vip = Vec::new();
    for i in 0..150 {
        vip.push(carts.mint(json!({"i": i}), Ttl::Never).await.expect("mint"));
    }
    let kept = plain.mint(json!("kept"), Ttl::Never).await.expect("mint");
    let short = plain
        .mint(json!("short"), Ttl::After(Duration::from_secs(1)))
        .await
        .expect("mint");

    // 152 handles, over two pages of the server's, in id order, no values.
    let all = listed(&cluster, &[]);
    assert_eq!(all.len(), 152);
    let ids: Vec<&str> = all.iter().map(|h| h["id"].as_str().expect("id")).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in id order");
    let first = all.iter().find(|h| h["id"] == json!(kept)).expect("kept listed");
    assert!(
        first["create_revision"].is_u64() && first["mod_revision"].is_u64(),
        "{first}"
    );
    assert_eq!(first["expires_at_ms"], Value::Null);
    assert_eq!(first["size"], json!(b"\"kept\"".len()));
    assert!(first.get("value").is_none(), "no value unless asked: {first}");
    let short_row = all.iter().find(|h| h["id"] == json!(short)).expect("short listed");
    assert!(short_row["expires_at_ms"].is_u64(), "{short_row}");
    let with_values = listed(&cluster, &["--prefix", "vip-", "--limit", "3", "--values"]);
    assert_eq!(with_values.len(), 3);
    assert!(with_values[0]["value"]["i"].is_u64(), "{}", with_values[0]);
    let table = cli(&cluster, &["handle", "list", "--store", "cart", "--limit", "5"]);
    assert!(table.starts_with("ID") && table.contains("never"), "{table}");
    assert!(!table.contains("\"i\""), "no values in the table: {table}");

    // By id, then by prefix (more than one call's limit of the server's
    // default 1000 is not needed: 150 in one), then the expired one.
    assert!(cli(&cluster, &["handle", "evict", "--store", "cart", &vip[0]]).contains("evicted 1"));
    assert!(cli(&cluster, &["handle", "evict", "--store", "cart", "--prefix", "vip-"]).contains("evicted 149"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        listed(&cluster, &[]).len(),
        1,
        "the expired handle is not listed, the other is"
    );
    assert!(cli(&cluster, &["handle", "evict", "--store", "cart", "--expired"]).contains("evicted 1"));
    assert!(cli(&cluster, &["handle", "evict", "--store", "cart", "--expired"]).contains("evicted 0"));
    assert_eq!(
        plain.get(&kept).await.expect("get"),
        Some(json!("kept")),
        "evicting touched nothing else"
    );
    assert_eq!(carts.len().await.expect("len"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_list_and_evict_requests_are_refused_and_change_nothing() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let plain: ClusterHandleStore<Value> = cluster.client().handle_store("cart").build();
    let id = plain.mint(json!(1), Ttl::Never).await.expect("mint");
    let ch = cluster.client().channel(0).expect("channel");
    let mut c = pb::handles_client::HandlesClient::new(ch);
    let evict = |what: Option<pb::evict_request::What>, limit: u32| pb::EvictRequest {
        namespace: String::new(),
        store: "cart".into(),
        what,
        limit,
    };
    use pb::evict_request::What;
    for (req, why) in [
        (evict(None, 0), "nothing named"),
        (evict(Some(What::Prefix(String::new())), 0), "empty prefix"),
        (evict(Some(What::Expired(false)), 0), "expired false"),
        (evict(Some(What::Id("not an id".into())), 0), "malformed id"),
        (evict(Some(What::Prefix("a/b".into())), 0), "prefix with /"),
        (evict(Some(What::Prefix("x".repeat(500))), 0), "long prefix"),
        (evict(Some(What::Expired(true)), 100_000), "limit"),
    ] {
        let e = c.evict(req).await.expect_err(why);
        assert_eq!(e.code(), Code::InvalidArgument, "{why}: {e:?}");
    }
    let bad_list = [
        pb::HandleListRequest {
            store: "cart".into(),
            limit: 5000,
            ..Default::default()
        },
        pb::HandleListRequest {
            store: "cart".into(),
            page_token: "garbage!".into(),
            ..Default::default()
        },
        pb::HandleListRequest {
            store: String::new(),
            ..Default::default()
        },
    ];
    for req in bad_list {
        let e = c.list(req.clone()).await.expect_err("refused");
        assert_eq!(e.code(), Code::InvalidArgument, "{req:?}: {e:?}");
    }
    assert_eq!(plain.get(&id).await.expect("get"), Some(json!(1)), "nothing changed");
}
