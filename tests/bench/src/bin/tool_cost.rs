//! What one tool call of the example cart_server costs, tool by tool: the
//! gRPC calls its replicas made to the nodes (by method and code), the Raft
//! work behind them on the three nodes (ReadIndex rounds, proposals
//! committed, log syncs), and the CPU each process spent (the nodes, the
//! cart_server replicas, this MCP client), per call. The cost accounting
//! behind docs/dev/mcp-path.md.
//!
//! target/release/tool_cost [--calls 300] [--out target/tool-cost]
//!
//! One client makes the calls one after another, round-robin over two
//! replicas as the bench's cart flow does, so each count is exact per call
//! and no call's CPU is shared with another's. Each tool runs `--calls`
//! times on `--calls` carts: create_cart, then add_item once per cart,
//! get_cart, checkout. The same runs against the in-memory cart_server (one
//! replica), whose CPU is the MCP layer's own. Writes results.json and
//! results.md to --out.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use handlestore_bench::cpu::{own_cpu, process_cpu};
use handlestore_tests::TestCluster;
use handlestore_tests::mcp::{CartServer, McpClient, ToolOutcome, call, connect};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Parser, Debug)]
#[command(about = "Round trips and CPU per tool call of the example cart_server")]
struct Args {
    /// Calls of each tool.
    #[arg(long, default_value_t = 300)]
    calls: usize,
    /// Where results.json and results.md go.
    #[arg(long, default_value = "target/tool-cost")]
    out: PathBuf,
}

const TOOLS: [&str; 4] = ["create_cart", "add_item", "get_cart", "checkout"];

/// One tool's cost, per call.
#[derive(Debug, Serialize)]
struct ToolCost {
    store: &'static str,
    tool: &'static str,
    calls: usize,
    p50_us: u64,
    /// gRPC calls the nodes answered, "Service/Method code" → per tool call.
    grpc: BTreeMap<String, f64>,
    /// Every counter of the nodes that moved (summed over the three) → per
    /// tool call.
    node_counters: BTreeMap<String, f64>,
    /// CPU µs per tool call: "nodes", "cart_server", "client".
    cpu_us: BTreeMap<&'static str, f64>,
}

/// The processes whose CPU is counted, and the nodes' metrics addresses.
struct Setup {
    clients: Vec<McpClient>,
    nodes: Vec<u32>,
    carts: Vec<u32>,
    metrics: Vec<String>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.calls > 0, "--calls must be at least 1");
    let dir = tempfile::Builder::new().prefix("handlestore-tool-cost-").tempdir()?;
    let mut costs = Vec::new();
    {
        let cluster = TestCluster::builder(3)
            .metrics_ports(true)
            .dir_in(dir.path())
            .start()
            .await?;
        let a = CartServer::start(&cluster.endpoints(), dir.path()).await?;
        let b = CartServer::start(&cluster.endpoints(), dir.path()).await?;
        let setup = Setup {
            clients: vec![connect(&a.mcp_url()).await?, connect(&b.mcp_url()).await?],
            nodes: (1..=3).filter_map(|id| cluster.node(id).pid()).collect(),
            carts: [a.pid(), b.pid()].into_iter().flatten().collect(),
            metrics: (1..=3).filter_map(|id| cluster.node(id).metrics_addr.clone()).collect(),
        };
        costs.extend(run("handlestore", &setup, args.calls).await?);
    }
    {
        let m = CartServer::start_memory(dir.path()).await?;
        let setup = Setup {
            clients: vec![connect(&m.mcp_url()).await?],
            nodes: Vec::new(),
            carts: m.pid().into_iter().collect(),
            metrics: Vec::new(),
        };
        costs.extend(run("memory", &setup, args.calls).await?);
    }
    std::fs::create_dir_all(&args.out)?;
    let md = table(&costs);
    println!("{md}");
    std::fs::write(args.out.join("results.md"), &md)?;
    let json = json!({ "calls_per_tool": args.calls, "tools": costs });
    std::fs::write(args.out.join("results.json"), serde_json::to_string_pretty(&json)?)?;
    println!("wrote {}", args.out.join("results.json").display());
    Ok(())
}

