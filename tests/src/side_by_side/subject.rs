//! One system under a side-by-side fault: handlestore, etcd or NATS
//! JetStream KV, three members each. Either every member's disk is a
//! `powercut_fs` mount, for the power cut to all three at once, each
//! started again over what its disk had synced; or every member runs in
//! a network namespace, for a member killed or cut off its peers.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use handlestore_client::{ClusterHandleStore, Consistency, HandleStore, Ttl};
use serde_json::Value;

use super::System;
use super::writer::Writer;
use crate::TestCluster;
use crate::netns::NetNs;
use crate::peers::etcd::{self, Etcd};
use crate::peers::nats::{self, Nats, NatsSync};
use crate::peers::{Member, Placement, disk, until_ok};
use crate::powercut::Names;
use crate::powercut::mount::PowercutMount;

/// A peer's members on their power-cut disks.
pub enum Peer {
    Etcd(Etcd),
    Nats(Nats),
}

impl Peer {
    fn members(&mut self) -> &mut [Member] {
        match self {
            Peer::Etcd(e) => &mut e.members,
            Peer::Nats(n) => &mut n.members,
        }
    }
}

pub enum Subject {
    Handlestore(Box<TestCluster>),
    /// A peer's members, on power-cut disks (`disks`) or each in a network
    /// namespace of `net` (dropped after the members).
    Peer {
        peer: Peer,
        disks: Vec<PowercutMount>,
        net: Option<NetNs>,
    },
}

/// Mounts a power-cut disk for each member of `members` in `dir`.
fn mount_disks(dir: &Path, members: &[&str], names: Names) -> Result<Vec<PowercutMount>> {
    members
        .iter()
        .map(|n| {
            let log = dir.join(format!("{n}.disk.log"));
            PowercutMount::start_with(&dir.join(format!("{n}.backing")), &disk(dir, n), &log, names)
        })
        .collect()
}

fn nats_sync(system: System) -> NatsSync {
    match system {
        System::NatsAlways => NatsSync::Always,
        _ => NatsSync::Shipped,
    }
}

impl Subject {
    /// Starts `system`'s three members in `dir`, each in a network
    /// namespace of its own (on the machine's disk), where one member can
    /// be cut off its peers while clients still reach it.
    pub async fn start_in_namespaces(system: System, dir: &Path) -> Result<Self> {
        if system == System::Handlestore {
            let cluster = TestCluster::builder(3).netns(true).start().await?;
            return Ok(Subject::Handlestore(Box::new(cluster)));
        }
        let mut net = NetNs::create()?;
        (1..=3).try_for_each(|id| net.add_node(id).map(drop))?;
        let placement = Placement::Namespaces(&net);
        let peer = match system {
            System::Etcd(release) => Peer::Etcd(Etcd::start_on(dir, release, placement).await?),
            _ => Peer::Nats(Nats::start_on(dir, nats_sync(system), placement).await?),
        };
        Ok(Subject::Peer {
            peer,
            disks: Vec::new(),
            net: Some(net),
        })
    }

    /// Starts `system`'s three members in `dir`, each on a power-cut disk
    /// that makes name changes durable as `names` says.
    pub async fn start(system: System, names: Names, dir: &Path) -> Result<Self> {
        Ok(match system {
            System::Handlestore => {
                let builder = TestCluster::builder(3).powercut_disks(true).powercut_names(names);
                let cluster = builder.start().await?;
                Subject::Handlestore(Box::new(cluster))
            }
            System::Etcd(release) => {
                let disks = mount_disks(dir, &etcd::NAMES, names)?;
                let peer = Peer::Etcd(Etcd::start(dir, release).await?);
                Subject::Peer { peer, disks, net: None }
            }
            System::NatsAlways | System::NatsShipped => {
                let sync = nats_sync(system);
                let disks = mount_disks(dir, &nats::NAMES, names)?;
                let peer = Peer::Nats(Nats::start(dir, sync).await?);
                Subject::Peer { peer, disks, net: None }
            }
        })
    }

    /// A new client of the system.
    pub async fn writer(&self) -> Result<Writer> {
        Ok(match self {
            Subject::Handlestore(c) => Writer::Handlestore(Arc::new(c.client().handle_store("side").build())),
            Subject::Peer {
                peer: Peer::Etcd(e), ..
            } => Writer::Etcd(Box::new(e.client().await?)),
            Subject::Peer {
                peer: Peer::Nats(n), ..
            } => Writer::Nats(Box::new(n.bucket().await?)),
        })
    }

