//! The register workload, the same on each system: a few keys, each
//! client with its own connection reading and overwriting them at random
//! (every value written once), every operation's invoke and completion
//! time recorded; then each key's history is checked for
//! linearizability (`chaos::linearizability`, as the chaos suite checks
//! handlestore's). A read that returns a value overwritten before it was
//! invoked (a stale read), or misses an acknowledged write, makes its
//! key's history fail the check.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use rand::Rng;
use serde_json::Value;

use super::writer::Writer;
use crate::chaos::linearizability::{RegEvent, RegOp, Verdict, check};

/// Every key's value before the run.
const INITIAL: &str = "init";

/// An operation that takes longer has an unknown outcome (a write) or
/// tells nothing (a read).
const OP_TIMEOUT: Duration = Duration::from_secs(3);

/// The search's bound per key: past it, the key's check is inconclusive.
const MAX_STATES: usize = 500_000;

/// The recorded operations, each with its key's index.
type Log = Arc<Mutex<Vec<(usize, RegEvent)>>>;

pub struct Registers {
    log: Log,
    keys: usize,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

/// What the check of every key found.
#[derive(Debug, Clone, Default)]
pub struct RegisterChecks {
    /// Operations that completed.
    pub completed: usize,
    /// Writes whose outcome is unknown (failed or timed out).
    pub unknown_writes: usize,
    /// Keys by verdict.
    pub linearizable: usize,
    pub violations: usize,
    pub inconclusive: usize,
}

impl Registers {
    /// Writes the initial value to `keys` keys, then starts one client
    /// per writer of `writers` on them.
    pub async fn start(writers: Vec<Writer>, keys: usize) -> Result<Self> {
        let mut names = Vec::new();
        for k in 0..keys {
            let key = writers[0].register_key(k).await?;
            writers[0].set(&key, INITIAL).await?;
            names.push(key);
        }
        let (log, stop, started): (Log, _, _) = (Arc::default(), Arc::new(AtomicBool::new(false)), Instant::now());
        let names = Arc::new(names);
        let tasks = writers
            .into_iter()
            .enumerate()
            .map(|(client, writer)| {
                let (log, stop, names) = (log.clone(), stop.clone(), names.clone());
                tokio::spawn(async move {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let k = rand::rng().random_range(0..names.len());
                        let write = rand::rng().random_bool(0.5).then(|| format!("c{client}-{n}"));
                        n += 1;
                        one_op(&writer, &log, started, (client, k, &names[k]), write).await;
                    }
                })
            })
            .collect();
        Ok(Self { log, keys, stop, tasks })
    }

    /// Stops the clients (each after the operation it is in) and checks
    /// every key's history.
    pub async fn stop_and_check(self) -> RegisterChecks {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.tasks {
            let _ = t.await;
        }
        let log = std::mem::take(&mut *self.log.lock().expect("lock"));
        let mut checks = RegisterChecks {
            completed: log.iter().filter(|(_, e)| e.complete.is_some()).count(),
            unknown_writes: log
                .iter()
                .filter(|(_, e)| e.complete.is_none() && matches!(e.op, RegOp::Write(_)))
                .count(),
            ..Default::default()
        };
        for k in 0..self.keys {
            let events: Vec<RegEvent> = log.iter().filter(|(i, _)| *i == k).map(|(_, e)| e.clone()).collect();
            let verdict = tokio::task::spawn_blocking(move || check(&events, Some(Value::from(INITIAL)), MAX_STATES))
                .await
                .unwrap_or(Verdict::Inconclusive);
            match verdict {
                Verdict::Linearizable => checks.linearizable += 1,
                Verdict::Violation => checks.violations += 1,
                Verdict::Inconclusive => checks.inconclusive += 1,
            }
        }
        checks
    }
}

/// How one operation ended.
enum Done {
    Wrote,
    Read(Option<String>),
    /// Failed or timed out: a write's outcome unknown, a read's nothing.
    Failed,
}

async fn send(writer: &Writer, key: &str, write: Option<&str>) -> Done {
    let done = match write {
        Some(value) => tokio::time::timeout(OP_TIMEOUT, writer.set(key, value))
            .await
            .map(|r| r.map(|()| Done::Wrote)),
        None => tokio::time::timeout(OP_TIMEOUT, writer.read(key))
            .await
            .map(|r| r.map(Done::Read)),
    };
    match done {
        Ok(Ok(done)) => done,
        _ => Done::Failed,
    }
}

/// One read (`write` None) or write of key `k`, recorded before it is
/// sent (a write cut short still may take effect) and completed when its
/// answer comes.
async fn one_op(
    writer: &Writer,
    log: &Log,
    started: Instant,
    (client, k, key): (usize, usize, &str),
    write: Option<String>,
) {
    let at = || started.elapsed().as_micros() as u64;
    let index = {
        let mut log = log.lock().expect("lock");
        let op = match &write {
            Some(v) => RegOp::Write(Some(Value::String(v.clone()))),
            None => RegOp::Read(None),
        };
        let event = RegEvent {
            client,
            invoke: at(),
            complete: None,
            op,
        };
        log.push((k, event));
        log.len() - 1
    };
    let done = send(writer, key, write.as_deref()).await;
    let failed = matches!(done, Done::Failed);
    {
        let mut log = log.lock().expect("lock");
        let event = &mut log[index].1;
        match done {
            Done::Wrote => event.complete = Some(at()),
            Done::Read(seen) => {
                event.op = RegOp::Read(seen.map(Value::String));
                event.complete = Some(at());
            }
            Done::Failed => {}
        }
    }
    if failed {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
