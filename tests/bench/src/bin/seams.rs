//! The MCP seams run: watch fan-out, and the session and event store
//! operations, handlestore beside Redis doing the same job, in one run.
//!
//! target/release/seams \
//!     [--listeners 1,16,64] [--writers 16] [--duration 10s] [--rounds 3] \
//!     [--out target/seams]
//!
//! Fan-out: one stream of writes heard by each number of listeners.
//! - `handlestore`: 3 nodes; writers store state keys under one prefix,
//!   each listener is a `Client::watch` on it.
//! - `redis-pubsub`: PUBLISH to one channel, each listener SUBSCRIBEd
//!   (nothing is kept: a listener that is away misses what was sent).
//! - `redis-streams`: XADD to one stream on Redis with `appendfsync always`
//!   (the durable choice), each listener an XREAD BLOCK loop.
//! - `nats`: three NATS servers, a KV bucket of three replicas with
//!   `sync_interval: always`; writers put keys under one prefix, each
//!   listener a KV watch on it (`--systems ...,nats`).
//!
//! Each write carries the time it was sent; each listener records the
//! delay to its arrival. Per cell: writes/s, delivery latency p50/p99 over
//! every delivery, and deliveries against writes × listeners (a listener
//! stops at an end marker written after the writers stop).
//!
//! Store operations, `--writers` at once, each on its own session or
//! stream: `event_append` (`ClusterEventStore::store_event` / XADD),
//! `session_store` (`ClusterSessionStore::store` / SET EX) and
//! `session_load` (`load` / GET), against Redis with `appendfsync always`.
//!
//! With `--rounds N` every system runs N times, each round on fresh
//! servers and in the other order than the round before; each target's
//! ratio is taken within a round, and the verdict is the median of the
//! rounds' ratios, with every round's beside it (as the bench's).
//!
//! Writes results.json (every cell, with its round, and the targets) and
//! results.md to --out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures::StreamExt;
use handlestore_bench::systems::{Nats, NatsSync, Redis, RedisMode, ensure_installed};
use handlestore_client::rmcp_seams::{ClusterEventStore, ClusterSessionStore};
use handlestore_client::{StateTool, StateValue, StoreOptions, Ttl, WatchOptions, WatchTarget};
use handlestore_tests::TestCluster;
use rmcp::model::{InitializeRequestParams, ServerJsonRpcMessage};
use rmcp::transport::common::server_side_http::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::store::{EventStore, SessionState, SessionStore};
use serde::Serialize;
use serde_json::json;

#[derive(Parser, Debug)]
#[command(about = "Watch fan-out and session/event store operations: handlestore beside Redis")]
struct Args {
    /// Listener counts to measure.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 16, 64])]
    listeners: Vec<usize>,
    /// Concurrent writers.
    #[arg(long, default_value_t = 16)]
    writers: usize,
    /// How long the writers write, per cell.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Systems to run.
    #[arg(long, value_delimiter = ',', default_values_t = ["handlestore".to_string(), "redis-pubsub".to_string(), "redis-streams".to_string(), "nats".to_string()])]
    systems: Vec<String>,
    /// Rounds: each runs every system, in the other order than the last.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Also measure the session and event store operations.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    store_ops: bool,
    #[arg(long, default_value = "target/seams")]
    out: std::path::PathBuf,
}

#[derive(Debug, Clone, Serialize)]
struct Cell {
    /// 1, 2, ... (`--rounds`).
    round: usize,
    system: String,
    /// `fan_out`, or a store operation.
    op: String,
    listeners: usize,
    writers: usize,
    writes: u64,
    writes_per_s: f64,
    deliveries: u64,
    expected: u64,
    p50_us: u64,
    p99_us: u64,
}

