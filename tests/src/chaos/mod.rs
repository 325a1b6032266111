//! The chaos suite, modeled on etcd's tests/robustness: real nodes, two
//! stateless cart servers behind a round-robin front, MCP clients running
//! cart flows plus direct handle and state-tool traffic, faults injected at
//! random points, a recorded history, and checkers over it.

pub mod checker;
pub mod expiry;
pub mod faults;
mod final_state;
pub mod history;
pub mod leaders;
pub mod linearizability;
pub mod redeem;
pub mod report;
pub mod sessions;
mod setup;
pub mod watchers;
pub mod workload;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use handlestore_client::{Client, ClusterHandleStore, HandleStore, Ttl};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use self::faults::{FaultEvent, FaultKind};
use self::history::{History, Outcome};
pub use self::report::{OpCounts, Recovery, Report};
use self::setup::{Setup, Traffic};
use crate::creds::Credentials;

#[derive(Debug, Clone)]
pub struct ChaosConfig {
    pub seed: u64,
    /// How long faults are injected (traffic runs a little longer).
    pub duration: Duration,
    pub nodes: usize,
    pub cart_clients: usize,
    pub register_clients: usize,
    /// Clients watching the minted handles through every fault.
    pub watchers: usize,
    /// Clients running cart flows on legacy `Mcp-Session-Id` sessions,
    /// through their own front before two `--legacy-sessions` replicas.
    pub session_clients: usize,
    pub faults: Vec<FaultKind>,
    /// Writes must succeed again within this after a fault ends.
    pub recovery_bound: Duration,
    /// The control experiment: one cart server keeping carts in memory,
    /// restarted mid-flow (it loses data; the checkers must say so).
    pub lossy: bool,
    /// The cluster runs secured (TLS, peer mTLS, auth): every client and
    /// cart server uses the CA and a token.
    pub secure: bool,
    /// Failpoints every node runs with (`HANDLESTORE_FAILPOINTS`): a
    /// guarantee broken on purpose, for the checkers to catch.
    pub failpoints: Option<String>,
}

impl ChaosConfig {
    pub fn new(seed: u64, duration: Duration, nodes: usize) -> Self {
        Self {
            seed,
            duration,
            nodes,
            cart_clients: 6,
            register_clients: 4,
            watchers: 2,
            session_clients: 2,
            faults: FaultKind::ALL.to_vec(),
            recovery_bound: Duration::from_secs(30),
            lossy: false,
            secure: false,
            failpoints: None,
        }
    }
}

/// How far from its TTL a handle may be seen expiring: the nodes' maximum
/// clock offset (`--max-clock-offset`, 500 ms by default).
const EXPIRY_BOUND: Duration = Duration::from_millis(500);

