//! Write unavailability during a rolling restart: a three-node cluster at
//! the node's default timings, steady writers, and each node in turn
//! stopped with SIGTERM, started again and caught up; once with leaders
//! handing leadership over as they stop (the default) and once without
//! (`--handover-on-stop false`), alternated over `--rounds`.
//!
//! target/release/rolling [--rounds 3] [--writers 4] [--out target/rolling]
//!
//! Reports, per run, the longest gap between two acknowledged writes (the
//! unavailability a client sees), the writes acknowledged, and the gap
//! around each leader's stop. Writes results.json to --out.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use handlestore_client::{HandleStore, Ttl};
use handlestore_tests::TestCluster;
use serde::Serialize;

#[derive(Parser, Debug)]
#[command(about = "Write unavailability during a rolling restart, with and without leader handover")]
struct Args {
    /// Runs of each kind (alternated).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Concurrent writers.
    #[arg(long, default_value_t = 4)]
    writers: usize,
    /// Where results.json goes.
    #[arg(long, default_value = "target/rolling")]
    out: PathBuf,
}

/// One rolling restart.
#[derive(Debug, Clone, Serialize)]
struct Run {
    handover: bool,
    /// The longest time without an acknowledged write, in ms.
    longest_gap_ms: u64,
    /// The longest gap around the stop of a node that led, in ms.
    leader_stop_gap_ms: u64,
    acknowledged: usize,
    failed: u64,
    seconds: f64,
}

/// Writers minting until told to stop; each acknowledged write's time.
struct Writers {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<(Vec<Instant>, u64)>>,
}

impl Writers {
    fn start(cluster: &TestCluster, n: usize) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let store = Arc::new(cluster.client().handle_store::<u64>("rolling").build());
        let tasks = (0..n)
            .map(|_| {
                let (store, stop) = (store.clone(), stop.clone());
                tokio::spawn(async move {
                    let (mut acked, mut failed) = (Vec::new(), 0);
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        i += 1;
                        match store.mint(i, Ttl::After(Duration::from_secs(600))).await {
                            Ok(_) => acked.push(Instant::now()),
                            Err(_) => failed += 1,
                        }
                    }
                    (acked, failed)
                })
            })
            .collect();
        Self { stop, tasks }
    }

    async fn finish(self) -> (Vec<Instant>, u64) {
        self.stop.store(true, Ordering::Relaxed);
        let (mut all, mut failed) = (Vec::new(), 0);
        for t in self.tasks {
            let (acked, f) = t.await.expect("writer");
            all.extend(acked);
            failed += f;
        }
        all.sort();
        (all, failed)
    }
}

/// The longest gap between consecutive acknowledgements within `from..to`.
fn longest_gap(acked: &[Instant], from: Instant, to: Instant) -> Duration {
    acked
        .windows(2)
        .filter(|w| w[1] >= from && w[0] <= to)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default()
}

async fn rolling_restart(handover: bool, writers: usize) -> Result<Run> {
    let mut cluster = TestCluster::builder(3)
        .args([
            "--heartbeat",
            "100ms",
            "--election-timeout",
            "800ms",
            "--handover-on-stop",
            if handover { "true" } else { "false" },
        ])
        .start()
        .await?;
    let started = Instant::now();
    let w = Writers::start(&cluster, writers);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut leader_stops = Vec::new();
    for id in 1..=3 {
        let leader = cluster.wait_leader(Duration::from_secs(30)).await?;
        let at = Instant::now();
        cluster.stop(id).with_context(|| format!("stopping node {id}"))?;
        cluster.wait_leader(Duration::from_secs(30)).await?;
        if leader == id {
            leader_stops.push((at, Instant::now() + Duration::from_secs(1)));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        cluster.restart(id)?;
        let leader = cluster.wait_leader(Duration::from_secs(30)).await?;
        let applied = cluster.status(leader).await?.applied_index;
        cluster.wait_applied(id, applied, Duration::from_secs(30)).await?;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let (acked, failed) = w.finish().await;
    let end = Instant::now();
    Ok(Run {
        handover,
        longest_gap_ms: longest_gap(&acked, started, end).as_millis() as u64,
        leader_stop_gap_ms: leader_stops
            .iter()
            .map(|(from, to)| longest_gap(&acked, *from, *to))
            .max()
            .unwrap_or_default()
            .as_millis() as u64,
        acknowledged: acked.len(),
        failed,
        seconds: (end - started).as_secs_f64(),
    })
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let mut runs = Vec::new();
    for round in 0..args.rounds {
        // Alternated, so a drift of the machine falls on both kinds alike.
        let order = if round % 2 == 0 { [true, false] } else { [false, true] };
        for handover in order {
            let run = rolling_restart(handover, args.writers).await?;
            println!(
                "round {} handover={:<5} longest gap {:>5} ms, around the leader's stop {:>5} ms, {} writes ({} failed) in {:.0}s",
                round + 1,
                run.handover,
                run.longest_gap_ms,
                run.leader_stop_gap_ms,
                run.acknowledged,
                run.failed,
                run.seconds
            );
            runs.push(run);
        }
    }
    std::fs::create_dir_all(&args.out)?;
    let path = args.out.join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(&runs)?)?;
    println!("wrote {}", path.display());
    Ok(())
}