/// Every tool in turn, each measured on its own.
async fn run(store: &'static str, s: &Setup, calls: usize) -> Result<Vec<ToolCost>> {
    // Warm up: connections, the replicas' first calls.
    let warm: Vec<String> = create(s, 20).await?.0;
    for id in &warm {
        one(s, 0, "add_item", add_args(id, 0)).await?;
    }
    let mut carts = Vec::new();
    let mut out = Vec::new();
    for tool in TOOLS {
        let before = Reading::take(s).await?;
        let started = Instant::now();
        let took = match tool {
            "create_cart" => {
                let (ids, took) = create(s, calls).await?;
                carts = ids;
                took
            }
            _ => each(s, tool, &carts).await?,
        };
        let wall = started.elapsed();
        let after = Reading::take(s).await?;
        out.push(after.cost_since(&before, store, tool, took, wall));
    }
    Ok(out)
}

fn add_args(cart: &str, i: usize) -> Value {
    json!({"cart_id": cart, "sku": format!("sku-{i}"), "quantity": 1, "request_id": format!("r-{cart}-{i}")})
}

async fn create(s: &Setup, n: usize) -> Result<(Vec<String>, Vec<Duration>)> {
    let mut ids = Vec::new();
    let mut took = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        let v = one(s, i, "create_cart", json!({})).await?;
        took.push(t.elapsed());
        let id = v["cart_id"].as_str().context("create_cart answered no cart_id")?;
        ids.push(id.to_string());
    }
    Ok((ids, took))
}

async fn each(s: &Setup, tool: &str, carts: &[String]) -> Result<Vec<Duration>> {
    let mut took = Vec::new();
    for (i, id) in carts.iter().enumerate() {
        let args = match tool {
            "add_item" => add_args(id, 1),
            _ => json!({"cart_id": id}),
        };
        let t = Instant::now();
        one(s, i, tool, args).await?;
        took.push(t.elapsed());
    }
    Ok(took)
}

/// Call `i` of a tool, on the replica whose turn it is.
async fn one(s: &Setup, i: usize, tool: &str, args: Value) -> Result<Value> {
    match call(&s.clients[i % s.clients.len()], tool, args).await {
        ToolOutcome::Ok(v) => Ok(v),
        other => bail!("{tool} failed: {other:?}"),
    }
}

/// The counters and CPU times at one moment.
struct Reading {
    counters: BTreeMap<String, f64>,
    nodes: Duration,
    carts: Duration,
    client: Duration,
}

impl Reading {
    async fn take(s: &Setup) -> Result<Self> {
        let mut counters = BTreeMap::new();
        for addr in &s.metrics {
            for (k, v) in counters_of(&scrape(addr).await?) {
                *counters.entry(k).or_insert(0.0) += v;
            }
        }
        let cpu = |pids: &[u32]| -> Result<Duration> {
            pids.iter()
                .map(|&p| process_cpu(p).with_context(|| format!("CPU of {p}")))
                .sum()
        };
        Ok(Self {
            counters,
            nodes: cpu(&s.nodes)?,
            carts: cpu(&s.carts)?,
            client: own_cpu().context("own CPU")?,
        })
    }

    fn cost_since(
        &self,
        before: &Reading,
        store: &'static str,
        tool: &'static str,
        took: Vec<Duration>,
        wall: Duration,
    ) -> ToolCost {
        let n = took.len().max(1) as f64;
        let mut node_counters = BTreeMap::new();
        let mut grpc = BTreeMap::new();
        for (k, v) in &self.counters {
            let d = v - before.counters.get(k).copied().unwrap_or(0.0);
            if d <= 0.0 {
                continue;
            }
            match grpc_call(k) {
                Some(call) => {
                    grpc.insert(call, d / n);
                }
                None => {
                    node_counters.insert(k.clone(), d / n);
                }
            }
        }
        let us = |a: Duration, b: Duration| a.saturating_sub(b).as_secs_f64() * 1e6 / n;
        let mut cpu_us = BTreeMap::new();
        if !before.nodes.is_zero() || !self.nodes.is_zero() {
            cpu_us.insert("nodes", us(self.nodes, before.nodes));
        }
        cpu_us.insert("cart_server", us(self.carts, before.carts));
        cpu_us.insert("client", us(self.client, before.client));
        let mut sorted = took.clone();
        sorted.sort();
        let p50 = sorted.get(sorted.len() / 2).copied().unwrap_or(wall);
        ToolCost {
            store,
            tool,
            calls: took.len(),
            p50_us: p50.as_micros() as u64,
            grpc,
            node_counters,
            cpu_us,
        }
    }
}