    /// The power goes on every member at once, first: each freezes
    /// (nothing more is acknowledged).
    pub fn freeze_all(&mut self) -> Result<()> {
        match self {
            Subject::Handlestore(c) => (1..=3).try_for_each(|id| c.pause(id)),
            Subject::Peer { peer, .. } => peer.members().iter().try_for_each(Member::pause),
        }
    }

    /// The member that leads (0, 1 or 2): handlestore's Raft leader,
    /// etcd's, the leader of NATS' bucket stream.
    pub async fn leader(&self) -> Result<usize> {
        match self {
            Subject::Handlestore(c) => Ok(c.wait_leader(Duration::from_secs(10)).await? as usize - 1),
            Subject::Peer {
                peer: Peer::Etcd(e), ..
            } => e.leader().await,
            Subject::Peer {
                peer: Peer::Nats(n), ..
            } => n.stream_leader().await,
        }
    }

    /// Kills member `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        match self {
            Subject::Handlestore(c) => c.kill(i as u64 + 1),
            Subject::Peer { peer, .. } => peer.members()[i].kill(),
        }
    }

    /// Starts member `i` again over its data.
    pub fn restart(&mut self, i: usize) -> Result<()> {
        match self {
            Subject::Handlestore(c) => c.restart(i as u64 + 1),
            Subject::Peer { peer, .. } => peer.members()[i].restart(),
        }
    }

    /// Cuts member `i` off the other two, not off clients (started in
    /// namespaces only); `rejoin: true` undoes it.
    pub fn isolate(&self, i: usize, rejoin: bool) -> Result<()> {
        let id = i as u64 + 1;
        match (self, rejoin) {
            (Subject::Handlestore(c), false) => c.isolate(id),
            (Subject::Handlestore(c), true) => c.rejoin(id),
            (Subject::Peer { net: Some(n), .. }, false) => n.isolate(id),
            (Subject::Peer { net: Some(n), .. }, true) => n.rejoin(id),
            (Subject::Peer { net: None, .. }, _) => anyhow::bail!("this cluster runs in no namespaces"),
        }
    }

    /// Then each frozen member's disk drops what it had not synced, the
    /// member is killed, and its disk is mounted again over what it had
    /// synced. Then every member starts again.
    pub fn cut_and_restart_all(&mut self) -> Result<()> {
        match self {
            Subject::Handlestore(c) => {
                c.power_cut(&[1, 2, 3])?;
                (1..=3).try_for_each(|id| c.restart(id))
            }
            Subject::Peer { peer, disks, .. } => {
                disks.iter_mut().try_for_each(PowercutMount::cut)?;
                peer.members().iter_mut().for_each(Member::kill);
                disks.iter_mut().try_for_each(PowercutMount::remount)?;
                peer.members().iter_mut().try_for_each(Member::restart)
            }
        }
    }

    /// Waits up to `within` for the system to take a write again (NATS'
    /// bucket as it was: a bucket lost with the power is not made again).
    pub async fn wait_back(&self, within: Duration) -> Result<()> {
        match self {
            Subject::Handlestore(c) => {
                let store: ClusterHandleStore<Value> = c.client().handle_store("side-ready").build();
                until_ok(within, "handlestore took no write", || async {
                    store.mint(Value::Null, Ttl::Default).await?;
                    store.len_with(Consistency::Linearizable).await?;
                    Ok(())
                })
                .await
            }
            Subject::Peer {
                peer: Peer::Etcd(e), ..
            } => e.wait_ready(within).await,
            Subject::Peer {
                peer: Peer::Nats(n), ..
            } => n.wait_back(within).await,
        }
    }

    /// The last lines of every member's log, for a failure's message.
    pub fn logs(&mut self) -> String {
        match self {
            Subject::Handlestore(c) => (1..=3)
                .map(|id| format!("node {id}:\n{}", c.log_tail(id, 20)))
                .collect(),
            Subject::Peer { peer, .. } => peer
                .members()
                .iter()
                .map(|m| format!("{}:\n{}\n", m.name, m.log_tail()))
                .collect(),
        }
    }
}
