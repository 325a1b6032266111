//! The cluster as an operator first meets it: `deploy/docker-compose.yml`
//! with three node containers and two cart_server containers, driven from
//! the host. Skipped, with the reason printed, where no Docker engine
//! answers.
//!
//! One compose project goes through, in order: up and healthy with no init
//! step, TLS and auth on (the CA and root's token copied out of the
//! `secrets` volume); a cart flow from the host; `docker kill` of the leader mid-flow;
//! a real partition (`docker network disconnect`); `down` then `up` keeping
//! all data; a rolling `restart` of every node under a steady writer.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use handlestore_client::{Client, HandleStore, Ttl};
use handlestore_proto::v1 as pb;
use handlestore_tests::cluster::handlestore_bin;
use handlestore_tests::compose::{self, Compose};
use handlestore_tests::creds::Credentials;
use handlestore_tests::mcp::{McpClient, RoundRobin, ToolOutcome, call, connect};
use serde_json::{Value, json};

const NODES: [&str; 3] = ["node1", "node2", "node3"];
const IMAGE: &str = "handlestore:test";
const HEALTHY_WITHIN: Duration = Duration::from_secs(180);

#[tokio::test(flavor = "multi_thread")]
async fn docker_compose_cluster() {
    if let Some(why) = compose::unavailable() {
        eprintln!("skipping the Docker Compose tests: {why}");
        return;
    }
    let _alone = crate::WHOLE_MACHINE.lock().await;
    compose::build_image(IMAGE).await.expect("building the image");
    let c = Compose::new(IMAGE).expect("compose");
    if let Err(e) = scenario(&c).await {
        panic!("{e:#}\n--- compose logs ---\n{}", c.logs().await);
    }
}

async fn scenario(c: &Compose) -> Result<()> {
    // Up: a healthy cluster with no init step, TLS and auth on.
    c.up().await?;
    c.wait_healthy(&NODES, HEALTHY_WITHIN).await.context("after up")?;
    let creds = c.credentials().await.context("the CA and root's token")?;
    secured(c, &creds).await?;
    metrics(c).await.context("the metrics profile")?;

    // A cart flow from the host, through both cart replicas.
    let front = RoundRobin::start(c.cart_urls()).await?;
    let mut shop = Shop::connect(front.url()).await?;
    let first = shop.create_cart().await?;
    for i in 0..3 {
        shop.add_item(&first, &format!("first-{i}")).await?;
    }
    let order = shop.checkout(&first).await?;
    shop.expect_lines(&first, 3).await?;

    // `docker kill` the leader mid-flow: the flow completes, nothing lost.
    let leader = leader(c, &creds, &[1, 2, 3]).await?;
    let killed = format!("node{leader}");
    let cart = shop.create_cart().await?;
    for i in 0..6 {
        if i == 2 {
            c.docker(&killed, &["kill", "{}"]).await?;
        }
        shop.add_item(&cart, &format!("item-{i}")).await?;
    }
    shop.checkout(&cart).await?;
    shop.expect_lines(&cart, 6).await.context("after killing the leader")?;
    c.docker(&killed, &["start", "{}"]).await?;
    c.wait_healthy(&NODES, HEALTHY_WITHIN)
        .await
        .context("after restarting the killed leader")?;
    // The restarted node caught up: it serves the cart itself.
    let on_killed = handle_on(c, &killed, "default", &["get", "--store", "cart", &cart]).await?;
    let value = String::from_utf8_lossy(&on_killed.stdout);
    if !on_killed.status.success() || !value.contains("item-5") {
        bail!(
            "{killed} after restart: {value} {}",
            String::from_utf8_lossy(&on_killed.stderr)
        );
    }

    partition(c, &creds).await?;

    // `down` then `up`: every byte kept in the named volumes.
    c.run(&["down", "--timeout", "30"]).await?;
    c.up().await?;
    c.wait_healthy(&NODES, HEALTHY_WITHIN)
        .await
        .context("after down and up")?;
    let mut shop = Shop::connect(front.url()).await?;
    let kept = shop.expect_lines(&first, 3).await.context("after down and up")?;
    if kept["cart"]["order_id"] != json!(order) {
        bail!("the first cart's order changed across down/up: {kept}");
    }
    shop.expect_lines(&cart, 6).await.context("after down and up")?;

    // The one-shot services ran again and kept the CA and root's token.
    let again = c.credentials().await?;
    if again.token != creds.token {
        bail!("root's token changed across down and up");
    }
    rolling_restart(c, &creds).await
}

