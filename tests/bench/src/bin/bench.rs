//! The benchmark harness: handlestore beside etcd 3.7, NATS JetStream KV,
//! Redis and one fdatasync, in one run on this machine.
//!
//! target/release/bench \
//!     [--systems fsync,handlestore,handlestore-secure,etcd,nats,nats-default,redis,redis-fsync,cart-memory,cart-redis,cart-redis-fsync] \
//!     [--concurrency 1,16,64,256] \
//!     [--ops mint,put,...] [--duration 10s | --count 100000] [--rounds 3] [--out target/bench]
//!     [--ab path/to/other/target/release]
//!     [--java-jar path/to/handlestore-examples-all.jar] [--java-warmup 120s]
//!
//! Installs Redis, etcd 3.4, 3.5.30 and 3.7.3 and nats-server when missing
//! (`deploy/install-bench-deps.sh`), starts each system
//! on free loopback ports with its data on one disk, and writes
//! results.json and results.svg to --out.
//!
//! Systems run only when named: etcd-3.5, etcd-3.4, the overload rows
//! (handlestore-fleet*), the FastMCP cart servers (fastmcp*), the
//! TypeScript ones (ts-cart*) and the Java ones (java-cart,
//! java-cart-redis-fsync, java-cart-memory: the cart example of
//! client/java/examples, built once per run with Maven unless --java-jar
//! names its executable jar). Before a Java system's cells, each of its
//! operations runs unmeasured at the run's highest concurrency until the
//! JVMs' JIT compiler threads are quiet (under 5% of a 2 s slice, after at
//! least 2,000 operations), for --java-warmup at most; each row says how
//! long in `warmup_s`.

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use handlestore_bench::{self as bench, BenchConfig, Length};

#[derive(Parser, Debug)]
#[command(about = "Benchmark handlestore against etcd, NATS KV, Redis and one fdatasync")]
struct Args {
    /// Systems to run, in order. Also, only when named: etcd-3.5 (etcd
    /// 3.5.30, the anchor until 3.7.3) and etcd-3.4 (Debian 12's etcd
    /// 3.4.23), for the history of the etcd ratios; the overload rows'
    /// handlestore-fleet (64 clients, each its own connections, for
    /// `--concurrency 1024,4096`) and handlestore-fleet-unlimited (the same
    /// with admission off); the FastMCP cart servers (fastmcp,
    /// fastmcp-handles, fastmcp-redis-fsync, fastmcp-memory: the tests'
    /// Python), the TypeScript ones (ts-cart, ts-cart-redis-fsync,
    /// ts-cart-memory: Node.js and `npm ci` in client/ts) and the Java ones
    /// (java-cart, java-cart-redis-fsync, java-cart-memory: Java 17 and
    /// Maven, or --java-jar).
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
    /// The Java cart server's executable jar for the java-cart* systems
    /// (default: build client/java/examples with the `mvn` on PATH, once
    /// per run, and use its target/handlestore-examples-*-all.jar).
    #[arg(long, value_name = "JAR")]
    java_jar: Option<std::path::PathBuf>,
    /// The longest each operation of a java-cart* system runs, unmeasured,
    /// before its cells, waiting for the JVMs' JIT to be quiet (0s: no
    /// warm-up, the cells measure a cold JVM).
    // A fresh JVM needs 10-20 s of calls before C2 settles at the Java
    // client's call rates (client/java/bench allows 30 s); a cart replica
    // gets a few hundred calls a second, and with 30 s two of the three
    // systems were still compiling in a smoke run, at several times the CPU
    // per flow of the one that was quiet. Most warm-ups end before 120 s.
    #[arg(long, default_value = "120s", value_parser = humantime::parse_duration)]
    java_warmup: Duration,
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
    if let Some(jar) = &args.java_jar {
        bench::java::use_cart_jar(jar.clone());
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
        java_warmup: args.java_warmup,
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
    if args
        .systems
        .iter()
        .any(|s| bench::JAVA_SYSTEMS.contains(&bench::ab::base(s)))
    {
        report["java_warmup_limit_s"] = serde_json::json!(args.java_warmup.as_secs_f64());
    }
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
