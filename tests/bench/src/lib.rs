//! The benchmark harness: the same workloads against handlestore and the
//! systems users would pick instead, in one run on one machine, reported as
//! throughput and latency per concurrency, and as the ratios the targets in
//! docs/performance.md are stated in.
//!
//! `setup.rs` starts each system and says which operations it runs,
//! `workload.rs` is those operations, `measure.rs` runs one cell and times
//! it (with `cpu.rs` for the CPU it cost and `mem.rs` for the servers'
//! peak memory), `analysis.rs` takes the medians
//! over rounds and the targets' ratios; `plot.rs` draws the run. `ab.rs`
//! runs two builds side by side and compares them. `client_rows.rs` is
//! what the client benches (`pyclient`, `tsclient`, `goclient`) share,
//! `typescript.rs` runs the TypeScript client's scripts under Node.js,
//! `java.rs` builds and runs the Java programs (the `javaclient` bench's,
//! the Java cart server);
//! `groups/` is the `groups` binary's three nodes of many Raft groups.

pub mod ab;
mod analysis;
pub mod client_rows;
pub mod cpu;
pub mod fs;
pub mod groups;
pub mod java;
mod measure;
pub mod mem;
pub mod plot;
mod setup;
pub mod systems;
pub mod typescript;
mod workload;

use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

pub use self::analysis::{Target, median, medians, targets};
use self::measure::{Cell, measure};
use self::setup::plan;

/// Bytes per written value.
pub const VALUE_BYTES: usize = 256;

/// One measured cell: a system's operation at one concurrency.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Which round of the run measured it (from 1); none in a row of
    /// medians over rounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<usize>,
    pub system: String,
    pub op: String,
    pub concurrency: usize,
    pub ops: u64,
    pub errors: u64,
    pub seconds: f64,
    pub throughput: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    /// CPU time the system's server processes spent per operation during
    /// the cell, all of them together (None: no server, as for fsync).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_us: Option<f64>,
    /// CPU time the load generator (this process: client library,
    /// connections, bookkeeping) spent per operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_cpu_us: Option<f64>,
    /// The peak resident set of each of the system's server processes
    /// during the cell, in MiB (the largest over rounds in a row of
    /// medians).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_peak_rss_mib: Vec<f64>,
    /// For a system whose servers are JVMs: how long its operation ran,
    /// unmeasured, before its first cell of the round, until the JIT was
    /// quiet (`BenchConfig::java_warmup`; the median over rounds in a row
    /// of medians).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup_s: Option<f64>,
    /// The first error, if any, to say what went wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

impl Row {
    /// The cell as the bench prints it when it is measured: throughput,
    /// latencies, CPU per operation, errors.
    fn line(&self) -> String {
        let cpu = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        let rss = self.server_peak_rss_mib.iter().copied().fold(0.0, f64::max);
        format!(
            "{:<12} {:<19} x{:<4} {:>9.0} ops/s  p50 {:>7} us  p99 {:>7} us  p999 {:>7} us  \
             cpu/op server {:>5} us client {:>5} us  rss {:>5.0} MiB  errors {}",
            self.system,
            self.op,
            self.concurrency,
            self.throughput,
            self.p50_us,
            self.p99_us,
            self.p999_us,
            cpu(self.server_cpu_us),
            cpu(self.client_cpu_us),
            rss,
            self.errors
        )
    }
}

/// How long one cell runs: for a fixed time, or for a fixed number of
/// operations shared by its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// Every client loops on its operation until the time is up.
    For(Duration),
    /// The clients take operations from one pool of this many until it is
    /// empty; one that fails counts toward the number. The cell's time is
    /// what the last operation took to end.
    Ops(u64),
}

