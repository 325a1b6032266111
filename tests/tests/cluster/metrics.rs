//! `/metrics`: a scrape of a secured cluster's leader serves every metric
//! docs/metrics.md lists, with samples, and no metric it does not list;
//! it needs no token and shows no key, value, handle or token written to
//! the cluster, and promtool reads it. The client port serves `/metrics`
//! too. The alert rules of deploy/prometheus load, and fire as their tests
//! say.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use handlestore_client::auth::NamespacePolicy;
use handlestore_client::{HandleStore, StateTool, StateValue, StoreOptions, Ttl, WatchOptions, WatchTarget};
use handlestore_tests::TestCluster;

const SECRET_VALUE: &str = "value-not-for-metrics-7c1e";
const SECRET_KEY: &str = "key-not-for-metrics-9a2f";

/// The metrics docs/metrics.md lists, with their types.
fn documented() -> BTreeMap<String, String> {
    let doc = std::fs::read_to_string(handlestore_tests::repo_root().join("docs/metrics.md")).expect("docs/metrics.md");
    let section = doc
        .split("## Every metric")
        .nth(1)
        .expect("an \"Every metric\" section");
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_string(), cells[2].to_string())
        })
        .collect()
}

/// The metric families a scrape declares (`# TYPE name type`).
fn served(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let mut parts = l.split_whitespace();
            (
                parts.next().unwrap_or_default().to_string(),
                parts.next().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Whether the scrape has a sample of `name` (a histogram's count).
fn has_sample(text: &str, name: &str, kind: &str) -> bool {
    let sample = if kind == "histogram" {
        format!("{name}_count")
    } else {
        name.to_string()
    };
    text.lines()
        .any(|l| l.starts_with(&format!("{sample} ")) || l.starts_with(&format!("{sample}{{")))
}

async fn scrape(addr: &str) -> (String, String) {
    let resp = reqwest::get(format!("http://{addr}/metrics")).await.expect("scrape");
    assert_eq!(resp.status(), 200, "{addr}");
    let kind = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (kind, resp.text().await.expect("body"))
}

/// Writes what makes every metric have a sample: a namespace with
/// quotas, a handle and a state key (secret-looking), a watch that gets
/// an event, a linearizable read.
async fn exercise(cluster: &TestCluster) -> String {
    let client = cluster.client();
    client
        .namespace_set(NamespacePolicy {
            name: "metered".into(),
            max_entries: 100,
            max_bytes: 1 << 20,
            ..Default::default()
        })
        .await
        .expect("policy");
    let ns = client.with_namespace("metered").expect("namespace");
    let mut watch = ns
        .watch(WatchTarget::prefix(""), WatchOptions::default())
        .await
        .expect("watch");
    let kv = ns.state_tool();
    kv.store(
        SECRET_KEY,
        StateValue::Bytes(SECRET_VALUE.into()),
        StoreOptions::default(),
    )
    .await
    .expect("store");
    let carts = ns.handle_store::<String>("cart").build();
    let id = carts.mint(SECRET_VALUE.to_string(), Ttl::Never).await.expect("mint");
    assert_eq!(carts.get(&id).await.expect("get").as_deref(), Some(SECRET_VALUE));
    tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("an event within 10 s")
        .expect("event");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_serves_every_documented_metric_and_no_secret() {
    let cluster = TestCluster::builder(3)
        .secure(true)
        .metrics_ports(true)
        .start()
        .await
        .expect("cluster");
    let handle = exercise(&cluster).await;
    // Clock probes (every 0.5 s) measure each peer.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let leader = cluster.wait_leader(Duration::from_secs(20)).await.expect("leader");
    let addr = cluster.node(leader).metrics_addr.clone().expect("metrics port");
    let (content_type, text) = scrape(&addr).await;
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");

    let documented = documented();
    let served = served(&text);
    let undocumented: Vec<_> = served.keys().filter(|n| !documented.contains_key(*n)).collect();
    let missing: Vec<_> = documented.keys().filter(|n| !served.contains_key(*n)).collect();
    assert!(
        undocumented.is_empty(),
        "served, not in docs/metrics.md: {undocumented:?}"
    );
    assert!(
        missing.is_empty(),
        "in docs/metrics.md, not served: {missing:?}\n{text}"
    );
    for (name, kind) in &documented {
        assert_eq!(&served[name], kind, "{name}'s type");
        assert!(has_sample(&text, name, kind), "no sample of {name}:\n{text}");
    }
    assert!(text.contains("handlestore_server_is_leader 1"), "{text}");
    assert!(text.contains("namespace=\"metered\""), "{text}");
    promtool_accepts(&text);

    let token = cluster.credentials().token.expect("root's token");
    for secret in [SECRET_VALUE, SECRET_KEY, &handle, &token] {
        assert!(!text.contains(secret), "the scrape shows {secret:?}");
    }
    // Followers serve theirs too, without a token.
    let followers: BTreeSet<u64> = (1..=3).filter(|id| *id != leader).collect();
    for id in followers {
        let addr = cluster.node(id).metrics_addr.clone().expect("metrics port");
        let (_, text) = scrape(&addr).await;
        assert!(text.contains("handlestore_server_is_leader 0"), "node {id}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_port_serves_metrics_and_counts_its_calls() {
    let cluster = TestCluster::start(1).await.expect("cluster");
    let carts = cluster.client().handle_store::<String>("cart").build();
    carts.mint("x".into(), Ttl::Never).await.expect("mint");
    let addr = cluster.node(1).addr.clone();
    let (_, text) = scrape(&addr).await;
    assert!(text.contains("handlestore_server_is_leader 1"), "{text}");
    // The client carries writes in the Writes service's Submit calls.
    let mints = text
        .lines()
        .find(|l| {
            l.starts_with("grpc_server_handled_total{")
                && l.contains("grpc_service=\"handlestore.v1.Writes\"")
                && l.contains("grpc_code=\"OK\"")
        })
        .unwrap_or_else(|| panic!("no count of the write's call:\n{text}"));
    let count: f64 = mints.rsplit(' ').next().unwrap_or_default().parse().expect("a number");
    assert!(count >= 1.0, "{mints}");
}

/// promtool, if this machine has it (tests/ensure-test-deps.sh installs
/// Debian's prometheus package where it can); None after saying why.
fn promtool() -> Option<std::process::Command> {
    let found = std::process::Command::new("promtool").arg("--version").output();
    match found {
        Ok(out) if out.status.success() => Some(std::process::Command::new("promtool")),
        _ => {
            eprintln!("skipping the promtool checks: no promtool (Debian's prometheus package)");
            None
        }
    }
}

/// `promtool check metrics`: the scrape parses as Prometheus parses it and
/// passes its naming lint.
fn promtool_accepts(text: &str) {
    use std::io::Write as _;
    let Some(mut cmd) = promtool() else { return };
    let mut child = cmd
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write the scrape");
    let out = child.wait_with_output().expect("promtool ran");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_alert_rules_load_and_fire_when_their_tests_say() {
    let dir = handlestore_tests::repo_root().join("deploy/prometheus");
    for args in [["check", "rules", "alerts.yml"], ["test", "rules", "alerts_test.yml"]] {
        let Some(mut cmd) = promtool() else { return };
        let out = cmd.args(args).current_dir(&dir).output().expect("promtool");
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every metric name in `text` (handlestore's and the gRPC ones).
fn metric_names(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("handlestore_") || w.starts_with("grpc_server_"))
        .map(String::from)
        .collect()
}

#[test]
fn the_alerts_and_the_dashboard_use_only_documented_metrics() {
    let documented = documented();
    let known = |name: &str| {
        documented.contains_key(name)
            || ["_bucket", "_count", "_sum"].iter().any(|suffix| {
                name.strip_suffix(suffix)
                    .is_some_and(|base| documented.get(base).is_some_and(|kind| kind == "histogram"))
            })
    };
    for file in ["deploy/prometheus/alerts.yml", "deploy/grafana/handlestore.json"] {
        let text = std::fs::read_to_string(handlestore_tests::repo_root().join(file)).expect(file);
        let names = metric_names(&text);
        assert!(!names.is_empty(), "{file} names no metric");
        let unknown: Vec<_> = names.iter().filter(|n| !known(n)).collect();
        assert!(
            unknown.is_empty(),
            "{file} uses metrics docs/metrics.md does not list: {unknown:?}"
        );
    }
}
