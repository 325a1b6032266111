//! `--json` on the commands scripts read: `status`, `member list`,
//! `namespace list` and `kv list` print one JSON document with the fields
//! docs/operations.md ("JSON output") lists.

use handlestore_client::auth::NamespacePolicy;
use handlestore_client::{StateTool, StateValue, StoreOptions};
use handlestore_tests::TestCluster;
use serde_json::{Value, json};

fn cli_json(cluster: &TestCluster, args: &[&str]) -> Value {
    let out = cluster.cli(&[args, &["--json"]].concat());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}): {stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_members_namespaces_and_keys_print_as_json() {
    let cluster = TestCluster::start(3).await.expect("cluster");
    let leader = cluster
        .wait_leader(std::time::Duration::from_secs(20))
        .await
        .expect("leader");
    let client = cluster.client();
    client
        .namespace_set(NamespacePolicy {
            name: "default".into(),
            max_entries: 100,
            ..Default::default()
        })
        .await
        .expect("policy");
    let kv = client.state_tool();
    kv.store("j/a", StateValue::Json(json!({"n": 1})), StoreOptions::default())
        .await
        .expect("json");
    kv.store("j/b", StateValue::Bytes(vec![0, 255]), StoreOptions::default())
        .await
        .expect("bytes");

    let status = cli_json(&cluster, &["status"]);
    assert_eq!(status["leader"]["id"], json!(leader), "{status:#}");
    let nodes = status["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 3, "{status:#}");
    for n in nodes {
        assert!(
            n["state"].is_string() && n["applied_index"].is_u64() && n["clock"]["trusted"].is_boolean(),
            "{n:#}"
        );
        assert!(n["memory"]["rss"].is_u64(), "{n:#}");
        assert!(n["disk"]["free_bytes"].is_u64(), "{n:#}");
        assert_eq!(
            (&n["disk"]["full"], &n["disk"]["size_unknown"]),
            (&json!(false), &json!(false)),
            "{n:#}"
        );
    }
    assert_eq!(status["members"].as_array().map(Vec::len), Some(3));

    let members = cli_json(&cluster, &["member", "list"]);
    let voters = members
        .as_array()
        .expect("array")
        .iter()
        .filter(|m| m["voter"] == json!(true))
        .count();
    assert_eq!(voters, 3, "{members:#}");

    let namespaces = cli_json(&cluster, &["namespace", "list"]);
    let default = namespaces
        .as_array()
        .expect("array")
        .iter()
        .find(|n| n["name"] == json!("default"))
        .unwrap_or_else(|| panic!("{namespaces:#}"));
    assert_eq!(default["max_entries"], json!(100));
    assert_eq!(default["entries"], json!(2));

    let keys = cli_json(&cluster, &["kv", "list", "--prefix", "j/", "--values"]);
    assert_eq!(
        keys,
        json!([{"key": "j/a", "value": {"n": 1}}, {"key": "j/b", "bytes_base64": "AP8="}])
    );
    let bare = cli_json(&cluster, &["kv", "list", "--prefix", "j/"]);
    assert_eq!(bare, json!([{"key": "j/a"}, {"key": "j/b"}]), "no values unless asked");
}
