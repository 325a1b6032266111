//! Measuring one cell: its workers started together, each operation timed
//! into a histogram, the CPU of the system's servers and of this process
//! read before and after, and the progress bar moved as the cell runs.
//! And, before the cells of a system whose servers are JVMs, its operation
//! run unmeasured until their JIT is quiet.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use indicatif::ProgressBar;

use super::mem::PeakRss;
use super::workload::Op;
use super::{Length, Row, cpu};

/// What one measured cell is: whose operation, how many workers, how long
/// (or how many operations), and which processes are the system's servers
/// (for CPU per operation).
pub(super) struct Cell<'a> {
    pub round: usize,
    pub system: &'a str,
    pub name: &'a str,
    pub concurrency: usize,
    pub length: Length,
    pub pids: &'a [u32],
}

/// What one worker measured: the latencies of the operations that
/// succeeded, the errors, and the first error.
type Measured = (Histogram<u64>, u64, Option<String>);

fn histogram() -> Histogram<u64> {
    Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds")
}

/// Runs `op` with `concurrency` workers for the cell's length.
pub(super) async fn measure(cell: Cell<'_>, op: Op, bar: &ProgressBar) -> Row {
    let Cell {
        round,
        system,
        name,
        concurrency,
        length,
        pids,
    } = cell;
    bar.set_message(format!("round {round}: {system} {name} x{concurrency}"));
    // Operations taken from the pool (Length::Ops), and operations ended.
    let taken = Arc::new(AtomicU64::new(0));
    let ended = Arc::new(AtomicU64::new(0));
    // Every worker prepares (connects), then all start together.
    let ready = Arc::new(tokio::sync::Barrier::new(concurrency + 1));
    let tasks: Vec<_> = (0..concurrency)
        .map(|w| {
            let pool = Pool {
                length,
                taken: taken.clone(),
                ended: ended.clone(),
            };
            tokio::spawn(worker(op.clone(), w, pool, ready.clone()))
        })
        .collect();
    ready.wait().await;
    let memory = PeakRss::start(pids);
    let start = Instant::now();
    let (server_before, client_before) = (cpu::total_cpu(pids), cpu::own_cpu());
    let base = bar.position();
    let ticker = tick(bar, ended, length, start, base);
    let mut all = histogram();
    let (mut errors, mut first_error) = (0, None);
    for t in tasks {
        if let Ok((h, e, f)) = t.await {
            let _ = all.add(&h);
            errors += e;
            if first_error.is_none() {
                first_error = f;
            }
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let (server_after, client_after) = (cpu::total_cpu(pids), cpu::own_cpu());
    let server_peak_rss_mib = memory.stop().await;
    ticker.abort();
    let _ = ticker.await;
    bar.set_position(base + length.units());
    let ops = all.len();
    Row {
        round: Some(round),
        system: system.to_string(),
        op: name.to_string(),
        concurrency,
        ops,
        errors,
        seconds,
        throughput: ops as f64 / seconds,
        p50_us: all.value_at_quantile(0.5),
        p99_us: all.value_at_quantile(0.99),
        p999_us: all.value_at_quantile(0.999),
        server_cpu_us: cpu::per_op_us(server_before, server_after, ops),
        client_cpu_us: cpu::per_op_us(client_before, client_after, ops),
        server_peak_rss_mib,
        warmup_s: None,
        first_error,
    }
}

/// How long the workers of a cell go on: its length, the operations taken
/// from its pool (`Length::Ops`), and the operations ended (for the bar).
struct Pool {
    length: Length,
    taken: Arc<AtomicU64>,
    ended: Arc<AtomicU64>,
}

/// One worker: prepares, waits for the others at `ready`, then runs `op`
/// until the cell's time is up or its pool is empty.
async fn worker(mut op: Op, w: usize, pool: Pool, ready: Arc<tokio::sync::Barrier>) -> Measured {
    let mut h = histogram();
    let (mut errors, mut first_error) = (0u64, None);
    let prepared = op.prepare().await;
    ready.wait().await;
    if let Err(e) = prepared {
        return (h, 1, Some(e));
    }
    let began = Instant::now();
    let mut i = 0u64;
    loop {
        let more = match pool.length {
            Length::For(d) => began.elapsed() < d,
            Length::Ops(n) => pool.taken.fetch_add(1, Ordering::Relaxed) < n,
        };
        if !more {
            break;
        }
        let t = Instant::now();
        match op.once(w, i).await {
            Ok(()) => {
                let _ = h.record((t.elapsed().as_micros() as u64).max(1));
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(e);
            }
        }
        i += 1;
        if let Length::Ops(_) = pool.length {
            pool.ended.fetch_add(1, Ordering::Relaxed);
        }
    }
    (h, errors, first_error)
}

/// Moves the bar from `base` by the cell's time, or by its operations
/// ended, every 200 ms until aborted; the caller sets it to the cell's end
/// once every worker is done.
fn tick(
    bar: &ProgressBar,
    ended: Arc<AtomicU64>,
    length: Length,
    start: Instant,
    base: u64,
) -> tokio::task::JoinHandle<()> {
    let bar = bar.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let now = match length {
                Length::For(_) => start.elapsed().as_millis() as u64,
                Length::Ops(_) => ended.load(Ordering::Relaxed),
            };
            bar.set_position(base + now.min(length.units()));
        }
    })
}

