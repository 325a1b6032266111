//! The start of a chaos run: the cluster (not for the lossy control), the
//! cart servers behind their round-robin front, and the traffic against
//! them.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use handlestore_client::{
    Client, ClusterHandleStore, ClusterStateTool, HandleStore, StateTool, StateValue, StoreOptions, Ttl,
};
use rand::Rng;
use rand::rngs::StdRng;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::task::JoinHandle;

use super::faults::FaultKind;
use super::history::History;
use super::{ChaosConfig, expiry, workload};
use crate::cluster::TestCluster;
use crate::creds::Credentials;
use crate::mcp::{CartServer, RoundRobin};
use crate::netns::NetNs;

/// Register handles and state keys the linearizability checker follows.
const REGISTERS: usize = 4;

/// What a run runs against. Dropped in the order of its fields: the front,
/// the cart servers, the cluster, and last the directory of their logs.
pub(super) struct Setup {
    pub front: RoundRobin,
    pub servers: Vec<CartServer>,
    /// The legacy-session replicas' own front, and the replicas.
    pub session_front: Option<RoundRobin>,
    pub session_servers: Vec<CartServer>,
    /// None for the lossy control.
    pub cluster: Option<TestCluster>,
    _log_dir: TempDir,
    /// The configured faults this machine can make.
    pub faults: Vec<FaultKind>,
    /// Why the others were left out.
    pub skipped: Vec<String>,
}

impl Setup {
    /// The cluster and two cart servers over it, or for the lossy control
    /// one cart server keeping carts in memory; and the front before them.
    pub async fn start(cfg: &ChaosConfig) -> Result<Self> {
        let log_dir = tempfile::Builder::new().prefix("handlestore-chaos-").tempdir()?;
        let mut faults = cfg.faults.clone();
        let mut skipped = Vec::new();
        let mut cluster = None;
        let mut servers = Vec::new();
        let mut session_servers = Vec::new();
        if cfg.lossy {
            servers.push(CartServer::start_memory(log_dir.path()).await?);
        } else {
            let c = start_cluster(cfg, &mut faults, &mut skipped).await?;
            for _ in 0..2 {
                let creds = c.credentials();
                servers.push(CartServer::start_with_credentials(&c.endpoints(), &creds, log_dir.path()).await?);
            }
            for _ in 0..(if cfg.session_clients > 0 { 2 } else { 0 }) {
                let (creds, endpoints, flags) = (c.credentials(), c.endpoints(), ["--legacy-sessions"]);
                let server = CartServer::start_with_credentials_args(&endpoints, &creds, &flags, log_dir.path());
                session_servers.push(server.await?);
            }
            cluster = Some(c);
        }
        let front = RoundRobin::start(servers.iter().map(CartServer::url).collect()).await?;
        let session_front = match session_servers.is_empty() {
            true => None,
            false => Some(RoundRobin::start(session_servers.iter().map(CartServer::url).collect()).await?),
        };
        Ok(Self {
            front,
            servers,
            session_front,
            session_servers,
            cluster,
            _log_dir: log_dir,
            faults,
            skipped,
        })
    }
}

/// A cluster of `nodes`, each in its own network namespace and with a wall
/// clock libfaketime can step where this machine allows; a fault it cannot
/// make then is taken out of `faults`, and why goes into `skipped`.
async fn start_cluster(
    cfg: &ChaosConfig,
    faults: &mut Vec<FaultKind>,
    skipped: &mut Vec<String>,
) -> Result<TestCluster> {
    // One line per fault kind left out, saying why.
    let mut skip = |kinds: &[FaultKind], why: &str| {
        for kind in kinds.iter().filter(|k| faults.contains(k)) {
            skipped.push(format!("{kind:?}: {why}"));
        }
        faults.retain(|f| !kinds.contains(f));
    };
    let netns = NetNs::available();
    if let Err(why) = &netns {
        skip(&FaultKind::NETWORK, why);
    } else if let Err(why) = NetNs::links_available() {
        skip(&FaultKind::LINKS, &why);
    }
    let mut builder = TestCluster::builder(cfg.nodes).netns(netns.is_ok()).secure(cfg.secure);
    if let Some(points) = &cfg.failpoints {
        for id in 1..=cfg.nodes as u64 {
            builder = builder.node_env(id, handlestore_node::failpoints::ENV, points);
        }
    }
    match crate::faketime::library() {
        Ok(lib) => builder = builder.faketime(lib),
        Err(why) => skip(&[FaultKind::ClockJump], &why),
    }
    // Every node's data on powercut_fs, only where power is cut.
    if let Some(why) = crate::powercut::mount::unavailable() {
        skip(&[FaultKind::PowerCut], &why);
    }
    builder
        .powercut_disks(faults.contains(&FaultKind::PowerCut))
        .start()
        .await
}

impl Setup {
    /// Each legacy-session replica's MCP endpoint.
    pub fn session_urls(&self) -> Vec<String> {
        self.session_servers
            .iter()
            .map(|s| format!("{}/mcp", s.url()))
            .collect()
    }
}

