//! What the client benches share (`pyclient`, `tsclient`, `goclient`,
//! `javaclient`): a client library beside a Redis client, in one run. Each
//! round starts a 3-node cluster and a Redis with `appendfsync always`
//! afresh and runs a script in the client's language against both with
//! the same flags (`--endpoints`, `--redis`, `--tasks`, `--seconds`); the
//! script prints one JSON object per cell (`system`, `op`, `concurrency`,
//! `ops`, `errors`, `seconds`, `throughput`, `p50_us`, `p99_us`,
//! `first_error`, and optionally `client_cpu_us`: the script's own CPU per
//! call; other fields are kept in results.json). The report is every
//! cell of every round, and each ratio of a client's op to the Redis
//! client's, per round and the median, as results.json and results.md.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use handlestore_tests::TestCluster;
use serde_json::{Value, json};

use super::median;
use super::systems::{Redis, RedisMode, ensure_installed};

/// One client bench: the names its script gives the two systems, and the
/// ratios between them it reports.
pub struct ClientBench {
    /// The binary's name: its temporary directories and default `--out`
    /// (`target/<name>`).
    pub name: &'static str,
    /// The client library's system in the cells (`python-client`).
    pub ours: &'static str,
    /// The Redis client's (`redis-py`).
    pub theirs: &'static str,
    /// The ratios reported: (name, the client's op, the Redis client's op).
    pub ratios: &'static [(&'static str, &'static str, &'static str)],
}

/// The flags every client bench takes.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Concurrent tasks (calls in flight) per cell.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 64])]
    pub tasks: Vec<usize>,
    /// How long each cell runs.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// How many times to run both systems.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Where results.json and results.md go (default: `target/<binary>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Runs `args.rounds` rounds of the script `script` makes (a command to
/// which the round adds its flags), prints each cell and the report, and
/// writes results.json and results.md.
pub async fn run(bench: &ClientBench, args: &Args, script: impl Fn() -> Command) -> Result<()> {
    anyhow::ensure!(args.rounds >= 1, "--rounds must be at least 1");
    ensure_installed()?;
    let mut cells: Vec<Value> = Vec::new();
    for round in 1..=args.rounds {
        for mut cell in round_cells(bench, args, script()).await? {
            cell["round"] = json!(round);
            println!("{cell}");
            cells.push(cell);
        }
    }
    let ratios = ratios(bench, &cells, args);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target").join(bench.name));
    std::fs::create_dir_all(&out)?;
    let md = markdown(&cells, &ratios, args);
    println!("\n{md}");
    std::fs::write(out.join("results.md"), md)?;
    let report = json!({ "duration_per_cell_s": args.duration.as_secs_f64(), "rounds": args.rounds, "cells": cells, "ratios": ratios });
    std::fs::write(out.join("results.json"), serde_json::to_string_pretty(&report)?)?;
    println!("wrote {}", out.display());
    Ok(())
}

/// One round: a fresh cluster and Redis, the script against both.
async fn round_cells(bench: &ClientBench, args: &Args, mut script: Command) -> Result<Vec<Value>> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("handlestore-{}-", bench.name))
        .tempdir()?;
    let cluster = TestCluster::builder(3).dir_in(dir.path()).start().await?;
    let redis = Redis::start(dir.path(), RedisMode::FsyncAlways).await?;
    let tasks: Vec<String> = args.tasks.iter().map(usize::to_string).collect();
    let shown = format!("{script:?}");
    let out = script
        .args(["--endpoints", &cluster.endpoints().join(",")])
        .args(["--redis", &redis.url])
        .args(["--tasks", &tasks.join(",")])
        .args(["--seconds", &args.duration.as_secs_f64().to_string()])
        .output()
        .with_context(|| format!("running {shown}"))?;
    if !out.status.success() {
        bail!("{shown} failed:\n{}", String::from_utf8_lossy(&out.stderr));
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
fn ratios(bench: &ClientBench, cells: &[Value], args: &Args) -> Vec<Value> {
    let mut out = Vec::new();
    for &(name, ours, theirs) in bench.ratios {
        for &tasks in &args.tasks {
            let per_round: Vec<Option<f64>> = (1..=args.rounds)
                .map(|r| {
                    let a = throughput(cells, r, bench.ours, ours, tasks)?;
                    let b = throughput(cells, r, bench.theirs, theirs, tasks)?;
                    (b > 0.0).then(|| a / b)
                })
                .collect();
            let median = median(per_round.iter().flatten().copied().collect());
            out.push(json!({ "name": format!("{name} x{tasks}"), "median": median, "per_round": per_round }));
        }
    }
    out
}

/// Every cell (ops/s of each round; p50, p99 and the script's CPU per call
/// of the last), then the ratios.
fn markdown(cells: &[Value], ratios: &[Value], args: &Args) -> String {
    let mut md = String::from(
        "| system | op | tasks | ops/s (per round) | p50 µs | p99 µs | client CPU µs/call | errors |\n\
         |---|---|---:|---|---:|---:|---:|---:|\n",
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
        md.push_str(&cell_line(cells, c));
    }
    md.push_str(&format!(
        "\n{} s per cell, {} rounds.\n\n| ratio | median | rounds |\n|---|---:|---|\n",
        args.duration.as_secs_f64(),
        args.rounds
    ));
    for r in ratios {
        md.push_str(&ratio_line(r));
    }
    md
}

/// The table row of `c`'s cell over every round.
fn cell_line(cells: &[Value], c: &Value) -> String {
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
    let cpu = last["client_cpu_us"].as_f64().map_or("-".into(), |v| format!("{v:.0}"));
    format!(
        "| {} | {} | {} | {} | {} | {} | {cpu} | {} |\n",
        c["system"].as_str().unwrap_or(""),
        c["op"].as_str().unwrap_or(""),
        c["concurrency"],
        each.join(", "),
        last["p50_us"],
        last["p99_us"],
        errors
    )
}

fn ratio_line(r: &Value) -> String {
    let shown = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{x:.2}"));
    let each: Vec<String> = r["per_round"]
        .as_array()
        .map(|v| v.iter().map(|x| shown(x.as_f64())).collect())
        .unwrap_or_default();
    format!(
        "| {} | {} | {} |\n",
        r["name"].as_str().unwrap_or(""),
        shown(r["median"].as_f64()),
        each.join(", ")
    )
}