impl Length {
    /// What the progress bar counts for one cell: milliseconds, or
    /// operations.
    fn units(self) -> u64 {
        match self {
            Length::For(d) => d.as_millis() as u64,
            Length::Ops(n) => n,
        }
    }
}

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub systems: Vec<String>,
    pub concurrency: Vec<usize>,
    pub length: Length,
    /// Where every system keeps its data (one disk for all).
    pub data_dir: std::path::PathBuf,
    /// Only these operations (by name, e.g. "mint", "put"); empty: all.
    pub ops: Vec<String>,
    /// How many times the whole run is repeated, every system started
    /// afresh each time; even rounds take the systems in reverse order.
    pub rounds: usize,
    /// The A/B mode: the release directory of another build, whose node
    /// and cart_server run every system of ours a second time (`ab.rs`).
    pub b_build: Option<std::path::PathBuf>,
    /// The longest a system whose servers are JVMs ([`JAVA_SYSTEMS`]) runs
    /// each operation, unmeasured, before its cells, waiting for the JIT
    /// to be quiet; zero for no warm-up.
    pub java_warmup: std::time::Duration,
}

impl BenchConfig {
    fn wants(&self, op: &str) -> bool {
        self.ops.is_empty() || self.ops.iter().any(|o| o == op)
    }
}

pub const SYSTEMS: [&str; 11] = [
    "fsync",
    "handlestore",
    "handlestore-secure",
    "etcd",
    "nats",
    "nats-default",
    "redis",
    "redis-fsync",
    "cart-memory",
    "cart-redis",
    "cart-redis-fsync",
];

/// Systems run only when named, for the history of the ratios: etcd
/// 3.5.30 (Debian's unstable suite), the bench's `etcd` until 3.7.3, and
/// 3.4.23 (Debian 12's), which the ratios were first stated against.
pub const HISTORY_SYSTEMS: [&str; 2] = ["etcd-3.5", "etcd-3.4"];

/// Systems run only when named: the overload rows (`--concurrency
/// 1024,4096`), handlestore as shipped and with admission off.
pub const OVERLOAD_SYSTEMS: [&str; 2] = ["handlestore-fleet", "handlestore-fleet-unlimited"];

/// Systems run only when named, with the tests' Python environment: the
/// FastMCP cart example (`client/python/examples/fastmcp_cart.py`) over
/// `HandlestoreStore`, over the cluster's handles, over py-key-value's
/// `RedisStore` (Redis with `appendfsync always`) and its `MemoryStore`.
pub const PYTHON_SYSTEMS: [&str; 4] = ["fastmcp", "fastmcp-handles", "fastmcp-redis-fsync", "fastmcp-memory"];

/// Systems run only when named, with Node.js and client/ts's node_modules:
/// the TypeScript cart example (`client/ts/examples/cartServer.ts`) over
/// the cluster's handles, over Redis with `appendfsync always` (`--kv
/// redis`) and in its own memory (`--kv memory`).
pub const TS_SYSTEMS: [&str; 3] = ["ts-cart", "ts-cart-redis-fsync", "ts-cart-memory"];

/// Systems run only when named, with Java 17 and Maven (or the jar named
/// by `java::use_cart_jar`): the Java cart example
/// (`io.github.handlestore.examples.cart.CartServer`, client/java/examples)
/// over the cluster's handles, over Redis with `appendfsync always` (`--kv
/// redis`) and in its own memory (`--kv memory`). Each operation runs
/// unmeasured before its cells until the JVMs' JIT is quiet
/// ([`BenchConfig::java_warmup`]).
pub const JAVA_SYSTEMS: [&str; 3] = ["java-cart", "java-cart-redis-fsync", "java-cart-memory"];

