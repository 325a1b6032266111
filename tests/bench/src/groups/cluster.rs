//! Three nodes, each with a replica of every group, the groups' leaders
//! spread over the nodes.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use openraft::BasicNode;

use super::disk::Writers;
use super::node::Node;
use super::proposer::Proposer;

pub struct Cluster {
    nodes: Vec<Arc<Node>>,
    /// Each group's proposer on its leader, by group id.
    proposers: Vec<Proposer>,
    /// How many groups each node leads.
    pub led: [usize; 3],
}

/// What the three nodes did so far, summed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    pub syncs: u64,
    pub wal_syncs: u64,
    pub frames: u64,
    pub bytes: u64,
    pub socket_writes: u64,
}

impl Cluster {
    /// Starts three nodes with their databases under `dir` and `groups`
    /// groups on all of them; group g is founded on node g mod 3, which
    /// stands for election at once, so leaders start spread.
    pub async fn start(dir: &Path, groups: u32, writers: Writers) -> Result<Self> {
        let mut nodes = Vec::new();
        for id in 1..=3u64 {
            let d = dir.join(format!("node-{id}"));
            std::fs::create_dir_all(&d)?;
            nodes.push(Node::start(id, &d, writers, groups)?);
        }
        let addrs: Vec<_> = nodes.iter().map(|n| (n.id, n.addr)).collect();
        for n in &nodes {
            n.connect(addrs.iter().copied().filter(|(id, _)| *id != n.id).collect())
                .await?;
        }
        for gid in 0..groups {
            for n in &nodes {
                n.add_group(gid).await?;
            }
        }
        let members: BTreeMap<u64, BasicNode> = (1..=3).map(|i| (i, BasicNode::new(""))).collect();
        for gid in 0..groups {
            let founder = &nodes[gid as usize % 3];
            let raft = founder.group(gid).context("a group just added")?;
            let members = members.clone();
            founder
                .on(move |_| async move { raft.initialize(members).await })
                .await?
                .map_err(|e| anyhow!("founding group {gid}: {e}"))?;
        }
        let mut proposers = Vec::new();
        let mut led = [0; 3];
        for gid in 0..groups {
            let raft = nodes[gid as usize % 3].group(gid).context("a group just added")?;
            let m = raft
                .wait(Some(Duration::from_secs(30)))
                .metrics(|m| m.current_leader.is_some(), "a leader")
                .await?;
            let leader = m.current_leader.context("a leader")?;
            let node = &nodes[(leader - 1) as usize];
            let raft = node.group(gid).context("every node has every group")?;
            proposers.push(node.on(move |_| async move { Proposer::start(raft) }).await?);
            led[(leader - 1) as usize] += 1;
        }
        Ok(Self { nodes, proposers, led })
    }

    pub fn groups(&self) -> u32 {
        self.proposers.len() as u32
    }

    /// The way in for group `gid`'s writes, on its leader.
    pub fn proposer(&self, gid: u32) -> &Proposer {
        &self.proposers[gid as usize]
    }

    /// Quiesces every group, or wakes them, with openraft 0.9's runtime
    /// switches (docs/dev/scale.md §2): leaders stop heartbeats,
    /// followers elections, and the core no longer hears its tick (the
    /// tick task still wakes every 1.5 heartbeat intervals).
    pub fn set_quiesced(&self, quiesced: bool) {
        for n in &self.nodes {
            for raft in n.groups.read().unwrap_or_else(|p| p.into_inner()).values() {
                let switches = raft.runtime_config();
                switches.heartbeat(!quiesced);
                switches.elect(!quiesced);
                switches.tick(!quiesced);
            }
        }
    }

    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for n in &self.nodes {
            c.syncs += n.disk.syncs();
            c.wal_syncs += n.disk.wal_syncs();
            c.frames += n.traffic.frames.load(Ordering::Relaxed);
            c.bytes += n.traffic.bytes.load(Ordering::Relaxed);
            c.socket_writes += n.traffic.writes.load(Ordering::Relaxed);
        }
        c
    }
}

impl std::ops::Sub for Counts {
    type Output = Counts;

    fn sub(self, b: Counts) -> Counts {
        Counts {
            syncs: self.syncs - b.syncs,
            wal_syncs: self.wal_syncs - b.wal_syncs,
            frames: self.frames - b.frames,
            bytes: self.bytes - b.bytes,
            socket_writes: self.socket_writes - b.socket_writes,
        }
    }
}
