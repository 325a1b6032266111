//! The Python client beside redis-py, in one run: its mint, get, put and
//! state get against three nodes, and redis-py's SET EX and GET against Redis with
//! `appendfsync always`, each at every task count, driven by the tests'
//! Python environment (`tests/python/client_bench.py`).
//!
//! target/release/pyclient [--tasks 1,64] [--duration 10s] [--rounds 3] [--out target/pyclient]
//!
//! Every round starts both systems afresh. Writes results.json (every
//! cell of every round, and each ratio per round with its median) and
//! results.md to --out.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Parser;
use handlestore_bench::systems::{Redis, RedisMode, ensure_installed};
use handlestore_tests::TestCluster;
use serde_json::{Value, json};

#[derive(Parser, Debug)]
#[command(about = "The Python client beside redis-py")]
struct Args {
    /// Concurrent asyncio tasks per cell.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 64])]
    tasks: Vec<usize>,
    /// How long each cell runs.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// How many times to run both systems.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Where results.json and results.md go.
    #[arg(long, default_value = "target/pyclient")]
    out: PathBuf,
}

/// The ratios reported: (name, Python client's op, redis-py's op).
const RATIOS: [(&str, &str, &str); 3] = [
    (
        "Python client mint / redis-py SET EX (appendfsync always)",
        "mint",
        "set_ex",
    ),
    ("Python client linearizable get / redis-py GET", "get", "get"),
    (
        "Python client linearizable state get / redis-py GET",
        "state_get",
        "get",
    ),
];

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    anyhow::ensure!(args.rounds >= 1, "--rounds must be at least 1");
    let python =
        handlestore_tests::python::interpreter().map_err(|why| anyhow::anyhow!("no Python environment: {why}"))?;
    ensure_installed()?;
    let mut cells: Vec<Value> = Vec::new();
    for round in 1..=args.rounds {
        for mut cell in round_cells(&python, &args).await? {
            cell["round"] = json!(round);
            println!("{cell}");
            cells.push(cell);
        }
    }
    let ratios = ratios(&cells, &args);
    std::fs::create_dir_all(&args.out)?;
    let md = markdown(&cells, &ratios, &args);
    println!("\n{md}");
    std::fs::write(args.out.join("results.md"), md)?;
    let report = json!({ "duration_per_cell_s": args.duration.as_secs_f64(), "rounds": args.rounds, "cells": cells, "ratios": ratios });
    std::fs::write(args.out.join("results.json"), serde_json::to_string_pretty(&report)?)?;
    Ok(())
}

/// One round: a fresh cluster and Redis, the script against both.
async fn round_cells(python: &std::path::Path, args: &Args) -> Result<Vec<Value>> {
    let dir = tempfile::Builder::new().prefix("handlestore-pyclient-").tempdir()?;
    let cluster = TestCluster::builder(3).dir_in(dir.path()).start().await?;
    let redis = Redis::start(dir.path(), RedisMode::FsyncAlways).await?;
    let script = handlestore_tests::repo_root().join("tests/python/client_bench.py");
    let tasks: Vec<String> = args.tasks.iter().map(usize::to_string).collect();
    let out = Command::new(python)
        .arg(&script)
        .args(["--endpoints", &cluster.endpoints().join(",")])
        .args(["--redis", &redis.url])
        .args(["--tasks", &tasks.join(",")])
        .args(["--seconds", &args.duration.as_secs_f64().to_string()])
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !out.status.success() {
        bail!("{} failed:\n{}", script.display(), String::from_utf8_lossy(&out.stderr));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).with_context(|| format!("a cell: {l}")))
        .collect()
}

fn throughput(cells: &[Value], round: usize, system: &str, op: &str, tasks: usize) -> Option<f64> {
    cells
        .iter()
        .find(|c| c["round"] == round && c["system"] == system && c["op"] == op && c["concurrency"] == tasks)
        .and_then(|c| c["throughput"].as_f64())
}

/// Each ratio at each task count: per round, and the median.
fn ratios(cells: &[Value], args: &Args) -> Vec<Value> {
    let mut out = Vec::new();
    for (name, ours, theirs) in RATIOS {
        for &tasks in &args.tasks {
            let per_round: Vec<Option<f64>> = (1..=args.rounds)
                .map(|r| {
                    let a = throughput(cells, r, "python-client", ours, tasks)?;
                    let b = throughput(cells, r, "redis-py", theirs, tasks)?;
                    (b > 0.0).then(|| a / b)
                })
                .collect();
            let mut known: Vec<f64> = per_round.iter().flatten().copied().collect();
            known.sort_by(f64::total_cmp);
            let median = known.get(known.len() / 2).copied();
            out.push(json!({ "name": format!("{name} x{tasks}"), "median": median, "per_round": per_round }));
        }
    }
    out
}

fn markdown(cells: &[Value], ratios: &[Value], args: &Args) -> String {
    let mut md = String::from(
        "| system | op | tasks | ops/s (per round) | p50 µs | p99 µs | errors |\n|---|---|---:|---|---:|---:|---:|\n",
    );
    let mut seen = Vec::new();
    for c in cells {
        let key = (
            c["system"].to_string(),
            c["op"].to_string(),
            c["concurrency"].to_string(),
        );
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let same: Vec<&Value> = cells
            .iter()
            .filter(|o| o["system"] == c["system"] && o["op"] == c["op"] && o["concurrency"] == c["concurrency"])
            .collect();
        let each: Vec<String> = same
            .iter()
            .map(|o| format!("{:.0}", o["throughput"].as_f64().unwrap_or(0.0)))
            .collect();
        let last = same.last().copied().unwrap_or(c);
        let errors: u64 = same.iter().filter_map(|o| o["errors"].as_u64()).sum();
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            c["system"].as_str().unwrap_or(""),
            c["op"].as_str().unwrap_or(""),
            c["concurrency"],
            each.join(", "),
            last["p50_us"],
            last["p99_us"],
            errors
        ));
    }
    md.push_str(&format!(
        "\n{} s per cell, {} rounds.\n\n| ratio | median | rounds |\n|---|---:|---|\n",
        args.duration.as_secs_f64(),
        args.rounds
    ));
    for r in ratios {
        let each: Vec<String> = r["per_round"]
            .as_array()
            .map(|v| {
                v.iter()
                    .map(|x| x.as_f64().map_or("n/a".into(), |x| format!("{x:.2}")))
                    .collect()
            })
            .unwrap_or_default();
        md.push_str(&format!(
            "| {} | {} | {} |\n",
            r["name"].as_str().unwrap_or(""),
            r["median"].as_f64().map_or("n/a".into(), |x| format!("{x:.2}")),
            each.join(", ")
        ));
    }
    md
}
