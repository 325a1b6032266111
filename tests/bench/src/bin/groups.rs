//! The cost of many Raft groups sharing a node (docs/dev/scale.md §7):
//! three nodes in one process, each with one RocksDB and G openraft
//! groups in it (`handlestore_bench::groups` says how they are built).
//!
//! target/release/groups \
//!     [--groups 1,4,16,64] [--rounds 3] [--clients 64] [--duration 10s] \
//!     [--warmup 2s] [--dir /path/on/the/disk] [--out target/groups]
//!
//! Cells, each in a process of its own with fresh databases:
//! - spread: `--clients` writers, client i on group i mod G, one merged
//!   log writer per node; and the same with a writer per group (G > 1);
//! - hot: every client on group 0, the other G - 1 groups idle (G > 1);
//! - idle: no writes, `--duration` with every group awake, then as long
//!   quiesced.
//!
//! Prints the medians over rounds as markdown tables (writes/s with the
//! rounds' spread) and writes them with every round's figures to
//! `--out`/table.md and results.json.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Parser;
use handlestore_bench::groups::cells::Load;
use handlestore_bench::groups::plan::{self, Cell, Spec};
use handlestore_bench::groups::report;

#[derive(Parser, Debug, Clone)]
#[command(about = "What Raft groups sharing a node cost: writes/s and p99 at G groups, one hot group, idle groups")]
struct Args {
    /// The group counts to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    groups: Vec<u32>,
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// Concurrent writers in the write cells.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    clients: u32,
    /// Each measured phase (an idle cell has two).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    duration: Duration,
    #[arg(long, default_value = "2s", value_parser = humantime::parse_duration)]
    warmup: Duration,
    /// Where the nodes' databases go (the disk to measure).
    #[arg(long)]
    dir: Option<PathBuf>,
    #[arg(long, default_value = "target/groups")]
    out: PathBuf,
    /// Runs one cell (its spec as JSON) in this process and prints it.
    #[arg(long, hide = true)]
    cell: Option<String>,
}

/// Runs `spec` in a child process (this binary with `--cell`).
fn run_child(args: &Args, spec: Spec, round: u64) -> Result<Cell> {
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args(["--cell", &serde_json::to_string(&spec)?]);
    cmd.args(["--clients", &args.clients.to_string()]);
    cmd.args(["--duration", &humantime::format_duration(args.duration).to_string()]);
    cmd.args(["--warmup", &humantime::format_duration(args.warmup).to_string()]);
    if let Some(d) = &args.dir {
        cmd.arg("--dir").arg(d);
    }
    let out = cmd.stderr(std::process::Stdio::inherit()).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    match (out.status.success(), text.lines().rev().find(|l| l.starts_with('{'))) {
        (true, Some(line)) => Ok(Cell {
            round,
            ..serde_json::from_str(line)?
        }),
        _ => bail!("cell {spec:?} failed ({}): {text}", out.status),
    }
}

/// The child's side: one cell on fresh databases in a new directory.
fn one_cell(args: &Args, spec: &str) -> Result<Cell> {
    let spec: Spec = serde_json::from_str(spec).context("--cell takes a cell's spec as JSON")?;
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(&base).with_context(|| format!("a directory in {}", base.display()))?;
    let load = Load {
        clients: args.clients as usize,
        warmup: args.warmup,
        duration: args.duration,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let cell = runtime.block_on(plan::measure(dir.path(), spec, load))?;
    drop(dir);
    Ok(cell)
}

fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(spec) = &args.cell {
        let cell = one_cell(&args, spec)?;
        println!("{}", serde_json::to_string(&cell)?);
        // The nodes' threads run until the process ends.
        std::process::exit(0);
    }
    let specs = plan::plan(&args.groups);
    let mut cells = Vec::new();
    for round in 1..=args.rounds {
        for &spec in &specs {
            let cell = run_child(&args, spec, round)?;
            eprintln!("r{round} {}", report::line(&cell));
            cells.push(cell);
        }
    }
    let table = report::tables(&specs, &cells);
    println!("{table}");
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(args.out.join("table.md"), &table)?;
    let doc = serde_json::json!({
        "what": "Raft groups sharing a node: three nodes in one process, one RocksDB each, G openraft 0.9 groups",
        "args": format!("{args:?}"),
        "cells": cells,
    });
    std::fs::write(args.out.join("results.json"), serde_json::to_string_pretty(&doc)?)?;
    eprintln!("results: {}", args.out.join("results.json").display());
    Ok(())
}
