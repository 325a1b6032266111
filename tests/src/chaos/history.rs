//! The recorded history: every client operation with its invoke and
//! complete times and its outcome, as etcd's robustness tests record it.

use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

/// What a client knows about an operation's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Acknowledged.
    Ok,
    /// Definitely not applied (refused).
    Fail,
    /// Timed out or the connection broke: may or may not have been applied.
    Unknown,
}

#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub client: usize,
    /// "create_cart", "add_item", "get_cart", "checkout", "put", "get", "mint", ...
    pub kind: &'static str,
    /// The cart, handle or state key the operation is about.
    pub key: String,
    pub input: Value,
    pub output: Value,
    /// Microseconds since the run started.
    pub invoke_us: u64,
    pub complete_us: u64,
    pub outcome: Outcome,
}

/// A thread-safe, append-only history.
pub struct History {
    start: Instant,
    records: Mutex<Vec<Record>>,
}

impl Default for History {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            records: Mutex::new(Vec::new()),
        }
    }
}

impl History {
    pub fn now(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    pub fn push(&self, r: Record) {
        self.records.lock().unwrap_or_else(|p| p.into_inner()).push(r);
    }

    pub fn snapshot(&self) -> Vec<Record> {
        self.records.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The records about `key`, in invoke order, around a point in time: what
/// a failing run prints.
pub fn around(records: &[Record], key: &str, at_us: Option<u64>, max: usize) -> String {
    let mut mine: Vec<&Record> = records.iter().filter(|r| r.key == key).collect();
    mine.sort_by_key(|r| r.invoke_us);
    let center = at_us
        .and_then(|t| mine.iter().position(|r| r.invoke_us >= t))
        .unwrap_or(mine.len().saturating_sub(max / 2));
    let from = center.saturating_sub(max / 2);
    mine.iter()
        .skip(from)
        .take(max)
        .map(|r| {
            format!(
                "  [{:>10.3}s .. {:>10.3}s] client {:>2} {:<11} {:<8?} in={} out={}",
                r.invoke_us as f64 / 1e6,
                r.complete_us as f64 / 1e6,
                r.client,
                r.kind,
                r.outcome,
                r.input,
                r.output
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