/// Runs one chaos experiment and checks it: starts the cluster, the cart
/// servers and the traffic; injects faults for the configured duration;
/// stops the traffic; reads the final state; checks the history against it.
pub async fn run(cfg: ChaosConfig) -> Result<Report> {
    let mut rng = StdRng::seed_from_u64(cfg.seed);
    let history = Arc::new(History::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut setup = Setup::start(&cfg).await?;
    let mut traffic = Traffic::start(&cfg, &setup, &history, &stop, &mut rng).await?;

    let sampler = setup.cluster.as_ref().map(|c| leaders::Sampler::start(c, &history));
    let started = Instant::now();
    let (events, mut slow) = inject_faults(&cfg, &mut setup, &traffic, &history, &mut rng, started).await?;
    // Let traffic run on a healthy cluster, then stop it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    slow.extend(stop_traffic(&stop, std::mem::take(&mut traffic.tasks)).await);
    let leaders = match sampler {
        Some(s) => s.finish().await,
        None => leaders::LeaderChecks::default(),
    };
    let duration_s = started.elapsed().as_secs_f64();
    let delivered = match traffic.watchers.take() {
        Some(w) => w.finish().await,
        None => Vec::new(),
    };

    // Read the final state after recovery.
    if let Some(c) = &setup.cluster {
        c.wait_leader(Duration::from_secs(30)).await?;
    }
    let redeem = match traffic.redeemers.take() {
        Some(r) => r.finish().await,
        None => redeem::RedeemChecks::default(),
    };
    let sessions = match traffic.sessions.take() {
        Some(s) => s.finish(&setup.session_urls()).await,
        None => sessions::SessionChecks::default(),
    };
    let records = history.snapshot();
    let carts = final_state::acknowledged_carts(&records);
    eprintln!(
        "chaos: faults over after {duration_s:.0}s; reading the final state of {} carts",
        carts.len()
    );
    let reading = Instant::now();
    let fin = final_state::read(carts, &records, &setup.front.url(), traffic.client.as_ref()).await?;
    eprintln!(
        "chaos: final state read in {:.0}s; checking {} operations",
        reading.elapsed().as_secs_f64(),
        records.len()
    );
    let checks = checker::run(&records, &fin, &json!(0), 2_000_000);
    let expiry = expiry::check(&records, EXPIRY_BOUND);
    let watch = watchers::check(&records, &delivered);
    let (ops, ops_by_kind) = report::count_ops(&records);
    Ok(Report {
        seed: cfg.seed,
        duration_s,
        nodes: if cfg.lossy { 0 } else { cfg.nodes },
        lossy: cfg.lossy,
        skipped: setup.skipped.clone(),
        ops,
        ops_by_kind,
        recovery: report::recoveries(&events),
        faults: events,
        slow_recoveries: slow,
        checks,
        expiry,
        watch,
        sessions,
        redeem,
        leaders,
    })
}

/// Injects faults in the seeded order, one every 1-3 s, from `started`
/// until the run's duration is over, each held and undone, then waits for
/// writes to resume. Returns the faults injected, and the ones that could
/// not be injected or after which no write succeeded within the bound.
async fn inject_faults(
    cfg: &ChaosConfig,
    setup: &mut Setup,
    traffic: &Traffic,
    history: &History,
    rng: &mut StdRng,
    started: Instant,
) -> Result<(Vec<FaultEvent>, Vec<String>)> {
    let mut events = Vec::new();
    let mut slow = Vec::new();
    setup.faults.shuffle(rng);
    let mut next = 0usize;
    while started.elapsed() < cfg.duration {
        tokio::time::sleep(Duration::from_millis(rng.random_range(1_000..3_000))).await;
        if started.elapsed() >= cfg.duration {
            break;
        }
        let at_s = history.now() as f64 / 1e6;
        if cfg.lossy {
            // The control: the only "fault" is the in-memory server restarting.
            setup.servers[0].restart().await?;
            events.push(FaultEvent {
                kind: FaultKind::KillLeader,
                at_s,
                nodes: vec![],
                held_ms: 0,
                recovery_ms: Some(0),
            });
            continue;
        }
        let (Some(c), Some(cl)) = (setup.cluster.as_mut(), traffic.probe_client.as_ref()) else {
            break;
        };
        let kind = setup.faults[next % setup.faults.len()];
        next += 1;
        let (nodes, held) = match faults::inject(c, kind, rng).await {
            Ok(x) => x,
            Err(e) => {
                slow.push(format!("{kind:?} at {at_s:.1}s could not be injected: {e:#}"));
                continue;
            }
        };
        if matches!(kind, FaultKind::PauseLeader | FaultKind::IsolateLeader)
            && let (Some(&old), Some(keys)) = (nodes.first(), traffic.registers.as_ref())
        {
            // The old leader has just woken up, or is cut off from the
            // others (who lead without it), still believing it leads: ask
            // it directly. Whatever it answers goes into the history.
            // Cut off, it refuses every call until the deadline: keep it short.
            let deadline = match kind {
                FaultKind::IsolateLeader => Duration::from_secs(1),
                _ => Duration::from_secs(3),
            };
            let endpoint = c.node(old).endpoint();
            probe_old_leader(&c.credentials(), &endpoint, keys, deadline, history).await;
        }
        if let Err(e) = faults::end(c, kind, &nodes) {
            slow.push(format!("{kind:?} at {at_s:.1}s could not be undone: {e:#}"));
        }
        let recovery = measure_recovery(cl, cfg.recovery_bound).await;
        if recovery.is_none() {
            slow.push(format!(
                "{kind:?} at {at_s:.1}s: no write succeeded within {:?}",
                cfg.recovery_bound
            ));
        }
        events.push(FaultEvent {
            kind,
            at_s,
            nodes,
            held_ms: held.as_millis() as u64,
            recovery_ms: recovery.map(|d| d.as_millis() as u64),
        });
    }
    Ok((events, slow))
}

/// Tells the clients to stop and waits for them. Every call has its own
/// timeout, so the clients stop soon; one that does not is a hang worth
/// failing the run over, and is said so in what this returns.
async fn stop_traffic(stop: &AtomicBool, tasks: Vec<tokio::task::JoinHandle<()>>) -> Option<String> {
    stop.store(true, Ordering::Relaxed);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let mut stuck = 0;
    for mut t in tasks {
        if tokio::time::timeout_at(deadline, &mut t).await.is_err() {
            t.abort();
            stuck += 1;
        }
    }
    (stuck > 0).then(|| format!("{stuck} client task(s) did not stop within 120s of the end"))
}

/// A linearizable read and a write of every register, sent only to `endpoint`
/// (an old leader, just resumed or cut off), each within `deadline`,
/// recorded as register operations.
async fn probe_old_leader(creds: &Credentials, endpoint: &str, keys: &[String], deadline: Duration, history: &History) {
    let Ok(client) = creds
        .builder([endpoint.to_string()])
        .namespace("chaos")
        .deadline(deadline)
        .attempt_timeout(deadline.min(Duration::from_secs(1)))
        .build()
    else {
        return;
    };
    let store: ClusterHandleStore<Value> = client.handle_store("reg").build();
    for (i, key) in keys.iter().enumerate() {
        let invoke_us = history.now();
        let (outcome, output) = match store.get(key).await {
            Ok(v) => (Outcome::Ok, v.unwrap_or(Value::Null)),
            Err(e) => (Outcome::Fail, json!(e.to_string())),
        };
        history.push(history::Record {
            client: 300,
            kind: "get",
            key: key.clone(),
            input: Value::Null,
            output,
            invoke_us,
            complete_us: history.now(),
            outcome,
        });
        let v = json!(300_000_000u64 + history.now() * 10 + i as u64);
        let invoke_us = history.now();
        let (outcome, output) = match store.put(key, v.clone(), Ttl::Never).await {
            Ok(_) => (Outcome::Ok, Value::Null),
            Err(e) => (workload::classify(&e), json!(e.to_string())),
        };
        history.push(history::Record {
            client: 300,
            kind: "put",
            key: key.clone(),
            input: v,
            output,
            invoke_us,
            complete_us: history.now(),
            outcome,
        });
    }
}

/// Time until a write succeeds again.
async fn measure_recovery(client: &Client, bound: Duration) -> Option<Duration> {
    let probe: ClusterHandleStore<Value> = client.handle_store("probe").build();
    let started = Instant::now();
    while started.elapsed() < bound {
        if probe
            .mint(json!("probe"), Ttl::After(Duration::from_secs(60)))
            .await
            .is_ok()
        {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}
