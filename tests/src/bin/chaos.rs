//! Long chaos runs (soak testing):
//!
//! ```sh
//! target/release/chaos --duration 30m --seed 7 [--nodes 5] [--secure] [--faults kill_quorum,pause_leader] [--report report.json]
//! ```
//!
//! Prints the report; exits 1 if any check failed (with the seed and the
//! history around each violation).

use std::time::Duration;

use clap::Parser;
use handlestore_tests::chaos::faults::FaultKind;
use handlestore_tests::chaos::{ChaosConfig, run};

#[derive(Parser, Debug)]
#[command(about = "handlestore chaos suite: faults, a recorded history, and checkers")]
struct Args {
    /// How long to inject faults (e.g. 2m, 30m).
    #[arg(long, default_value = "2m", value_parser = humantime::parse_duration)]
    duration: Duration,
    /// Seed of the fault schedule and the traffic.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Cluster size (3 or 5).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// MCP clients running cart flows.
    #[arg(long, default_value_t = 6)]
    clients: usize,
    /// Write the report as JSON here.
    #[arg(long)]
    report: Option<std::path::PathBuf>,
    /// Run the lossy control (one in-memory cart server) instead.
    #[arg(long)]
    lossy: bool,
    /// Secure the cluster as production should be (TLS, peer mutual TLS,
    /// auth: every client and cart server sends a token).
    #[arg(long)]
    secure: bool,
    /// Only these faults (default: all), e.g. kill_quorum,pause_leader.
    #[arg(long, value_delimiter = ',')]
    faults: Vec<FaultKind>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut cfg = ChaosConfig::new(args.seed, args.duration, args.nodes);
    cfg.cart_clients = args.clients;
    cfg.lossy = args.lossy;
    cfg.secure = args.secure;
    if !args.faults.is_empty() {
        cfg.faults = args.faults.clone();
    }
    let report = run(cfg).await?;
    println!("{}", report.summary());
    if let Some(path) = &args.report {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
        println!("report written to {}", path.display());
    }
    if !report.passed() {
        std::process::exit(1);
    }
    Ok(())
}
