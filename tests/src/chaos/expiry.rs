//! Expiry under faults: handles minted with TTLs of a few seconds, read back
//! on every node (linearizable reads, each node asked directly) until past
//! their expiry, and a checker over the history: no handle is gone before
//! its TTL or readable after it, within the bound, on any node.
//!
//! The test's clock is the machine's: nodes whose clocks are not shifted
//! read the same time, so a handle acknowledged between `invoke` and
//! `complete` with TTL `t` expires between `invoke + t` and `complete + t`
//! of the history's clock, as far as a correct cluster goes.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use handlestore_client::{Client, ClusterHandleStore, Consistency, Error, HandleStore, Ttl};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::history::{History, Outcome, Record, around};

/// The history's name of an expiring mint and of a read of one.
pub const MINT: &str = "expiring_mint";
pub const READ: &str = "expiry_read";
/// The handle store they live in.
const STORE: &str = "expiring";
/// How long after its expiry a handle is still read.
const READ_PAST: Duration = Duration::from_secs(2);

/// Handles minted and acknowledged, for the readers: (id, expires no later
/// than, in the history's µs).
type Minted = Arc<Mutex<VecDeque<(String, u64)>>>;

/// Starts the minter and one reader per endpoint; they run until `stop`.
pub fn spawn(
    creds: &crate::creds::Credentials,
    endpoints: &[String],
    namespace: &str,
    history: Arc<History>,
    stop: Arc<AtomicBool>,
    seed: u64,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<()>>> {
    let minted: Minted = Arc::default();
    let client = creds
        .builder(endpoints.to_vec())
        .namespace(namespace)
        .deadline(Duration::from_secs(3))
        .attempt_timeout(Duration::from_secs(1))
        .build()?;
    let mut tasks = vec![tokio::spawn(mint(
        client,
        minted.clone(),
        history.clone(),
        stop.clone(),
        seed,
    ))];
    for (i, e) in endpoints.iter().enumerate() {
        // One node only, one attempt: the answer is that node's.
        let client = creds
            .builder([e.clone()])
            .namespace(namespace)
            .deadline(Duration::from_millis(1_500))
            .attempt_timeout(Duration::from_secs(1))
            .backoff(Duration::from_secs(2), Duration::from_secs(2))
            .build()?;
        let (m, h, s) = (minted.clone(), history.clone(), stop.clone());
        tasks.push(tokio::spawn(read(i as u64 + 1, client, m, h, s, seed ^ i as u64)));
    }
    Ok(tasks)
}

async fn mint(client: Client, minted: Minted, history: Arc<History>, stop: Arc<AtomicBool>, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let store: ClusterHandleStore<Value> = client.handle_store(STORE).build();
    while !stop.load(Ordering::Relaxed) {
        let ttl_ms: u64 = rng.random_range(1_000..4_000);
        let invoke_us = history.now();
        let res = store
            .mint(json!(ttl_ms), Ttl::After(Duration::from_millis(ttl_ms)))
            .await;
        let complete_us = history.now();
        let (key, outcome, output) = match res {
            Ok(id) => {
                let mut m = minted.lock().unwrap_or_else(|p| p.into_inner());
                m.push_back((id.clone(), complete_us + ttl_ms * 1_000));
                (id, Outcome::Ok, Value::Null)
            }
            Err(e) => (String::new(), super::workload::classify(&e), json!(e.to_string())),
        };
        history.push(Record {
            client: 400,
            kind: MINT,
            key,
            input: json!({ "ttl_ms": ttl_ms }),
            output,
            invoke_us,
            complete_us,
            outcome,
        });
        tokio::time::sleep(Duration::from_millis(rng.random_range(100..300))).await;
    }
}

async fn read(node: u64, client: Client, minted: Minted, history: Arc<History>, stop: Arc<AtomicBool>, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let store: ClusterHandleStore<Value> = client.handle_store(STORE).build();
    while !stop.load(Ordering::Relaxed) {
        let Some(id) = pick(&minted, history.now(), &mut rng) else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let invoke_us = history.now();
        let res = store.get_versioned_with(&id, Consistency::Linearizable).await;
        let (outcome, output) = match res {
            Ok(v) => (Outcome::Ok, json!({ "node": node, "live": v.is_some() })),
            Err(e) => (
                Outcome::Fail,
                json!({ "node": node, "error": e.to_string(), "clock": clock_refusal(&e) }),
            ),
        };
        history.push(Record {
            client: 500 + node as usize,
            kind: READ,
            key: id,
            input: Value::Null,
            output,
            invoke_us,
            complete_us: history.now(),
            outcome,
        });
        tokio::time::sleep(Duration::from_millis(rng.random_range(10..40))).await;
    }
}

/// Whether a read was refused because the node's clock is not trusted.
pub fn clock_refusal(e: &Error) -> bool {
    e.to_string().contains("clock")
}

/// A handle to read: one still within [`READ_PAST`] of its expiry; the
/// older ones are dropped.
fn pick(minted: &Minted, now_us: u64, rng: &mut StdRng) -> Option<String> {
    let mut m = minted.lock().unwrap_or_else(|p| p.into_inner());
    let past = READ_PAST.as_micros() as u64;
    while m.front().is_some_and(|(_, until)| until + past < now_us) {
        m.pop_front();
    }
    if m.is_empty() {
        return None;
    }
    let i = rng.random_range(0..m.len());
    Some(m[i].0.clone())
}

/// What the checker found.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct ExpiryChecks {
    pub handles: usize,
    /// Answered reads, live and gone.
    pub reads_live: usize,
    pub reads_gone: usize,
    /// Reads a node refused because its clock was not trusted.
    pub refused_for_clock: usize,
    pub violations: Vec<String>,
}

