//! Watch consumers: clients that follow the minted handles (store "mints"
//! of namespace "chaos") through every fault, each resuming on another
//! node when its node dies, pauses or is cut off; and their checker: every
//! acknowledged mint is delivered to every watcher exactly once, and
//! changes come in revision order.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;
use handlestore_client::{ChangeKind, Client, StateTool, StateValue, StoreOptions, Watch, WatchOptions, WatchTarget};
use serde::Serialize;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::history::{Outcome, Record};
use crate::creds::Credentials;

/// How long a watcher may take, after the traffic stopped, to reach the
/// last revision written.
const DRAIN: Duration = Duration::from_secs(60);

/// What one watcher received.
#[derive(Debug, Default)]
pub struct Delivered {
    /// (revision, handle id) of every put, in the order received.
    pub puts: Vec<(u64, String)>,
    /// Why it stopped early, if it did.
    pub error: Option<String>,
}

/// The watchers, established before the traffic they watch starts.
pub struct Watchers {
    tasks: Vec<JoinHandle<Delivered>>,
}

impl Watchers {
    /// Establishes `n` watches, then follows them until `stop`, and after
    /// it until the revision of a write made then.
    pub async fn start(creds: &Credentials, endpoints: &[String], n: usize, stop: &Arc<AtomicBool>) -> Result<Self> {
        let mut tasks = Vec::new();
        for _ in 0..n {
            // Long enough to outlast any fault: a watcher gives up only
            // when no node takes it for a minute.
            let client = creds
                .builder(endpoints.to_vec())
                .namespace("chaos")
                .deadline(Duration::from_secs(60))
                .build()?;
            let opts = WatchOptions {
                progress: true,
                ..Default::default()
            };
            let watch = client.watch(WatchTarget::store("mints"), opts).await?;
            tasks.push(tokio::spawn(follow(client, watch, stop.clone())));
        }
        Ok(Self { tasks })
    }

    /// What each watcher received, once it reached the end.
    pub async fn finish(self) -> Vec<Delivered> {
        let mut out = Vec::new();
        for t in self.tasks {
            out.push(t.await.unwrap_or_else(|e| Delivered {
                error: Some(format!("watcher task: {e}")),
                ..Default::default()
            }));
        }
        out
    }
}

async fn follow(client: Client, mut watch: Watch, stop: Arc<AtomicBool>) -> Delivered {
    let mut got = Delivered::default();
    let mut end: Option<(u64, Instant)> = None;
    loop {
        if end.is_none() && stop.load(Ordering::Relaxed) {
            match end_revision(&client).await {
                Ok(r) => end = Some((r, Instant::now() + DRAIN)),
                Err(e) => {
                    got.error = Some(format!("writing the end marker: {e}"));
                    return got;
                }
            }
        }
        if end.is_some_and(|(r, _)| watch.position() > r) {
            return got;
        }
        // Before the end, progress notices bring `next` back every couple
        // of seconds.
        let next = match end {
            Some((r, deadline)) => match tokio::time::timeout_at(deadline, watch.next()).await {
                Ok(n) => n,
                Err(_) => {
                    got.error = Some(format!(
                        "did not reach revision {r} within {DRAIN:?} of the end (at {})",
                        watch.position()
                    ));
                    return got;
                }
            },
            None => watch.next().await,
        };
        match next {
            Ok(batch) => got.puts.extend(
                batch
                    .changes
                    .into_iter()
                    .filter(|c| c.kind == ChangeKind::Put)
                    .map(|c| (c.revision, c.key)),
            ),
            Err(e) => {
                got.error = Some(format!("watch failed at revision {}: {e}", watch.position()));
                return got;
            }
        }
    }
}

/// The revision of a write made now: once a watcher got past it, it got
/// everything acknowledged before.
async fn end_revision(client: &Client) -> handlestore_client::Result<u64> {
    let mut tries = 0;
    loop {
        let marker = StateValue::Json(serde_json::json!("end"));
        match client
            .state_tool()
            .store("watch-end", marker, StoreOptions::default())
            .await
        {
            Ok(r) => return Ok(r),
            Err(e) if tries >= 5 => return Err(e),
            Err(_) => tries += 1,
        }
    }
}

/// What the watch checker found.
#[derive(Debug, Default, Clone, Serialize)]
pub struct WatchChecks {
    pub watchers: usize,
    pub deliveries: usize,
    pub violations: Vec<String>,
}

/// Every acknowledged mint reached every watcher exactly once, in revision
/// order, and no watcher stopped early.
pub fn check(records: &[Record], delivered: &[Delivered]) -> WatchChecks {
    let acked: Vec<&str> = records
        .iter()
        .filter(|r| r.kind == "mint" && r.outcome == Outcome::Ok)
        .map(|r| r.key.as_str())
        .collect();
    let mut out = WatchChecks {
        watchers: delivered.len(),
        ..Default::default()
    };
    for (i, d) in delivered.iter().enumerate() {
        out.deliveries += d.puts.len();
        if let Some(e) = &d.error {
            out.violations.push(format!("watcher {i}: {e}"));
        }
        if let Some(w) = d.puts.windows(2).find(|w| w[1].0 < w[0].0) {
            out.violations
                .push(format!("watcher {i}: revision {} after {}", w[1].0, w[0].0));
        }
        let mut times: HashMap<&str, usize> = HashMap::new();
        for (_, k) in &d.puts {
            *times.entry(k.as_str()).or_default() += 1;
        }
        for (k, n) in times.iter().filter(|(_, n)| **n > 1).take(10) {
            out.violations
                .push(format!("watcher {i}: mint {k} delivered {n} times"));
        }
        if d.error.is_none() {
            let missing: Vec<&&str> = acked.iter().filter(|k| !times.contains_key(**k)).collect();
            if !missing.is_empty() {
                out.violations.push(format!(
                    "watcher {i}: {} acknowledged mints never delivered, e.g. {:?}",
                    missing.len(),
                    &missing[..missing.len().min(5)]
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mint(key: &str, outcome: Outcome) -> Record {
        Record {
            client: 200,
            kind: "mint",
            key: key.into(),
            input: serde_json::Value::Null,
            output: serde_json::Value::Null,
            invoke_us: 0,
            complete_us: 1,
            outcome,
        }
    }

    #[test]
    fn the_checker_catches_a_lost_a_repeated_and_a_reordered_delivery() {
        let records = [
            mint("A", Outcome::Ok),
            mint("B", Outcome::Ok),
            mint("C", Outcome::Unknown),
        ];
        let good = Delivered {
            puts: vec![(5, "A".into()), (7, "C".into()), (9, "B".into())],
            error: None,
        };
        assert!(check(&records, &[good]).violations.is_empty());
        let bad = [
            Delivered {
                puts: vec![(5, "A".into())],
                error: None,
            },
            Delivered {
                puts: vec![(5, "A".into()), (9, "B".into()), (9, "B".into())],
                error: None,
            },
            Delivered {
                puts: vec![(9, "B".into()), (5, "A".into())],
                error: None,
            },
            Delivered {
                puts: Vec::new(),
                error: Some("no node took it".into()),
            },
        ];
        let found = check(&records, &bad).violations;
        assert_eq!(found.len(), 4, "{found:#?}");
    }
}
