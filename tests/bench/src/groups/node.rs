//! A node: its thread and event loop, its database and writers, its
//! listener, and a replica of every group.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, anyhow};
use tokio::runtime::Handle;

use super::Raft;
use super::disk::{Disk, Writers};
use super::log::{GroupDisk, MemLog};
use super::machine::Machine;
use super::net::{Net, Peers};
use super::wire::{Groups, Peer, Traffic, serve};

pub struct Node {
    pub id: u64,
    pub addr: SocketAddr,
    runtime: Handle,
    pub disk: Arc<Disk>,
    pub groups: Groups,
    pub traffic: Arc<Traffic>,
    peers: OnceLock<Peers>,
}

/// The groups' Raft settings: the node's defaults (100 ms heartbeats,
/// 800-1600 ms election timeouts, 256 entries per append), no snapshots.
fn config() -> Result<Arc<openraft::Config>> {
    let c = openraft::Config {
        cluster_name: "groups".into(),
        heartbeat_interval: 100,
        election_timeout_min: 800,
        election_timeout_max: 1600,
        max_payload_entries: 256,
        snapshot_policy: openraft::SnapshotPolicy::Never,
        ..Default::default()
    };
    Ok(Arc::new(c.validate()?))
}

impl Node {
    /// Starts node `id` on a thread of its own (one event loop until the
    /// process ends), its database in `dir`, listening on loopback.
    pub fn start(id: u64, dir: &Path, writers: Writers, groups: u32) -> Result<Arc<Self>> {
        let n_writers = match writers {
            Writers::Merged => 1,
            Writers::PerGroup => groups as usize,
        };
        let disk = Disk::open(dir, n_writers)?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new().name(format!("node-{id}")).spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(r) => r,
                Err(e) => return drop(tx.send(Err(anyhow!(e)))),
            };
            runtime.block_on(async move {
                match Self::listen(id, disk).await {
                    Ok((node, listener)) => {
                        let _ = tx.send(Ok(node.clone()));
                        serve(listener, node.groups.clone(), node.traffic.clone()).await;
                    }
                    Err(e) => return drop(tx.send(Err(e))),
                }
                // The groups' tasks run on this loop until the process ends.
                std::future::pending::<()>().await;
            });
        })?;
        rx.recv().context("the node's thread ended")?
    }

    async fn listen(id: u64, disk: Arc<Disk>) -> Result<(Arc<Self>, tokio::net::TcpListener)> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let node = Arc::new(Self {
            id,
            addr: listener.local_addr()?,
            runtime: Handle::current(),
            disk,
            groups: Arc::default(),
            traffic: Arc::default(),
            peers: OnceLock::new(),
        });
        Ok((node, listener))
    }

    /// Runs `f` on this node's event loop and waits for its result.
    pub async fn on<T, Fut>(self: &Arc<Self>, f: impl FnOnce(Arc<Self>) -> Fut + Send + 'static) -> Result<T>
    where
        T: Send + 'static,
        Fut: Future<Output = T> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let node = self.clone();
        self.runtime.spawn(async move {
            let _ = tx.send(f(node).await);
        });
        rx.await.context("the node's event loop dropped a task")
    }

    /// Opens this node's connection to each of `others`.
    pub async fn connect(self: &Arc<Self>, others: Vec<(u64, SocketAddr)>) -> Result<()> {
        let peers = self
            .on(move |n| async move {
                let mut peers = HashMap::new();
                for (id, addr) in others {
                    peers.insert(id, Peer::connect(addr, n.traffic.clone()).await?);
                }
                std::io::Result::Ok(peers)
            })
            .await??;
        self.peers
            .set(Arc::new(peers))
            .map_err(|_| anyhow!("node {} connected twice", self.id))
    }

    /// Starts this node's replica of group `gid`.
    pub async fn add_group(self: &Arc<Self>, gid: u32) -> Result<Raft> {
        let peers = self.peers.get().cloned().context("connect before adding groups")?;
        let config = config()?;
        let raft = self
            .on(move |n| async move {
                let disk = n.disk.clone();
                let (log, machine) = (
                    MemLog::new(GroupDisk {
                        gid,
                        disk: disk.clone(),
                    }),
                    Machine::new(gid, disk),
                );
                Raft::new(n.id, config, Net { gid, peers }, log, machine).await
            })
            .await??;
        self.groups
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(gid, raft.clone());
        Ok(raft)
    }

    pub fn group(&self, gid: u32) -> Option<Raft> {
        self.groups.read().unwrap_or_else(|p| p.into_inner()).get(&gid).cloned()
    }
}