/// `/metrics` of a node, by plain HTTP/1.0.
async fn scrape(addr: &str) -> Result<String> {
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .with_context(|| format!("metrics {addr}"))?;
    tcp.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    let mut body = String::new();
    tcp.read_to_string(&mut body).await?;
    let (head, text) = body.split_once("\r\n\r\n").context("no HTTP header end")?;
    anyhow::ensure!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{addr}: {head}"
    );
    Ok(text.to_string())
}

/// The counters of a text exposition: `name{labels}` → value, for
/// counters (`_total`) and histogram counts (`_count`).
fn counters_of(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            let name = k.split('{').next()?;
            (name.ends_with("_total") || name.ends_with("_count")).then_some(())?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

/// "Handles/Get OK" for a `grpc_server_handled_total` sample.
fn grpc_call(key: &str) -> Option<String> {
    let labels = key.strip_prefix("grpc_server_handled_total{")?.strip_suffix('}')?;
    let label = |name: &str| {
        labels.split(',').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == name).then(|| v.trim_matches('"').to_string())
        })
    };
    let service = label("grpc_service")?;
    let service = service.rsplit('.').next().unwrap_or(&service).to_string();
    Some(format!("{service}/{} {}", label("grpc_method")?, label("grpc_code")?))
}

/// The table of docs/dev/mcp-path.md: one row per store and tool.
fn table(costs: &[ToolCost]) -> String {
    let mut md = String::from(
        "| store | tool | p50 ms | gRPC calls to the nodes | ReadIndex rounds | proposals committed | log syncs (3 nodes) | CPU µs: nodes | cart_server | client |\n\
         |---|---|---:|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let counter = |c: &ToolCost, prefix: &str| -> f64 {
        c.node_counters
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .fold(0.0, |sum, (_, v)| sum + v)
    };
    for c in costs {
        let grpc: Vec<String> = c.grpc.iter().map(|(k, v)| format!("{k} {v:.2}")).collect();
        let cpu = |k: &str| c.cpu_us.get(k).map_or("-".to_string(), |v| format!("{v:.0}"));
        md.push_str(&format!(
            "| {} | {} | {:.1} | {} | {:.2} | {:.2} | {:.2} | {} | {} | {} |\n",
            c.store,
            c.tool,
            c.p50_us as f64 / 1000.0,
            if grpc.is_empty() {
                "-".to_string()
            } else {
                grpc.join(", ")
            },
            counter(c, "handlestore_server_read_index_duration_seconds_count"),
            counter(c, "handlestore_server_proposals_committed"),
            counter(c, "handlestore_disk_log_fsync_duration_seconds_count"),
            cpu("nodes"),
            cpu("cart_server"),
            cpu("client"),
        ));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_grpc_calls_are_read_from_an_exposition() {
        let text = "# HELP x\n\
            grpc_server_handled_total{grpc_service=\"handlestore.v1.Handles\",grpc_method=\"Get\",grpc_code=\"OK\"} 7\n\
            handlestore_disk_log_fsync_duration_seconds_count 3\n\
            handlestore_disk_log_fsync_duration_seconds_sum 0.5\n\
            handlestore_disk_free_bytes 100\n";
        let c = counters_of(text);
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(grpc_call(&c[0].0).as_deref(), Some("Handles/Get OK"));
        assert_eq!(c[0].1, 7.0);
        assert_eq!(grpc_call(&c[1].0), None);
    }
}