/// The moment every timestamp counts from (one process: one clock).
fn micros(base: Instant) -> u64 {
    base.elapsed().as_micros() as u64
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn cell(system: &str, listeners: usize, writers: usize, writes: u64, secs: f64, lat: Vec<Vec<u64>>) -> Cell {
    let mut all: Vec<u64> = lat.into_iter().flatten().collect();
    all.sort_unstable();
    Cell {
        round: 0,
        system: system.into(),
        op: "fan_out".into(),
        listeners,
        writers,
        writes,
        writes_per_s: writes as f64 / secs,
        deliveries: all.len() as u64,
        expected: writes * listeners as u64,
        p50_us: percentile(&all, 0.50),
        p99_us: percentile(&all, 0.99),
    }
}

/// Runs `writers` copies of `write(worker, n)` until `duration` passes:
/// the writes made, the seconds taken and each write's latency (us).
async fn write_for<F, Fut>(writers: usize, duration: Duration, write: F) -> Result<(u64, f64, Vec<u64>)>
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<()>> + Send,
{
    let write = Arc::new(write);
    let start = Instant::now();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let write = write.clone();
            tokio::spawn(async move {
                let mut lat = Vec::new();
                while start.elapsed() < duration {
                    let t = Instant::now();
                    write(w, lat.len() as u64).await?;
                    lat.push(t.elapsed().as_micros() as u64);
                }
                Ok::<Vec<u64>, anyhow::Error>(lat)
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok((all.len() as u64, start.elapsed().as_secs_f64(), all))
}

async fn handlestore(cluster: &TestCluster, a: &Args, listeners: usize, base: Instant) -> Result<Cell> {
    let client = cluster.client();
    let prefix = format!("fan/{listeners}/");
    let mut tasks = Vec::new();
    for _ in 0..listeners {
        let mut watch = client
            .watch(WatchTarget::prefix(&prefix), WatchOptions::default())
            .await?;
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let batch = watch.next().await?;
                for change in batch.changes {
                    match change
                        .value
                        .as_ref()
                        .and_then(StateValue::as_json)
                        .and_then(|v| v.as_u64())
                    {
                        Some(sent) => lat.push(micros(base).saturating_sub(sent)),
                        None => return Ok::<_, anyhow::Error>(lat),
                    }
                }
            }
        }));
    }
    let state = client.state_tool();
    let p = prefix.clone();
    let (writes, secs, _) = write_for(a.writers, a.duration, move |w, n| {
        let (state, key) = (state.clone(), format!("{p}{w}/{n}"));
        async move {
            let opts = StoreOptions {
                ttl: Ttl::After(Duration::from_secs(600)),
                expected_revision: None,
            };
            state.store(&key, json!(micros(base)).into(), opts).await?;
            Ok(())
        }
    })
    .await?;
    let end = StoreOptions::default();
    client
        .state_tool()
        .store(&format!("{prefix}end"), json!("end").into(), end)
        .await?;
    let lat = collect(tasks).await?;
    Ok(cell("handlestore", listeners, a.writers, writes, secs, lat))
}

async fn collect(tasks: Vec<tokio::task::JoinHandle<Result<Vec<u64>>>>) -> Result<Vec<Vec<u64>>> {
    let mut out = Vec::new();
    for t in tasks {
        out.push(
            tokio::time::timeout(Duration::from_secs(120), t)
                .await
                .context("a listener never saw the end")???,
        );
    }
    Ok(out)
}

async fn redis_pubsub(redis: &Redis, a: &Args, listeners: usize, base: Instant) -> Result<Cell> {
    let channel = format!("fan{listeners}");
    let mut tasks = Vec::new();
    for _ in 0..listeners {
        let mut sub = redis::Client::open(redis.url.as_str())?.get_async_pubsub().await?;
        sub.subscribe(&channel).await?;
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut messages = sub.into_on_message();
            while let Some(msg) = messages.next().await {
                let payload: String = msg.get_payload()?;
                match payload.parse::<u64>() {
                    Ok(sent) => lat.push(micros(base).saturating_sub(sent)),
                    Err(_) => return Ok(lat),
                }
            }
            bail!("subscription closed")
        }));
    }
    let conns = connections(redis, a.writers).await?;
    let ch = channel.clone();
    let (writes, secs, _) = write_for(a.writers, a.duration, move |w, _| {
        let (mut conn, ch) = (conns[w].clone(), ch.clone());
        async move {
            redis::cmd("PUBLISH")
                .arg(&ch)
                .arg(micros(base))
                .query_async::<i64>(&mut conn)
                .await?;
            Ok(())
        }
    })
    .await?;
    let mut conn = redis.connection().await?;
    redis::cmd("PUBLISH")
        .arg(&channel)
        .arg("end")
        .query_async::<i64>(&mut conn)
        .await?;
    let lat = collect(tasks).await?;
    Ok(cell("redis-pubsub", listeners, a.writers, writes, secs, lat))
}

