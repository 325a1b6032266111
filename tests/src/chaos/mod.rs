//! The chaos suite, modeled on etcd's tests/robustness: real nodes, two
//! stateless cart servers behind a round-robin front, MCP clients running
//! cart flows plus direct handle and state-tool traffic, faults injected at
//! random points, a recorded history, and checkers over it.

pub mod checker;
pub mod expiry;
pub mod faults;
pub mod history;
pub mod linearizability;
pub mod workload;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures::StreamExt;
use handlestore_client::{Client, ClusterHandleStore, HandleStore, StateTool, StateValue, StoreOptions, Ttl};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::{Value, json};

use self::checker::{Checks, FinalState};
use self::faults::{FaultEvent, FaultKind};
use self::history::{History, Outcome};
use crate::cluster::TestCluster;
use crate::mcp::{CartServer, RoundRobin, ToolOutcome, call, connect};
use crate::netns::NetNs;

#[derive(Debug, Clone)]
pub struct ChaosConfig {
    pub seed: u64,
    /// How long faults are injected (traffic runs a little longer).
    pub duration: Duration,
    pub nodes: usize,
    pub cart_clients: usize,
    pub register_clients: usize,
    pub faults: Vec<FaultKind>,
    /// Writes must succeed again within this after a fault ends.
    pub recovery_bound: Duration,
    /// The control experiment: one cart server keeping carts in memory,
    /// restarted mid-flow (it loses data; the checkers must say so).
    pub lossy: bool,
}