/// How often the warm-up reads the JIT's CPU.
const WARM_SLICE: Duration = Duration::from_secs(2);

/// The share of a slice the JIT may spend compiling and still count as
/// quiet (as client/java/bench's `Warmup`).
const QUIET: f64 = 0.05;

/// The operations a warm-up runs at least before a quiet slice ends it:
/// 2,000 cart flows are 6,000 tool calls on each of two replicas, past the
/// 5,000 invocations after which HotSpot's tiered policy hands a method to
/// C2, for code run once per call. At the few dozen flows a second of a
/// busy machine the JIT compiles in bursts, with quiet slices between
/// them long before that code is compiled.
const MIN_WARM_OPS: u64 = 2000;

/// What a warm-up did: for how long, how many operations ended (and how
/// many of them failed), and whether the JIT was quiet at its end (false:
/// its time limit came first, or no JIT thread was seen).
pub(super) struct WarmUp {
    pub seconds: f64,
    pub ops: u64,
    pub errors: u64,
    pub quiet: bool,
}

/// Runs `op` with `concurrency` workers, unmeasured, until a slice of
/// [`WARM_SLICE`] in which the JIT compiler threads of `pids` spent under
/// [`QUIET`] of it compiling, once [`MIN_WARM_OPS`] operations have ended,
/// or for `limit` at most. A fresh JVM compiles
/// its hot code for 10-20 s of calls (client/java/bench found so): cells
/// measured before that count the JIT's CPU as the server's, at the speed
/// of code not yet compiled.
pub(super) async fn warm_up(op: Op, concurrency: usize, pids: &[u32], limit: Duration) -> WarmUp {
    let stop = Arc::new(AtomicBool::new(false));
    let ended = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..concurrency)
        .map(|w| {
            let (mut op, stop, ended, failed) = (op.clone(), stop.clone(), ended.clone(), failed.clone());
            tokio::spawn(async move {
                if op.prepare().await.is_err() {
                    failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if op.once(w, i).await.is_err() {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    ended.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            })
        })
        .collect();
    let start = Instant::now();
    let mut jit = cpu::jit_threads_cpu(pids);
    let mut quiet = false;
    while start.elapsed() < limit {
        let slice = WARM_SLICE.min(limit.saturating_sub(start.elapsed()));
        tokio::time::sleep(slice).await;
        let now = cpu::jit_threads_cpu(pids);
        let compiling = cpu::jit_cpu_since(&jit, &now);
        let enough = ended.load(Ordering::Relaxed) >= MIN_WARM_OPS;
        if enough && !now.is_empty() && compiling.as_secs_f64() < QUIET * slice.as_secs_f64() {
            quiet = true;
            break;
        }
        jit = now;
    }
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    WarmUp {
        seconds: start.elapsed().as_secs_f64(),
        ops: ended.load(Ordering::Relaxed),
        errors: failed.load(Ordering::Relaxed),
        quiet,
    }
}