/// The `metrics` profile: Prometheus scrapes the three nodes, sees one
/// leader, and has loaded the alert rules; then it is removed again.
async fn metrics(c: &Compose) -> Result<()> {
    compose::build_prometheus_image().await?;
    c.run(&["--profile", "metrics", "up", "--detach", "--no-build", "prometheus"])
        .await?;
    let api = format!("http://127.0.0.1:{}/api/v1", c.prometheus_port);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let leaders = prometheus_query(&api, "sum(handlestore_server_is_leader)").await;
        let known = prometheus_query(&api, "count(handlestore_server_has_leader == 1)").await;
        match (leaders, known) {
            (Ok(1.0), Ok(3.0)) => break,
            seen if tokio::time::Instant::now() > deadline => {
                bail!("Prometheus did not see 3 nodes and one leader within 90 s: {seen:?}")
            }
            _ => tokio::time::sleep(Duration::from_secs(2)).await,
        }
    }
    let rules = reqwest::get(format!("{api}/rules")).await?.text().await?;
    if !rules.contains("HandlestoreNoLeader") {
        bail!("Prometheus has not loaded deploy/prometheus/alerts.yml: {rules}");
    }
    c.run(&["--profile", "metrics", "rm", "--stop", "--force", "prometheus"])
        .await
        .map(drop)
}

/// One number from a Prometheus instant query.
async fn prometheus_query(api: &str, query: &str) -> Result<f64> {
    let url = reqwest::Url::parse_with_params(&format!("{api}/query"), [("query", query)])?;
    let text = reqwest::get(url).await?.text().await?;
    let body: Value = serde_json::from_str(&text).with_context(|| format!("{query}: {text}"))?;
    let value = body["data"]["result"][0]["value"][1]
        .as_str()
        .with_context(|| format!("{query}: {body}"))?;
    Ok(value.parse()?)
}