impl ChaosConfig {
    pub fn new(seed: u64, duration: Duration, nodes: usize) -> Self {
        Self {
            seed,
            duration,
            nodes,
            cart_clients: 6,
            register_clients: 4,
            faults: FaultKind::ALL.to_vec(),
            recovery_bound: Duration::from_secs(30),
            lossy: false,
        }
    }
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct OpCounts {
    pub attempted: usize,
    pub acknowledged: usize,
    pub failed: usize,
    pub unknown: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Recovery {
    pub count: usize,
    pub p50_ms: u64,
    pub max_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub seed: u64,
    pub duration_s: f64,
    pub nodes: usize,
    pub lossy: bool,
    /// Why network faults were skipped, if they were.
    pub skipped: Vec<String>,
    pub ops: OpCounts,
    pub ops_by_kind: BTreeMap<String, OpCounts>,
    pub faults: Vec<FaultEvent>,
    pub recovery: BTreeMap<String, Recovery>,
    /// Faults after which writes did not resume within the bound.
    pub slow_recoveries: Vec<String>,
    pub checks: Checks,
    pub expiry: expiry::ExpiryChecks,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.checks.passed() && self.slow_recoveries.is_empty() && self.expiry.violations.is_empty()
    }

    /// A human summary; with the details of every violation.
    pub fn summary(&self) -> String {
        let c = &self.checks;
        let mut s = format!(
            "chaos run: seed {} | {} nodes | {:.0}s{}\n",
            self.seed,
            self.nodes,
            self.duration_s,
            if self.lossy {
                " | LOSSY CONTROL (one in-memory cart server)"
            } else {
                ""
            }
        );
        s += &format!(
            "operations: {} attempted, {} acknowledged, {} failed, {} unknown\n",
            self.ops.attempted, self.ops.acknowledged, self.ops.failed, self.ops.unknown
        );
        for (k, o) in &self.ops_by_kind {
            s += &format!(
                "  {k:<12} {:>6} attempted {:>6} ok {:>5} failed {:>5} unknown\n",
                o.attempted, o.acknowledged, o.failed, o.unknown
            );
        }
        s += &format!("faults injected: {}\n", self.faults.len());
        for (k, r) in &self.recovery {
            s += &format!(
                "  {k:<17} x{:<3} recovery p50 {:>6} ms, max {:>6} ms\n",
                r.count, r.p50_ms, r.max_ms
            );
        }
        for why in &self.skipped {
            s += &format!("  skipped: {why}\n");
        }
        s += &format!(
            "checks: acknowledged adds {}, carts {}, mints {}, checked-out carts {}, registers {} ({} ops)\n",
            c.acked_adds, c.acked_carts, c.acked_mints, c.checked_out_carts, c.registers_checked, c.register_ops
        );
        s += &format!(
            "lost = {}, duplicated = {}, linearizability violations = {}, inconclusive = {}, slow recoveries = {}\n",
            c.lost(),
            c.duplicated(),
            c.linearizability_violations.len(),
            c.linearizability_inconclusive.len(),
            self.slow_recoveries.len()
        );
        let e = &self.expiry;
        s += &format!(
            "expiry: {} handles with TTLs, {} reads live and {} gone, {} refused for the clock, violations = {}\n",
            e.handles,
            e.reads_live,
            e.reads_gone,
            e.refused_for_clock,
            e.violations.len()
        );
        s += if self.passed() {
            "RESULT: PASS\n"
        } else {
            "RESULT: FAIL\n"
        };
        if !self.passed() {
            s += &format!("reproduce with: --seed {}\n", self.seed);
            for d in c.details.iter().take(10) {
                s += &format!("{d}\n");
            }
            for d in &self.slow_recoveries {
                s += &format!("SLOW RECOVERY: {d}\n");
            }
            for d in self.expiry.violations.iter().take(10) {
                s += &format!("{d}\n");
            }
        }
        s
    }
}

/// Register handles and state keys the linearizability checker follows.
const REGISTERS: usize = 4;
/// Final-state reads in flight at once after a run.
const FINAL_READS_IN_FLIGHT: usize = 32;
/// How far from its TTL a handle may be seen expiring: the nodes' maximum
/// clock offset (`--max-clock-offset`, 500 ms by default).
const EXPIRY_BOUND: Duration = Duration::from_millis(500);

/// Runs one chaos experiment and checks it.
pub async fn run(cfg: ChaosConfig) -> Result<Report> {
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let history = Arc::new(History::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut skipped = Vec::new();
    let mut faults = cfg.faults.clone();

    // The cluster (not for the lossy control) and the cart servers.
    let log_dir = tempfile::Builder::new().prefix("handlestore-chaos-").tempdir()?;
    let mut cluster = None;
    let mut servers = Vec::new();
    if cfg.lossy {
        servers.push(CartServer::start_memory(log_dir.path()).await?);
    } else {
        let netns = match NetNs::available() {
            Ok(()) => true,
            Err(why) if faults.contains(&FaultKind::PartitionLeader) => {
                faults.retain(|f| *f != FaultKind::PartitionLeader);
                skipped.push(format!("partition faults: {why}"));
                false
            }
            Err(_) => false,
        };
        let mut builder = TestCluster::builder(cfg.nodes).netns(netns);
        match crate::faketime::library() {
            Ok(lib) => builder = builder.faketime(lib),
            Err(why) if faults.contains(&FaultKind::ClockJump) => {
                faults.retain(|f| *f != FaultKind::ClockJump);
                skipped.push(format!("clock faults: {why}"));
            }
            Err(_) => {}
        }
        let c = builder.start().await?;
        for _ in 0..2 {
            servers.push(CartServer::start(&c.endpoints(), log_dir.path()).await?);
        }
        cluster = Some(c);
    }
    let front = RoundRobin::start(servers.iter().map(CartServer::url).collect()).await?;

    // Traffic.
    let mut tasks = Vec::new();
    for i in 0..cfg.cart_clients {
        let (h, s, url, seed) = (history.clone(), stop.clone(), front.url(), rng.random());
        tasks.push(tokio::spawn(workload::cart_flows(i, url, h, s, seed)));
    }
    let mut client = None;
    let mut probe_client = None;
    let mut registers: Option<Arc<Vec<String>>> = None;
    if let Some(c) = &cluster {
        probe_client = Some(Client::builder(c.endpoints()).namespace("chaos").build()?);
        // A deadline shorter than the longest faults, so some writes end
        // with an unknown outcome (which may still be applied later) and the
        // checkers must reason about them.
        let cl = Client::builder(c.endpoints())
            .namespace("chaos")
            .deadline(Duration::from_secs(3))
            .attempt_timeout(Duration::from_secs(1))
            .build()?;
        let regs: Arc<ClusterHandleStore<Value>> = Arc::new(cl.handle_store("reg").build());
        let mut handle_keys = Vec::new();
        for _ in 0..REGISTERS {
            let id = handlestore_client::id::new_handle_id("");
            regs.put(&id, json!(0), Ttl::Never).await.context("seeding registers")?;
            handle_keys.push(id);
        }
        let tool = cl.state_tool();
        let mut state_keys = Vec::new();
        for i in 0..REGISTERS {
            let k = format!("chaos/reg-{i}");
            tool.store(&k, StateValue::Json(json!(0)), StoreOptions::default())
                .await
                .context("seeding keys")?;
            state_keys.push(k);
        }
        let (handle_keys, state_keys) = (Arc::new(handle_keys), Arc::new(state_keys));
        registers = Some(handle_keys.clone());
        for i in 0..cfg.register_clients {
            let id = 100 + i;
            let (h, s, seed) = (history.clone(), stop.clone(), rng.random());
            let (which, keys) = if i % 2 == 0 {
                (workload::Registers::Handles(regs.clone()), handle_keys.clone())
            } else {
                (workload::Registers::State(tool.clone()), state_keys.clone())
            };
            tasks.push(tokio::spawn(workload::registers(id, which, keys, h, s, seed)));
        }
        let minted: Arc<ClusterHandleStore<Value>> = Arc::new(cl.handle_store("mints").build());
        tasks.push(tokio::spawn(workload::mints(
            200,
            minted,
            history.clone(),
            stop.clone(),
        )));
        tasks.extend(expiry::spawn(
            &c.endpoints(),
            "chaos",
            history.clone(),
            stop.clone(),
            rng.random(),
        )?);
        client = Some(cl);
    }

    // Faults.
    let started = Instant::now();
    let mut events = Vec::new();
    let mut slow = Vec::new();
    faults.shuffle(&mut rng);
    let mut next = 0usize;
    while started.elapsed() < cfg.duration {
        tokio::time::sleep(Duration::from_millis(rng.random_range(1_000..3_000))).await;
        if started.elapsed() >= cfg.duration {
            break;
        }
        let at_s = history.now() as f64 / 1e6;
        if cfg.lossy {
            // The control: the only "fault" is the in-memory server restarting.
            servers[0].restart().await?;
            events.push(FaultEvent {
                kind: FaultKind::KillLeader,
                at_s,
                nodes: vec![],
                held_ms: 0,
                recovery_ms: Some(0),
            });
            continue;
        }
        let (Some(c), Some(cl)) = (cluster.as_mut(), probe_client.as_ref()) else {
            break;
        };
        let kind = faults[next % faults.len()];
        next += 1;
        let (nodes, held) = match faults::inject(c, kind, &mut rng).await {
            Ok(x) => x,
            Err(e) => {
                slow.push(format!("{kind:?} at {at_s:.1}s could not be injected: {e:#}"));
                continue;
            }
        };
        if kind == FaultKind::PauseLeader
            && let (Some(&old), Some(keys)) = (nodes.first(), registers.as_ref())
        {
            // The old leader has just woken up, still believing it leads:
            // ask it directly. Whatever it answers goes into the history.
            let endpoint = c.node(old).endpoint();
            probe_old_leader(&endpoint, keys, &history).await;
        }
        let recovery = measure_recovery(cl, cfg.recovery_bound).await;
        if recovery.is_none() {
            slow.push(format!(
                "{kind:?} at {at_s:.1}s: no write succeeded within {:?}",
                cfg.recovery_bound
            ));
        }
        events.push(FaultEvent {
            kind,
            at_s,
            nodes,
            held_ms: held.as_millis() as u64,
            recovery_ms: recovery.map(|d| d.as_millis() as u64),
        });
    }

    // Let traffic run on a healthy cluster, then stop it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    // Every call has its own timeout, so the clients stop soon; one that
    // does not is a hang worth failing the run over.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let mut stuck = 0;
    for mut t in tasks {
        if tokio::time::timeout_at(deadline, &mut t).await.is_err() {
            t.abort();
            stuck += 1;
        }
    }
    if stuck > 0 {
        slow.push(format!("{stuck} client task(s) did not stop within 120s of the end"));
    }
    let duration_s = started.elapsed().as_secs_f64();

    // Read the final state after recovery.
    if let Some(c) = &cluster {
        c.wait_leader(Duration::from_secs(30)).await?;
    }
    let records = history.snapshot();
    let mut fin = FinalState::default();
    let carts: BTreeSet<String> = records
        .iter()
        .filter(|r| r.outcome == Outcome::Ok)
        .filter_map(|r| match r.kind {
            "create_cart" => r.output.get("cart_id").and_then(Value::as_str).map(str::to_string),
            "add_item" | "checkout" => Some(r.key.clone()),
            _ => None,
        })
        .collect();
    eprintln!(
        "chaos: faults over after {duration_s:.0}s; reading the final state of {} carts",
        carts.len()
    );
    let reading = Instant::now();
    let reader = connect(&front.url()).await?;
    let reader = &reader;
    // Many reads in flight at once: a long run leaves tens of thousands.
    fin.carts = futures::stream::iter(carts)
        .map(|cart| async move {
            let mut got = Err("not read".to_string());
            for _ in 0..10 {
                match call(reader, "get_cart", json!({"cart_id": cart})).await {
                    ToolOutcome::Ok(v) => {
                        got = Ok(v);
                        break;
                    }
                    ToolOutcome::ToolError(m) if !m.contains("unavailable") => {
                        got = Err(m);
                        break;
                    }
                    other => got = Err(format!("{other:?}")),
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            (cart, got)
        })
        .buffer_unordered(FINAL_READS_IN_FLIGHT)
        .collect()
        .await;
    if let Some(cl) = &client {
        let minted: ClusterHandleStore<Value> = cl.handle_store("mints").build();
        let minted = &minted;
        let ids: Vec<String> = records
            .iter()
            .filter(|r| r.kind == "mint" && r.outcome == Outcome::Ok)
            .map(|r| r.key.clone())
            .collect();
        let read: Vec<(String, Result<Option<Value>, handlestore_client::Error>)> = futures::stream::iter(ids)
            .map(|id| async move {
                let v = minted.get(&id).await;
                (id, v)
            })
            .buffer_unordered(FINAL_READS_IN_FLIGHT)
            .collect()
            .await;
        for (id, v) in read {
            fin.mints.insert(id, v?);
        }
    }
    eprintln!(
        "chaos: final state read in {:.0}s; checking {} operations",
        reading.elapsed().as_secs_f64(),
        records.len()
    );
    let checks = checker::run(&records, &fin, &json!(0), 2_000_000);
    let expiry = expiry::check(&records, EXPIRY_BOUND);

    let mut ops = OpCounts::default();
    let mut ops_by_kind: BTreeMap<String, OpCounts> = BTreeMap::new();
    for r in &records {
        for o in [&mut ops, ops_by_kind.entry(r.kind.to_string()).or_default()] {
            o.attempted += 1;
            match r.outcome {
                Outcome::Ok => o.acknowledged += 1,
                Outcome::Fail => o.failed += 1,
                Outcome::Unknown => o.unknown += 1,
            }
        }
    }
    let mut recovery = BTreeMap::new();
    let mut by_kind: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for e in &events {
        if let Some(ms) = e.recovery_ms {
            by_kind.entry(format!("{:?}", e.kind)).or_default().push(ms);
        }
    }
    for (k, mut v) in by_kind {
        v.sort_unstable();
        recovery.insert(
            k,
            Recovery {
                count: v.len(),
                // Nearest rank: the smallest value at or above half of them.
                p50_ms: v[v.len().div_ceil(2) - 1],
                max_ms: *v.last().unwrap_or(&0),
            },
        );
    }
    Ok(Report {
        seed: cfg.seed,
        duration_s,
        nodes: if cfg.lossy { 0 } else { cfg.nodes },
        lossy: cfg.lossy,
        skipped,
        ops,
        ops_by_kind,
        faults: events,
        recovery,
        slow_recoveries: slow,
        checks,
        expiry,
    })
}

/// A linearizable read and a write of every register, sent only to `endpoint`
/// (a just-resumed old leader), recorded as register operations.
async fn probe_old_leader(endpoint: &str, keys: &[String], history: &History) {
    let Ok(client) = Client::builder([endpoint.to_string()])
        .namespace("chaos")
        .deadline(Duration::from_secs(3))
        .attempt_timeout(Duration::from_secs(1))
        .build()
    else {
        return;
    };
    let store: ClusterHandleStore<Value> = client.handle_store("reg").build();
    for (i, key) in keys.iter().enumerate() {
        let invoke_us = history.now();
        let (outcome, output) = match store.get(key).await {
            Ok(v) => (Outcome::Ok, v.unwrap_or(Value::Null)),
            Err(e) => (Outcome::Fail, json!(e.to_string())),
        };
        history.push(history::Record {
            client: 300,
            kind: "get",
            key: key.clone(),
            input: Value::Null,
            output,
            invoke_us,
            complete_us: history.now(),
            outcome,
        });
        let v = json!(300_000_000u64 + history.now() * 10 + i as u64);
        let invoke_us = history.now();
        let (outcome, output) = match store.put(key, v.clone(), Ttl::Never).await {
            Ok(_) => (Outcome::Ok, Value::Null),
            Err(e) => (workload::classify(&e), json!(e.to_string())),
        };
        history.push(history::Record {
            client: 300,
            kind: "put",
            key: key.clone(),
            input: v,
            output,
            invoke_us,
            complete_us: history.now(),
            outcome,
        });
    }
}

/// Time until a write succeeds again.
async fn measure_recovery(client: &Client, bound: Duration) -> Option<Duration> {
    let probe: ClusterHandleStore<Value> = client.handle_store("probe").build();
    let started = Instant::now();
    while started.elapsed() < bound {
        if probe
            .mint(json!("probe"), Ttl::After(Duration::from_secs(60)))
            .await
            .is_ok()
        {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}
