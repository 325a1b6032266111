//! The benchmark harness: handlestore beside etcd 3.5, NATS JetStream KV,
//! Redis and one fdatasync, in one run on this machine.
//!
//! target/release/bench \
//!     [--systems fsync,handlestore,handlestore-secure,etcd,nats,nats-default,redis,redis-fsync,cart-memory,cart-redis,cart-redis-fsync] \
//!     [--concurrency 1,16,64,256] \
//!     [--ops mint,put,...] [--duration 10s | --count 100000] [--rounds 3] [--out target/bench]
//!     [--ab path/to/other/target/release]
//!
//! Installs Redis, etcd 3.4 and 3.5.30 and nats-server when missing
//! (`deploy/install-bench-deps.sh`), starts each system
//! on free loopback ports with its data on one disk, and writes
//! results.json and results.svg to --out.

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use handlestore_bench::{self as bench, BenchConfig, Length};

#[derive(Parser, Debug)]
#[command(about = "Benchmark handlestore against etcd, NATS KV, Redis and one fdatasync")]
struct Args {
    /// Systems to run, in order. Also, only when named: etcd-3.4 (Debian
    /// 12's etcd 3.4.23, for the history of the etcd ratios), the overload rows'
    /// handlestore-fleet (64 clients, each its own connections, for
    /// `--concurrency 1024,4096`) and handlestore-fleet-unlimited (the same
    /// with admission off); the FastMCP cart servers (fastmcp,
    /// fastmcp-handles, fastmcp-redis-fsync, fastmcp-memory: the tests'
    /// Python) and the TypeScript ones (ts-cart, ts-cart-redis-fsync,
    /// ts-cart-memory: Node.js and `npm ci` in client/ts).
    #[arg(long, value_delimiter = ',', default_values_t = bench::SYSTEMS.map(String::from))]
    systems: Vec<String>,
    /// Concurrent clients per measurement.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 16, 64, 256])]
    concurrency: Vec<usize>,
    /// How long each measurement runs.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Instead of a duration: how many operations each measurement runs,
    /// shared by its clients (one that fails counts toward it).
    #[arg(long, conflicts_with = "duration", value_parser = clap::value_parser!(u64).range(1..))]
    count: Option<u64>,
    /// How many times to repeat the whole run, every system started afresh
    /// each time (even rounds take the systems in reverse order); the
    /// targets are then the medians of each round's ratios.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// Where results.json and results.svg go.
    #[arg(long, default_value = "target/bench")]
    out: std::path::PathBuf,
    /// Only these operations, by name (e.g. mint,put,fdatasync); default: all.
    #[arg(long, value_delimiter = ',')]
    ops: Vec<String>,
    /// Where the systems keep their data, in a new directory inside it,
    /// removed at the end (created if missing; default: the system's temporary
    /// directory).
    #[arg(long)]
    data_dir: Option<std::path::PathBuf>,
    /// A/B: the release directory of another build (its `handlestore` and
    /// `examples/cart_server`). Every system of ours (handlestore*, cart-*)
    /// then runs again as `<system>@b` on that build, right after this
    /// build's, and each A cell is reported as a ratio to its B cell of the
    /// same round.
    #[arg(long, value_name = "DIR")]
    ab: Option<std::path::PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tmp = match &args.data_dir {
        Some(d) => std::fs::create_dir_all(d)
            .and_then(|()| tempfile::tempdir_in(d))
            .with_context(|| format!("--data-dir {}", d.display()))?,
        None => tempfile::Builder::new().prefix("handlestore-bench-").tempdir()?,
    };
    let data_fs = bench::fs::type_of(tmp.path());
    if let Some(fs) = data_fs.as_deref().filter(|fs| bench::fs::is_memory(fs)) {
        eprintln!(
            "warning: the data directory {} is on {fs}, where a sync costs nothing: the fdatasync \
             floor and every durable write are measured without a disk (give --data-dir a \
             directory on the disk to measure one)",
            tmp.path().display()
        );
    }
    let length = match args.count {
        Some(n) => Length::Ops(n),
        None => Length::For(args.duration),
    };
    let cfg = BenchConfig {
        systems: args.systems.clone(),
        concurrency: args.concurrency.clone(),
        length,
        data_dir: tmp.path().to_path_buf(),
        ops: args.ops.clone(),
        rounds: args.rounds as usize,
        b_build: args.ab.clone(),
    };
    let started = unix_now();
    let rows = bench::run(&cfg).await?;
    let targets = bench::targets(&rows);
    println!();
    for t in &targets {
        println!("{}", t.line());
    }
    let ab = bench::ab::ratios(&rows);
    if let Some(dir) = args.ab.as_ref().filter(|_| !ab.is_empty()) {
        println!("\nThis build (A) against {} (B):", dir.display());
        for t in &ab {
            println!("{}", t.line());
        }
    }
    let medians = bench::medians(&rows);
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {}", args.out.display()))?;
    let mut machine = machine();
    machine["data_fs"] = serde_json::json!(data_fs);
    let mut report = serde_json::json!({
        "started_unix": started,
        "machine": machine,
        "rows": rows,
        "targets": targets,
    });
    if let Some(dir) = &args.ab {
        report["ab"] = serde_json::json!({ "b_build": dir, "ratios": ab });
    }
    let (key, per_cell, per_point) = match length {
        Length::For(d) => (
            "duration_per_cell_s",
            serde_json::json!(d.as_secs_f64()),
            format!("{} s", d.as_secs_f64()),
        ),
        Length::Ops(n) => ("ops_per_cell", serde_json::json!(n), format!("{n} operations")),
    };
    report[key] = per_cell;
    report["rounds"] = serde_json::json!(args.rounds);
    if args.rounds > 1 {
        report["medians"] = serde_json::to_value(&medians)?;
    }
    let json_path = args.out.join("results.json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)?)?;
    let svg_path = args.out.join("results.svg");
    let of_rounds = if args.rounds > 1 {
        format!(", median of {} rounds", args.rounds)
    } else {
        String::new()
    };
    let title = format!(
        "handlestore vs etcd vs Redis, {per_point} per point{of_rounds}, {}",
        machine["cpu"].as_str().unwrap_or("")
    );
    bench::plot::svg(&medians, &title, &svg_path)?;
    println!("\nwrote {} and {}", json_path.display(), svg_path.display());
    Ok(())
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// What the numbers were measured on.
fn machine() -> serde_json::Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_default();
    let mem_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0);
    serde_json::json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "memory_gib": mem_kib / (1 << 20),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
    })
}
