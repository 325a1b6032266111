//! The cells: writes spread over every group or all on one, and idle
//! groups awake and quiesced; what each costs in CPU, syncs and frames.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::WRITE_BYTES;
use super::cluster::{Cluster, Counts};
use crate::cpu::other_threads_cpu;

/// What a cell runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The clients' writes spread evenly over every group.
    Spread,
    /// Every client writes to group 0; the others stay idle (awake).
    Hot,
    /// No writes: what idle groups cost, awake and then quiesced.
    Idle,
}

/// A cell's load: how many clients, how long.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub clients: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

/// A write cell's figures.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Writes {
    pub writes: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub seconds: f64,
    pub writes_per_s: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// Log syncs per second, per node (the writers' `FlushWAL(sync)`s).
    pub syncs_per_s: f64,
    /// WAL syncs per second per node as RocksDB counted them.
    pub wal_syncs_per_s: f64,
    /// Writes acknowledged per log sync of a node (every group's).
    pub writes_per_sync: f64,
    /// The three nodes' CPU per write (the load generator's left out).
    pub cpu_us_per_write: f64,
    /// Frames the nodes sent per write, and socket writes per write.
    pub frames_per_write: f64,
    pub socket_writes_per_write: f64,
}

/// What idle groups cost the three nodes together, per second.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Quiet {
    pub cpu_ms_per_s: f64,
    pub frames_per_s: f64,
    pub bytes_per_s: f64,
    pub socket_writes_per_s: f64,
}

/// The CPU the nodes spent so far: every thread of this process but the
/// load generator's (this one: cells run on the main thread's loop).
fn nodes_cpu() -> Duration {
    other_threads_cpu().unwrap_or_default()
}

struct Phase {
    hist: hdrhistogram::Histogram<u64>,
    writes: u64,
    errors: u64,
    first_error: Option<String>,
}

/// `clients` writers on this thread for `d`; client i writes to group
/// i mod G (spread) or to group 0 (hot).
async fn phase(cluster: &Cluster, kind: Kind, clients: usize, d: Duration) -> Phase {
    let end = Instant::now() + d;
    let runs = (0..clients).map(|i| {
        let gid = match kind {
            Kind::Hot => 0,
            _ => i as u32 % cluster.groups(),
        };
        let proposer = cluster.proposer(gid).clone();
        async move {
            let mut p = Phase {
                hist: hdrhistogram::Histogram::new(3).expect("3 significant figures"),
                writes: 0,
                errors: 0,
                first_error: None,
            };
            while Instant::now() < end {
                let t = Instant::now();
                match proposer.write(vec![i as u8; WRITE_BYTES]).await {
                    Ok(_) => {
                        p.writes += 1;
                        let _ = p.hist.record(t.elapsed().as_micros() as u64);
                    }
                    Err(e) => {
                        p.errors += 1;
                        p.first_error.get_or_insert(e);
                    }
                }
            }
            p
        }
    });
    let mut all = futures::future::join_all(runs).await.into_iter();
    let mut total = all.next().expect("at least one client");
    for p in all {
        total.hist.add(&p.hist).expect("same bounds");
        total.writes += p.writes;
        total.errors += p.errors;
        total.first_error = total.first_error.or(p.first_error);
    }
    total
}

/// A write cell: a warm-up, then the measured phase.
pub async fn writes(cluster: &Cluster, kind: Kind, load: Load) -> Writes {
    phase(cluster, kind, load.clients, load.warmup).await;
    let (c0, cpu0, t0) = (cluster.counts(), nodes_cpu(), Instant::now());
    let p = phase(cluster, kind, load.clients, load.duration).await;
    let (c, cpu, secs) = (cluster.counts() - c0, nodes_cpu() - cpu0, t0.elapsed().as_secs_f64());
    let per_write = |v: u64| v as f64 / p.writes.max(1) as f64;
    Writes {
        writes: p.writes,
        errors: p.errors,
        first_error: p.first_error,
        seconds: secs,
        writes_per_s: p.writes as f64 / secs,
        p50_us: p.hist.value_at_quantile(0.5),
        p99_us: p.hist.value_at_quantile(0.99),
        syncs_per_s: c.syncs as f64 / 3.0 / secs,
        wal_syncs_per_s: c.wal_syncs as f64 / 3.0 / secs,
        writes_per_sync: p.writes as f64 * 3.0 / c.syncs.max(1) as f64,
        cpu_us_per_write: cpu.as_secs_f64() * 1e6 / p.writes.max(1) as f64,
        frames_per_write: per_write(c.frames),
        socket_writes_per_write: per_write(c.socket_writes),
    }
}

/// `d` of idleness, after a second to settle.
async fn quiet(cluster: &Cluster, d: Duration) -> Quiet {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (c0, cpu0, t0) = (cluster.counts(), nodes_cpu(), Instant::now());
    tokio::time::sleep(d).await;
    let (c, cpu, secs): (Counts, Duration, f64) =
        (cluster.counts() - c0, nodes_cpu() - cpu0, t0.elapsed().as_secs_f64());
    Quiet {
        cpu_ms_per_s: cpu.as_secs_f64() * 1e3 / secs,
        frames_per_s: c.frames as f64 / secs,
        bytes_per_s: c.bytes as f64 / secs,
        socket_writes_per_s: c.socket_writes as f64 / secs,
    }
}

/// The idle cell: every group awake, then every group quiesced.
pub async fn idle(cluster: &Cluster, d: Duration) -> (Quiet, Quiet) {
    let awake = quiet(cluster, d).await;
    cluster.set_quiesced(true);
    let quiesced = quiet(cluster, d).await;
    cluster.set_quiesced(false);
    (awake, quiesced)
}