/// Every node answers /healthz and /readyz over HTTPS with the cluster's
/// CA; a call with no token is refused as unauthenticated, one in the
/// clear fails.
async fn secured(c: &Compose, creds: &Credentials) -> Result<()> {
    let (_, ca) = creds.tls.as_ref().context("TLS")?;
    for n in 1..=3 {
        for ready in [false, true] {
            let mut cmd = tokio::process::Command::new(handlestore_bin());
            cmd.args(["health", "--url", &c.endpoint(n), "--cacert"]).arg(ca);
            let out = cmd.args(ready.then_some("--ready")).output().await?;
            if !out.status.success() {
                bail!(
                    "node{n} health (ready: {ready}): {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    let anonymous = Credentials {
        tls: creds.tls.clone(),
        token: None,
    };
    let store = anonymous
        .builder(c.endpoints())
        .deadline(Duration::from_secs(10))
        .build()?
        .handle_store::<Value>("docker")
        .build();
    let id = handlestore_client::id::new_handle_id("");
    match store.get(&id).await {
        Err(handlestore_client::Error::Unauthenticated(_)) => {}
        other => bail!("a call without a token answered {other:?}"),
    }
    let clear = Client::builder([c.endpoint(1).replacen("https", "http", 1)])
        .deadline(Duration::from_secs(5))
        .build()?
        .handle_store::<Value>("docker")
        .build();
    if let Ok(v) = clear.get(&id).await {
        bail!("a plaintext call to a TLS port answered {v:?}");
    }
    Ok(())
}

/// Isolates one node (the leader, the hardest case) from the others.
async fn partition(c: &Compose, creds: &Credentials) -> Result<()> {
    let isolated = leader(c, creds, &[1, 2, 3]).await?;
    let name = format!("node{isolated}");
    let majority: Vec<u64> = (1..=3).filter(|n| *n != isolated).collect();
    let client = creds
        .builder(majority.iter().map(|n| c.endpoint(*n as usize)))
        .namespace("docker")
        .deadline(Duration::from_secs(30))
        .build()?;
    let store = client.handle_store::<Value>("partition").build();
    let before = handlestore_client::id::new_handle_id("");
    store.put(&before, json!("before"), Ttl::Never).await?;

    c.disconnect(&name).await?;
    // The majority elects a leader and keeps taking writes.
    let during = handlestore_client::id::new_handle_id("");
    store
        .put(&during, json!("majority"), Ttl::Never)
        .await
        .context("a write to the majority during the partition")?;
    store
        .put(&before, json!("after"), Ttl::Never)
        .await
        .context("an overwrite on the majority during the partition")?;

    // The isolated node serves no linearizable read and takes no write.
    let read = handle_on(c, &name, "docker", &["get", "--store", "partition", &before]).await?;
    let why = String::from_utf8_lossy(&read.stderr).to_lowercase();
    if read.status.code() != Some(2) || !(why.contains("unavailable") || why.contains("quorum")) {
        bail!(
            "isolated {name} answered a linearizable read ({}): {}{}",
            read.status,
            String::from_utf8_lossy(&read.stdout),
            String::from_utf8_lossy(&read.stderr)
        );
    }
    let stray = handlestore_client::id::new_handle_id("");
    let write = handle_on(
        c,
        &name,
        "docker",
        &["put", "--store", "partition", &stray, "--value", "\"isolated\""],
    )
    .await?;
    let why = String::from_utf8_lossy(&write.stderr).to_lowercase();
    if write.status.success() || !(why.contains("unavailable") || why.contains("quorum")) {
        bail!(
            "isolated {name} did not refuse a write as unavailable ({}): {why}",
            write.status
        );
    }
    eprintln!("isolated {name} refused: {}", why.trim());
    let ready = c.exec_handlestore(&name, &["health", "--ready"]).await?;
    if ready.status.success() || !String::from_utf8_lossy(&ready.stderr).contains("503") {
        bail!(
            "isolated {name} says it is ready: {}",
            String::from_utf8_lossy(&ready.stdout)
        );
    }

    // Reconnected, it catches up and serves what the majority wrote.
    c.reconnect(&name).await?;
    let deadline = std::time::Instant::now() + HEALTHY_WITHIN;
    loop {
        let out = handle_on(c, &name, "docker", &["get", "--store", "partition", &during]).await?;
        if out.status.success() && String::from_utf8_lossy(&out.stdout).contains("majority") {
            break;
        }
        if std::time::Instant::now() > deadline {
            bail!(
                "{name} did not catch up after reconnecting: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let overwritten = handle_on(c, &name, "docker", &["get", "--store", "partition", &before]).await?;
    if !String::from_utf8_lossy(&overwritten.stdout).contains("after") {
        bail!(
            "{name} after reconnecting: {before} is {:?}",
            String::from_utf8_lossy(&overwritten.stdout)
        );
    }
    // The write it refused left nothing behind.
    if let Some(v) = store.get(&stray).await? {
        bail!("the isolated node's refused write exists: {v}");
    }
    c.wait_healthy(&NODES, HEALTHY_WITHIN)
        .await
        .context("after reconnecting")
}

/// Restarts each node in turn while a writer keeps writing: every write
/// succeeds (within the client's retries), none is lost.
async fn rolling_restart(c: &Compose, creds: &Credentials) -> Result<()> {
    let client = creds
        .builder(c.endpoints())
        .namespace("docker")
        .deadline(Duration::from_secs(30))
        .build()?;
    let store = Arc::new(client.handle_store::<Value>("rolling").build());
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            let mut written = Vec::new();
            let mut failed = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let id = handlestore_client::id::new_handle_id("");
                match store.put(&id, json!(written.len()), Ttl::Never).await {
                    Ok(_) => written.push(id),
                    Err(e) => failed.push(e.to_string()),
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (written, failed)
        })
    };
    for node in NODES {
        let before = c.health(node).await?;
        c.run(&["restart", "--timeout", "30", node]).await?;
        c.wait_healthy(&NODES, HEALTHY_WITHIN)
            .await
            .with_context(|| format!("after restarting {node} (was {before})"))?;
    }
    stop.store(true, Ordering::Relaxed);
    let (written, failed) = writer.await?;
    if !failed.is_empty() {
        bail!(
            "{} of {} writes failed during the rolling restart: {:?}",
            failed.len(),
            failed.len() + written.len(),
            &failed[..failed.len().min(5)]
        );
    }
    if written.is_empty() {
        bail!("no write completed during the rolling restart");
    }
    let mut missing = BTreeSet::new();
    for id in &written {
        if store.get(id).await?.is_none() {
            missing.insert(id.clone());
        }
    }
    if !missing.is_empty() {
        bail!("{} acknowledged writes lost: {missing:?}", missing.len());
    }
    Ok(())
}

/// Runs `handlestore handle ARGS` inside `node`'s container against that
/// node only (so it works while the node is cut off from the network), as
/// root (the container's environment names the CA and root's token file).
async fn handle_on(c: &Compose, node: &str, namespace: &str, args: &[&str]) -> Result<std::process::Output> {
    let mut full = vec![
        "handle",
        "--endpoints",
        "https://127.0.0.1:7401",
        "--namespace",
        namespace,
        "--timeout",
        "5s",
    ];
    full.extend_from_slice(args);
    c.exec_handlestore(node, &full).await
}

/// The leader among `nodes`, as the nodes themselves report it.
async fn leader(c: &Compose, creds: &Credentials, nodes: &[u64]) -> Result<u64> {
    let deadline = std::time::Instant::now() + HEALTHY_WITHIN;
    loop {
        for n in nodes {
            let client = creds.builder([c.endpoint(*n as usize)]).build()?;
            let mut admin = pb::admin_client::AdminClient::new(client.channel(0).context("a channel")?);
            if let Ok(s) = admin.status(pb::StatusRequest {}).await {
                let s = s.into_inner();
                if s.state == "leader" {
                    return Ok(s.node_id);
                }
            }
        }
        if std::time::Instant::now() > deadline {
            bail!("no leader among {nodes:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An MCP client doing cart flows, retrying a call whose outcome is
/// unknown (the store was briefly unavailable, or the connection dropped)
/// with the same request id, as an agent would.
struct Shop {
    url: String,
    mcp: McpClient,
}

impl Shop {
    async fn connect(url: String) -> Result<Self> {
        let mcp = connect(&url).await?;
        Ok(Self { url, mcp })
    }

    async fn call(&mut self, tool: &str, args: Value) -> Result<Value> {
        let mut last = String::new();
        for _ in 0..60 {
            match call(&self.mcp, tool, args.clone()).await {
                ToolOutcome::Ok(v) => return Ok(v),
                ToolOutcome::ToolError(m) if !m.contains("unavailable") => bail!("{tool}: {m}"),
                ToolOutcome::ToolError(m) => last = m,
                ToolOutcome::Failed(m) => {
                    last = m;
                    if let Ok(mcp) = connect(&self.url).await {
                        self.mcp = mcp;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        bail!("{tool} {args}: still failing: {last}")
    }

    async fn create_cart(&mut self) -> Result<String> {
        let v = self.call("create_cart", json!({})).await?;
        v["cart_id"]
            .as_str()
            .map(str::to_string)
            .with_context(|| format!("create_cart answered {v}"))
    }

    async fn add_item(&mut self, cart: &str, sku: &str) -> Result<()> {
        let args = json!({"cart_id": cart, "sku": sku, "quantity": 1, "request_id": format!("req-{sku}")});
        self.call("add_item", args).await.map(drop)
    }

    async fn checkout(&mut self, cart: &str) -> Result<String> {
        let v = self.call("checkout", json!({"cart_id": cart})).await?;
        v["order_id"]
            .as_str()
            .map(str::to_string)
            .with_context(|| format!("checkout answered {v}"))
    }

    /// The cart holds exactly `n` lines, each sku once.
    async fn expect_lines(&mut self, cart: &str, n: usize) -> Result<Value> {
        let v = self.call("get_cart", json!({"cart_id": cart})).await?;
        let lines = v["cart"]["lines"].as_array().cloned().unwrap_or_default();
        let skus: BTreeSet<String> = lines
            .iter()
            .filter_map(|l| l["sku"].as_str().map(str::to_string))
            .collect();
        if lines.len() != n || skus.len() != n {
            bail!("cart {cart}: expected {n} distinct lines, got {v}");
        }
        Ok(v)
    }
}