async fn connections(redis: &Redis, n: usize) -> Result<Arc<Vec<redis::aio::MultiplexedConnection>>> {
    let mut conns = Vec::new();
    for _ in 0..n {
        conns.push(redis.connection().await?);
    }
    Ok(Arc::new(conns))
}

type StreamReply = Vec<(String, Vec<(String, Vec<(String, String)>)>)>;

async fn redis_streams(redis: &Redis, a: &Args, listeners: usize, base: Instant) -> Result<Cell> {
    let stream = format!("fan{listeners}");
    let mut tasks = Vec::new();
    for _ in 0..listeners {
        let mut conn = redis.connection().await?;
        let s = stream.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut last = "0".to_string();
            loop {
                let reply: Option<StreamReply> = redis::cmd("XREAD")
                    .arg("BLOCK")
                    .arg(1000)
                    .arg("COUNT")
                    .arg(1000)
                    .arg("STREAMS")
                    .arg(&s)
                    .arg(&last)
                    .query_async(&mut conn)
                    .await?;
                for (_, entries) in reply.unwrap_or_default() {
                    for (id, fields) in entries {
                        last = id;
                        match fields.first().map(|(_, v)| v.parse::<u64>()) {
                            Some(Ok(sent)) => lat.push(micros(base).saturating_sub(sent)),
                            _ => return Ok::<_, anyhow::Error>(lat),
                        }
                    }
                }
            }
        }));
    }
    let conns = connections(redis, a.writers).await?;
    let s = stream.clone();
    let (writes, secs, _) = write_for(a.writers, a.duration, move |w, _| {
        let (mut conn, s) = (conns[w].clone(), s.clone());
        async move {
            redis::cmd("XADD")
                .arg(&s)
                .arg("*")
                .arg("t")
                .arg(micros(base))
                .query_async::<String>(&mut conn)
                .await?;
            Ok(())
        }
    })
    .await?;
    let mut conn = redis.connection().await?;
    redis::cmd("XADD")
        .arg(&stream)
        .arg("*")
        .arg("t")
        .arg("end")
        .query_async::<String>(&mut conn)
        .await?;
    let lat = collect(tasks).await?;
    Ok(cell("redis-streams", listeners, a.writers, writes, secs, lat))
}

/// The same fan-out on NATS JetStream KV (three replicas, `sync_interval:
/// always`): writers put keys under one prefix, each listener a KV watch
/// on it (delivered by the stream's push consumer, from new writes on).
async fn nats_watch(nats: &Nats, a: &Args, listeners: usize, base: Instant) -> Result<Cell> {
    let prefix = format!("fan{listeners}");
    let mut tasks = Vec::new();
    for _ in 0..listeners {
        let mut watch = nats.bucket().await?.watch(format!("{prefix}.>")).await?;
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while let Some(entry) = watch.next().await {
                match std::str::from_utf8(&entry?.value)?.parse::<u64>() {
                    Ok(sent) => lat.push(micros(base).saturating_sub(sent)),
                    Err(_) => return Ok(lat),
                }
            }
            bail!("the watch ended")
        }));
    }
    let kv = nats.bucket().await?;
    let p = prefix.clone();
    let (writes, secs, _) = write_for(a.writers, a.duration, move |w, n| {
        let (kv, key) = (kv.clone(), format!("{p}.{w}.{n}"));
        async move {
            kv.put(key, micros(base).to_string().into()).await?;
            Ok(())
        }
    })
    .await?;
    nats.bucket().await?.put(format!("{prefix}.end"), "end".into()).await?;
    let lat = collect(tasks).await?;
    Ok(cell("nats", listeners, a.writers, writes, secs, lat))
}