/// The clients running until `stop`, and what the runner needs of them
/// afterwards.
pub(super) struct Traffic {
    pub tasks: Vec<JoinHandle<()>>,
    /// The direct clients' client (none for the lossy control): the final
    /// state's mints are read through it.
    pub client: Option<Client>,
    /// A client of its own for the recovery probes.
    pub probe_client: Option<Client>,
    /// The register handles, for asking a paused old leader about them.
    pub registers: Option<Arc<Vec<String>>>,
    /// The watch consumers of the minted handles.
    pub watchers: Option<super::watchers::Watchers>,
    /// The legacy-session cart clients.
    pub sessions: Option<super::sessions::SessionClients>,
    /// The clients racing to redeem the same tokens.
    pub redeemers: Option<super::redeem::Redeemers>,
}

impl Traffic {
    /// Starts the cart clients on the front and, with a cluster, the direct
    /// clients (registers, mints, handles with TTLs); each draws its seed
    /// from `rng`.
    pub async fn start(
        cfg: &ChaosConfig,
        setup: &Setup,
        history: &Arc<History>,
        stop: &Arc<AtomicBool>,
        rng: &mut StdRng,
    ) -> Result<Self> {
        let mut tasks = Vec::new();
        for i in 0..cfg.cart_clients {
            let (h, s, url, seed) = (history.clone(), stop.clone(), setup.front.url(), rng.random());
            tasks.push(tokio::spawn(workload::cart_flows(i, url, h, s, seed)));
        }
        let mut traffic = Self {
            tasks,
            client: None,
            probe_client: None,
            registers: None,
            watchers: None,
            sessions: setup
                .session_front
                .as_ref()
                .map(|f| super::sessions::SessionClients::start(f.url(), cfg.session_clients, stop)),
            redeemers: None,
        };
        if let Some(c) = &setup.cluster {
            traffic
                .start_direct(cfg, &c.credentials(), &c.endpoints(), history, stop, rng)
                .await?;
        }
        Ok(traffic)
    }

    /// The clients that talk to the cluster through the client crate.
    async fn start_direct(
        &mut self,
        cfg: &ChaosConfig,
        creds: &Credentials,
        endpoints: &[String],
        history: &Arc<History>,
        stop: &Arc<AtomicBool>,
        rng: &mut StdRng,
    ) -> Result<()> {
        self.probe_client = Some(creds.builder(endpoints.to_vec()).namespace("chaos").build()?);
        // A deadline shorter than the longest faults, so some writes end
        // with an unknown outcome (which may still be applied later) and the
        // checkers must reason about them.
        let cl = creds
            .builder(endpoints.to_vec())
            .namespace("chaos")
            .deadline(Duration::from_secs(3))
            .attempt_timeout(Duration::from_secs(1))
            .build()?;
        let regs: Arc<ClusterHandleStore<Value>> = Arc::new(cl.handle_store("reg").build());
        let tool = cl.state_tool();
        let (handle_keys, state_keys) = seed_registers(&regs, &tool).await?;
        self.registers = Some(handle_keys.clone());
        for i in 0..cfg.register_clients {
            let id = 100 + i;
            let (h, s, seed) = (history.clone(), stop.clone(), rng.random());
            let (which, keys) = if i % 2 == 0 {
                (workload::Registers::Handles(regs.clone()), handle_keys.clone())
            } else {
                (workload::Registers::State(tool.clone()), state_keys.clone())
            };
            self.tasks
                .push(tokio::spawn(workload::registers(id, which, keys, h, s, seed)));
        }
        self.redeemers = Some(super::redeem::Redeemers::start(creds, endpoints, rng.random(), stop)?);
        // Established before the first mint: every one must reach them.
        self.watchers = Some(super::watchers::Watchers::start(creds, endpoints, cfg.watchers, stop).await?);
        let minted: Arc<ClusterHandleStore<Value>> = Arc::new(cl.handle_store("mints").build());
        self.tasks.push(tokio::spawn(workload::mints(
            200,
            minted,
            history.clone(),
            stop.clone(),
        )));
        self.tasks.extend(expiry::spawn(
            creds,
            endpoints,
            "chaos",
            history.clone(),
            stop.clone(),
            rng.random(),
        )?);
        self.client = Some(cl);
        Ok(())
    }
}

/// Sets the registers (handles, then state keys) to their initial value,
/// 0; returns their names.
async fn seed_registers(
    regs: &ClusterHandleStore<Value>,
    tool: &ClusterStateTool,
) -> Result<(Arc<Vec<String>>, Arc<Vec<String>>)> {
    let mut handle_keys = Vec::new();
    for _ in 0..REGISTERS {
        let id = handlestore_client::id::new_handle_id("");
        regs.put(&id, json!(0), Ttl::Never).await.context("seeding registers")?;
        handle_keys.push(id);
    }
    let mut state_keys = Vec::new();
    for i in 0..REGISTERS {
        let k = format!("chaos/reg-{i}");
        tool.store(&k, StateValue::Json(json!(0)), StoreOptions::default())
            .await
            .context("seeding keys")?;
        state_keys.push(k);
    }
    Ok((Arc::new(handle_keys), Arc::new(state_keys)))
}