/// Runs every system's operations at every concurrency, `cfg.rounds` times.
pub async fn run(cfg: &BenchConfig) -> Result<Vec<Row>> {
    anyhow::ensure!(cfg.rounds >= 1, "a run needs at least one round");
    let mut cfg = cfg.clone();
    if let Some(dir) = &cfg.b_build {
        ab::check_build(dir)?;
        cfg.systems = ab::with_twins(&cfg.systems);
    }
    let cfg = &cfg;
    for op in &cfg.ops {
        if !cfg.systems.iter().any(|s| plan(ab::base(s)).contains(&op.as_str())) {
            anyhow::bail!(
                "no selected system has an operation {op:?}; they have: {}",
                cfg.systems
                    .iter()
                    .flat_map(|s| plan(ab::base(s)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if cfg
        .systems
        .iter()
        .any(|s| s.starts_with("etcd") || s.starts_with("nats") || s.contains("redis"))
    {
        systems::ensure_installed()?;
    }
    let cells: u64 = cfg
        .systems
        .iter()
        .map(|s| {
            let per_op = if s == "fsync" { 1 } else { cfg.concurrency.len() };
            (plan(ab::base(s)).into_iter().filter(|op| cfg.wants(op)).count() * per_op) as u64
        })
        .sum();
    let bar = ProgressBar::new(cfg.rounds as u64 * cells * cfg.length.units());
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% {msg}")
            .expect("progress template"),
    );
    let mut rows = Vec::new();
    for round in 1..=cfg.rounds {
        // A machine that drifts over a run favours the systems measured
        // in its better part: reversing the order every other round
        // spreads that over all of them.
        let mut order: Vec<&String> = cfg.systems.iter().collect();
        if round % 2 == 0 {
            order.reverse();
        }
        for system in order {
            run_system(cfg, round, system, &bar, &mut rows).await?;
        }
    }
    bar.finish_and_clear();
    Ok(rows)
}

/// Starts `system` afresh (its data under a directory of this round), runs
/// its operations at every concurrency, and stops it.
async fn run_system(
    cfg: &BenchConfig,
    round: usize,
    system: &str,
    bar: &ProgressBar,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let dir = if cfg.rounds > 1 {
        cfg.data_dir.join(format!("round-{round}")).join(system)
    } else {
        cfg.data_dir.join(system)
    };
    std::fs::create_dir_all(&dir)?;
    let mut keep = Vec::new();
    let mut pids = Vec::new();
    handlestore_tests::cluster::choose_handlestore_bin(ab::bin_for(system, cfg.b_build.as_deref()));
    let ops = setup::start(ab::base(system), &dir, &mut keep, &mut pids)
        .await
        .with_context(|| format!("starting {system}"))?;
    let prefix = if cfg.rounds > 1 {
        format!("r{round} ")
    } else {
        String::new()
    };
    // Above the bar on a terminal; plain lines in a log.
    let say = |line: String| {
        if bar.is_hidden() {
            println!("{line}");
        } else {
            bar.println(line);
        }
    };
    for (name, op) in ops.into_iter().filter(|(name, _)| cfg.wants(name)) {
        let levels: Vec<usize> = if system == "fsync" {
            vec![1]
        } else {
            cfg.concurrency.clone()
        };
        let mut warmup_s = None;
        if setup::on_jvm(ab::base(system)) && !cfg.java_warmup.is_zero() {
            let top = levels.iter().copied().max().unwrap_or(1);
            bar.set_message(format!("round {round}: {system} {name} x{top} warm-up"));
            let w = measure::warm_up(op.clone(), top, &pids, cfg.java_warmup).await;
            let how = if w.quiet {
                "until the JIT was quiet"
            } else {
                "stopped at the limit, the JIT not yet quiet"
            };
            say(format!(
                "{prefix}{system:<12} {name:<19} x{top:<4} warm-up {:.0} s ({how}), {} ops unmeasured, errors {}",
                w.seconds, w.ops, w.errors
            ));
            warmup_s = Some(w.seconds);
        }
        for c in levels {
            let cell = Cell {
                round,
                system,
                name,
                concurrency: c,
                length: cfg.length,
                pids: &pids,
            };
            let mut row = measure(cell, op.clone(), bar).await;
            row.warmup_s = warmup_s;
            say(format!("{prefix}{}", row.line()));
            rows.push(row);
        }
    }
    drop(keep);
    // The next system (or round) gets the disk without this one's files.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