/// A store operation's cell: its throughput and latency.
fn op_cell(system: &str, op: &str, writers: usize, (writes, secs, mut lat): (u64, f64, Vec<u64>)) -> Cell {
    lat.sort_unstable();
    Cell {
        round: 0,
        system: system.into(),
        op: op.into(),
        listeners: 0,
        writers,
        writes,
        writes_per_s: writes as f64 / secs,
        deliveries: 0,
        expected: 0,
        p50_us: percentile(&lat, 0.50),
        p99_us: percentile(&lat, 0.99),
    }
}

/// What an MCP server's SSE stream carries: a ~256-byte notification.
fn sse_message() -> Result<ServerSseMessage> {
    let msg: ServerJsonRpcMessage = serde_json::from_value(json!({"jsonrpc": "2.0",
        "method": "notifications/message", "params": {"level": "info", "data": "x".repeat(180)}}))?;
    Ok(ServerSseMessage::from_message(msg))
}

fn session_state() -> Result<SessionState> {
    let params: InitializeRequestParams = serde_json::from_value(json!({"protocolVersion": "2025-06-18",
        "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}))?;
    Ok(SessionState::new(params))
}

async fn handlestore_ops(cluster: &TestCluster, a: &Args) -> Result<Vec<Cell>> {
    let client = cluster.client();
    let (events, sessions) = (ClusterEventStore::new(&client), ClusterSessionStore::new(&client));
    let (message, state) = (Arc::new(sse_message()?), Arc::new(session_state()?));
    let (e, m) = (events.clone(), message.clone());
    let appended = write_for(a.writers, a.duration, move |w, _| {
        let (e, m) = (e.clone(), m.clone());
        async move {
            e.store_event(&format!("bench-stream-{w}"), &m)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok(())
        }
    })
    .await?;
    let (ss, st) = (sessions.clone(), state.clone());
    let stored = write_for(a.writers, a.duration, move |w, n| {
        let (ss, st) = (ss.clone(), st.clone());
        async move {
            ss.store(&format!("bench-{w}-{n}"), &st)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok(())
        }
    })
    .await?;
    let ss = sessions.clone();
    let loaded = write_for(a.writers, a.duration, move |w, _| {
        let ss = ss.clone();
        async move {
            let found = ss
                .load(&format!("bench-{w}-0"))
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            found.context("a stored session is found")?;
            Ok(())
        }
    })
    .await?;
    Ok(vec![
        op_cell("handlestore", "event_append", a.writers, appended),
        op_cell("handlestore", "session_store", a.writers, stored),
        op_cell("handlestore", "session_load", a.writers, loaded),
    ])
}

/// The same jobs on Redis: XADD, SET EX, GET.
async fn redis_ops(redis: &Redis, a: &Args) -> Result<Vec<Cell>> {
    let conns = connections(redis, a.writers).await?;
    let payload = Arc::new(serde_json::to_string(&sse_message()?.message)?);
    let (c, p) = (conns.clone(), payload.clone());
    let appended = write_for(a.writers, a.duration, move |w, _| {
        let (mut conn, p) = (c[w].clone(), p.clone());
        async move {
            redis::cmd("XADD")
                .arg(format!("bench-stream-{w}"))
                .arg("*")
                .arg("m")
                .arg(p.as_str())
                .query_async::<String>(&mut conn)
                .await?;
            Ok(())
        }
    })
    .await?;
    let state = Arc::new(serde_json::to_string(&session_state()?)?);
    let c = conns.clone();
    let stored = write_for(a.writers, a.duration, move |w, n| {
        let (mut conn, st) = (c[w].clone(), state.clone());
        async move {
            redis::cmd("SET")
                .arg(format!("bench-{w}-{n}"))
                .arg(st.as_str())
                .arg("EX")
                .arg(3600)
                .query_async::<String>(&mut conn)
                .await?;
            Ok(())
        }
    })
    .await?;
    let c = conns.clone();
    let loaded = write_for(a.writers, a.duration, move |w, _| {
        let mut conn = c[w].clone();
        async move {
            let found: Option<String> = redis::cmd("GET")
                .arg(format!("bench-{w}-0"))
                .query_async(&mut conn)
                .await?;
            found.context("a stored session is found")?;
            Ok(())
        }
    })
    .await?;
    Ok(vec![
        op_cell("redis-fsync", "event_append", a.writers, appended),
        op_cell("redis-fsync", "session_store", a.writers, stored),
        op_cell("redis-fsync", "session_load", a.writers, loaded),
    ])
}

/// A ratio the seams are held to: handlestore's ops/s in one cell over
/// the other system's in the same cell and round.
struct Goal {
    name: &'static str,
    op: &'static str,
    other: &'static str,
    /// None: reported only.
    goal: Option<f64>,
}

const GOALS: [Goal; 5] = [
    Goal {
        name: "fan-out to the most listeners / Redis streams (appendfsync always)",
        op: "fan_out",
        other: "redis-streams",
        goal: Some(1.0),
    },
    Goal {
        name: "fan-out to the most listeners / NATS KV watch (sync_interval always)",
        op: "fan_out",
        other: "nats",
        goal: Some(1.0),
    },
    Goal {
        name: "event_append / XADD (appendfsync always)",
        op: "event_append",
        other: "redis-fsync",
        goal: Some(0.5),
    },
    Goal {
        name: "session_store / SET EX (appendfsync always)",
        op: "session_store",
        other: "redis-fsync",
        goal: None,
    },
    Goal {
        name: "session_load / GET (appendfsync always)",
        op: "session_load",
        other: "redis-fsync",
        goal: Some(0.5),
    },
];

/// A goal's ratio in each round and their median.
#[derive(Debug, Serialize)]
struct Target {
    name: &'static str,
    goal: Option<f64>,
    per_round: Vec<f64>,
    median: Option<f64>,
    met_in_rounds: usize,
}

fn targets(cells: &[Cell], a: &Args) -> Vec<Target> {
    let listeners = a.listeners.iter().copied().max().unwrap_or(0);
    let rate = |round: usize, system: &str, op: &str| {
        cells
            .iter()
            .find(|c| {
                c.round == round && c.system == system && c.op == op && (op != "fan_out" || c.listeners == listeners)
            })
            .map(|c| c.writes_per_s)
    };
    GOALS
        .iter()
        .map(|g| {
            let per_round: Vec<f64> = (1..=a.rounds)
                .filter_map(|r| Some(rate(r, "handlestore", g.op)? / rate(r, g.other, g.op)?))
                .collect();
            Target {
                name: g.name,
                goal: g.goal,
                met_in_rounds: per_round
                    .iter()
                    .filter(|&&x| g.goal.is_some_and(|goal| x >= goal))
                    .count(),
                median: handlestore_bench::median(per_round.clone()),
                per_round,
            }
        })
        .collect()
}

fn markdown(cells: &[Cell], targets: &[Target], a: &Args) -> String {
    let mut md = format!(
        "# Seams run\n\n{} writers for {:?} per cell, {} round(s); delivery latency from the write's send to each listener's receipt.\n\n\
         | target | median | rounds | goal |\n|---|---:|---|---|\n",
        a.writers, a.duration, a.rounds
    );
    for t in targets {
        let rounds: Vec<String> = t.per_round.iter().map(|x| format!("{x:.2}")).collect();
        let goal = t.goal.map_or("reported".to_string(), |g| {
            format!(">= {g} (met in {} of {})", t.met_in_rounds, t.per_round.len())
        });
        let median = t.median.map_or("-".to_string(), |m| format!("{m:.2}"));
        md.push_str(&format!("| {} | {median} | {} | {goal} |\n", t.name, rounds.join(", ")));
    }
    md.push_str(
        "\n| round | system | listeners | writes/s | deliveries / expected | p50 (us) | p99 (us) |\n|---|---|---|---|---|---|---|\n",
    );
    for c in cells.iter().filter(|c| c.op == "fan_out") {
        md.push_str(&format!(
            "| {} | {} | {} | {:.0} | {} / {} | {} | {} |\n",
            c.round, c.system, c.listeners, c.writes_per_s, c.deliveries, c.expected, c.p50_us, c.p99_us
        ));
    }
    md.push_str("\nStore operations (latency per operation):\n\n| round | system | op | ops/s | p50 (us) | p99 (us) |\n|---|---|---|---|---|---|\n");
    for c in cells.iter().filter(|c| c.op != "fan_out") {
        md.push_str(&format!(
            "| {} | {} | {} | {:.0} | {} | {} |\n",
            c.round, c.system, c.op, c.writes_per_s, c.p50_us, c.p99_us
        ));
    }
    md
}

/// Every cell of one system, on servers of its own under `dir`.
async fn run_system(system: &str, a: &Args, dir: &std::path::Path, base: Instant) -> Result<Vec<Cell>> {
    let mut cells = Vec::new();
    match system {
        "handlestore" => {
            let cluster = TestCluster::builder(3).dir_in(dir).start().await?;
            for &n in &a.listeners {
                cells.push(handlestore(&cluster, a, n, base).await?);
                println!("{:?}", cells.last());
            }
            if a.store_ops {
                cells.extend(handlestore_ops(&cluster, a).await?);
            }
        }
        "redis-pubsub" | "redis-streams" => {
            let redis = Redis::start(dir, RedisMode::FsyncAlways).await?;
            for &n in &a.listeners {
                let c = if system == "redis-pubsub" {
                    redis_pubsub(&redis, a, n, base).await?
                } else {
                    redis_streams(&redis, a, n, base).await?
                };
                println!("{c:?}");
                cells.push(c);
            }
            if a.store_ops && system == "redis-streams" {
                cells.extend(redis_ops(&redis, a).await?);
            }
        }
        "nats" => {
            let nats = Nats::start(dir, NatsSync::Always).await?;
            for &n in &a.listeners {
                cells.push(nats_watch(&nats, a, n, base).await?);
                println!("{:?}", cells.last());
            }
        }
        other => bail!("unknown system {other}"),
    }
    Ok(cells)
}

#[derive(Serialize)]
struct Results<'a> {
    targets: &'a [Target],
    cells: &'a [Cell],
}

#[tokio::main]
async fn main() -> Result<()> {
    let a = Args::parse();
    if a.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    if a.systems.iter().any(|s| s.starts_with("redis") || s == "nats") {
        ensure_installed()?;
    }
    let dir = tempfile::Builder::new().prefix("handlestore-fanout-").tempdir()?;
    let base = Instant::now();
    let mut cells = Vec::new();
    for round in 1..=a.rounds {
        let mut order: Vec<&String> = a.systems.iter().collect();
        if round % 2 == 0 {
            order.reverse();
        }
        for system in order {
            let sub = dir.path().join(format!("round-{round}-{system}"));
            std::fs::create_dir_all(&sub)?;
            for mut c in run_system(system, &a, &sub, base).await? {
                c.round = round;
                cells.push(c);
            }
        }
    }
    let targets = targets(&cells, &a);
    std::fs::create_dir_all(&a.out)?;
    let results = Results {
        targets: &targets,
        cells: &cells,
    };
    std::fs::write(a.out.join("results.json"), serde_json::to_string_pretty(&results)?)?;
    let md = markdown(&cells, &targets, &a);
    std::fs::write(a.out.join("results.md"), &md)?;
    println!("{md}");
    Ok(())
}