/// Checks every answered read against its handle's TTL: a handle must read
/// as live until `invoke + ttl - bound` and as gone from `complete + ttl +
/// bound` (history µs).
pub fn check(records: &[Record], bound: Duration) -> ExpiryChecks {
    let bound_us = bound.as_micros() as u64;
    let mut c = ExpiryChecks::default();
    let mints: HashMap<&str, &Record> = records
        .iter()
        .filter(|r| r.kind == MINT && r.outcome == Outcome::Ok)
        .map(|r| (r.key.as_str(), r))
        .collect();
    c.handles = mints.len();
    for r in records.iter().filter(|r| r.kind == READ) {
        if r.outcome != Outcome::Ok {
            c.refused_for_clock += r.output["clock"].as_bool().unwrap_or(false) as usize;
            continue;
        }
        let Some(m) = mints.get(r.key.as_str()) else { continue };
        let ttl_us = m.input["ttl_ms"].as_u64().unwrap_or(0) * 1_000;
        let live = r.output["live"].as_bool().unwrap_or(false);
        let node = &r.output["node"];
        let (earliest, latest) = (m.invoke_us + ttl_us, m.complete_us + ttl_us);
        let wrong = if live {
            c.reads_live += 1;
            (r.invoke_us > latest + bound_us).then(|| format!("READABLE AFTER ITS TTL on node {node}"))
        } else {
            c.reads_gone += 1;
            (r.complete_us + bound_us < earliest).then(|| format!("GONE BEFORE ITS TTL on node {node}"))
        };
        if let Some(what) = wrong {
            c.violations.push(format!(
                "{what}: handle {} (ttl {} ms) expires in [{:.3}s, {:.3}s], read [{:.3}s, {:.3}s]\n{}",
                r.key,
                ttl_us / 1_000,
                earliest as f64 / 1e6,
                latest as f64 / 1e6,
                r.invoke_us as f64 / 1e6,
                r.complete_us as f64 / 1e6,
                around(records, &r.key, Some(r.invoke_us), 12)
            ));
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: &'static str, key: &str, t: (u64, u64), outcome: Outcome, input: Value, output: Value) -> Record {
        Record {
            client: 0,
            kind,
            key: key.into(),
            input,
            output,
            invoke_us: t.0,
            complete_us: t.1,
            outcome,
        }
    }

    #[test]
    fn reads_are_judged_against_the_ttl_with_the_bound() {
        let s = 1_000_000;
        let mint = rec(
            MINT,
            "h",
            (0, s / 10),
            Outcome::Ok,
            json!({"ttl_ms": 2_000}),
            Value::Null,
        );
        let read = |t: u64, live: bool| {
            rec(
                READ,
                "h",
                (t, t + 1_000),
                Outcome::Ok,
                Value::Null,
                json!({"node": 1, "live": live}),
            )
        };
        let bound = Duration::from_millis(500);
        let ok = [
            mint.clone(),
            read(s, true),
            read(3 * s, false),
            read(2 * s, false),
            read(2 * s, true),
        ];
        let c = check(&ok, bound);
        assert!(c.violations.is_empty(), "{:?}", c.violations);
        assert_eq!((c.reads_live, c.reads_gone), (2, 2));
        let early = [mint.clone(), read(s, false)];
        assert!(check(&early, bound).violations[0].contains("GONE BEFORE"));
        let late = [mint, read(3 * s, true)];
        assert!(check(&late, bound).violations[0].contains("READABLE AFTER"));
    }

    #[test]
    fn refusals_are_counted_not_judged() {
        let mint = rec(MINT, "h", (0, 1), Outcome::Ok, json!({"ttl_ms": 1}), Value::Null);
        let refused = rec(
            READ,
            "h",
            (9_000_000, 9_000_001),
            Outcome::Fail,
            Value::Null,
            json!({"node": 2, "error": "clock", "clock": true}),
        );
        let c = check(&[mint, refused], Duration::ZERO);
        assert!(c.violations.is_empty());
        assert_eq!(c.refused_for_clock, 1);
    }
}
