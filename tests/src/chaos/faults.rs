//! Faults, injected from outside the nodes: kill -9, SIGSTOP/SIGCONT,
//! SIGTERM restarts, network partitions and degraded links (network
//! namespaces; delay, jitter, loss and reordering by `linkem`), and wall
//! clocks stepped (libfaketime).

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use rand::Rng;
use rand::rngs::StdRng;
use serde::Serialize;

use crate::cluster::TestCluster;
use crate::faketime::TAKES_EFFECT;
use crate::linkem::LinkParams;
use crate::netns::Direction;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum FaultKind {
    /// kill -9 the leader, restart it later.
    KillLeader,
    /// kill -9 a follower, restart it later.
    KillFollower,
    /// kill -9 a majority (quorum lost), restart them later.
    KillQuorum,
    /// SIGSTOP the leader for longer than the election timeout, then SIGCONT.
    PauseLeader,
    /// Restart every node in turn (SIGTERM), waiting for each to catch up.
    RollingRestart,
    /// Cut the leader off the network, heal later.
    PartitionLeader,
    /// Cut the leader off the other nodes but not off clients; once the
    /// others lead without it, ask it for every register (the stale-read
    /// check: a leader that lost its majority must not serve a read), then
    /// heal.
    IsolateLeader,
    /// Step one node's wall clock (the leader's half the time) forwards or
    /// backwards by 2 s to an hour, set it right later.
    ClockJump,
    /// Degrade every node's link as netem would: 20-80 ms of delay, half
    /// that of jitter (so packets are reordered), 5-20 % loss, 10 % of
    /// packets let through at once; restore later.
    LossyLinks,
    /// Slow the leader's link, both ways, by 250-450 ms (10 % jitter): a
    /// round trip near the election timeout (700 ms in tests); restore later.
    SlowLeaderLink,
    /// Cut the power of one node, of a majority, or of every node (a third
    /// of the time each): their disks (`powercut_fs`) drop what they had
    /// not synced; start them again later.
    PowerCut,
}

impl FaultKind {
    /// The faults that need a private network (network namespaces).
    pub const NETWORK: [FaultKind; 4] = [
        FaultKind::PartitionLeader,
        FaultKind::IsolateLeader,
        FaultKind::LossyLinks,
        FaultKind::SlowLeaderLink,
    ];

    /// The faults that need iptables (and `linkem`, to degrade links) besides.
    pub const LINKS: [FaultKind; 3] = [
        FaultKind::IsolateLeader,
        FaultKind::LossyLinks,
        FaultKind::SlowLeaderLink,
    ];

    pub const ALL: [FaultKind; 11] = [
        FaultKind::KillLeader,
        FaultKind::KillFollower,
        FaultKind::KillQuorum,
        FaultKind::PauseLeader,
        FaultKind::RollingRestart,
        FaultKind::PartitionLeader,
        FaultKind::IsolateLeader,
        FaultKind::ClockJump,
        FaultKind::LossyLinks,
        FaultKind::SlowLeaderLink,
        FaultKind::PowerCut,
    ];
}

/// One injected fault.
#[derive(Debug, Clone, Serialize)]
pub struct FaultEvent {
    pub kind: FaultKind,
    /// Seconds since the run started.
    pub at_s: f64,
    pub nodes: Vec<u64>,
    pub held_ms: u64,
    /// From the end of the fault until a write succeeded again.
    pub recovery_ms: Option<u64>,
}

/// Applies a fault, holds it, and undoes it. Returns the nodes affected
/// and how long the fault was held.
pub async fn inject(cluster: &mut TestCluster, kind: FaultKind, rng: &mut StdRng) -> Result<(Vec<u64>, Duration)> {
    let leader = cluster.wait_leader(Duration::from_secs(30)).await?;
    let n = cluster.nodes.len() as u64;
    let followers: Vec<u64> = (1..=n)
        .filter(|id| *id != leader && cluster.node(*id).is_running())
        .collect();
    let hold = Duration::from_millis(rng.random_range(2_000..5_000));
    let started = Instant::now();
    let nodes = match kind {
        FaultKind::KillLeader => {
            cluster.kill(leader);
            tokio::time::sleep(hold).await;
            cluster.restart(leader)?;
            vec![leader]
        }
        FaultKind::KillFollower => {
            let Some(&f) = followers.get(rng.random_range(0..followers.len().max(1))) else {
                bail!("no follower to kill");
            };
            cluster.kill(f);
            tokio::time::sleep(hold).await;
            cluster.restart(f)?;
            vec![f]
        }
        FaultKind::KillQuorum => {
            // The leader and enough followers that no majority remains.
            let majority = (n / 2 + 1) as usize;
            let mut victims = vec![leader];
            victims.extend(followers.iter().copied().take(majority - 1));
            for v in &victims {
                cluster.kill(*v);
            }
            tokio::time::sleep(hold).await;
            for v in &victims {
                cluster.restart(*v)?;
            }
            victims
        }
        FaultKind::PauseLeader => {
            // Longer than the election timeout (1 s in tests, randomized up
            // to 2 s): the others elect a new leader meanwhile.
            let hold = hold.max(Duration::from_millis(3_000));
            cluster.pause(leader)?;
            tokio::time::sleep(hold).await;
            cluster.resume(leader)?;
            vec![leader]
        }
        FaultKind::RollingRestart => {
            for id in 1..=n {
                cluster.stop(id)?;
                cluster.restart(id)?;
                let leader = cluster.wait_leader(Duration::from_secs(30)).await?;
                let target = cluster.status(leader).await?.applied_index;
                cluster.wait_applied(id, target, Duration::from_secs(30)).await?;
            }
            (1..=n).collect()
        }
        FaultKind::PowerCut => {
            let victims = power_cut_victims(n, leader, &followers, rng);
            cluster.power_cut(&victims)?;
            tokio::time::sleep(hold).await;
            for v in &victims {
                cluster.restart(*v)?;
            }
            victims
        }
        FaultKind::PartitionLeader | FaultKind::LossyLinks | FaultKind::SlowLeaderLink => {
            network(cluster, kind, leader, hold, rng).await?
        }
        FaultKind::IsolateLeader => {
            // Held until another node leads; healed by `end`, after the
            // runner has asked the old leader about the registers.
            cluster.isolate(leader)?;
            let others_lead = cluster.wait_leader_among(&followers, Duration::from_secs(30)).await;
            tokio::time::sleep(hold.min(Duration::from_secs(2))).await;
            if let Err(e) = others_lead {
                cluster.rejoin(leader)?;
                return Err(e.context("no other node led while the leader was cut off"));
            }
            vec![leader]
        }
        FaultKind::ClockJump => {
            let victim = match followers.get(rng.random_range(0..followers.len().max(1) * 2)) {
                Some(&f) => f,
                None => leader,
            };
            let step: i64 = rng.random_range(2_000..3_600_000);
            let offset = if rng.random_bool(0.5) { step } else { -step };
            cluster.set_clock_offset(victim, offset)?;
            tokio::time::sleep(hold + TAKES_EFFECT).await;
            cluster.set_clock_offset(victim, 0)?;
            tokio::time::sleep(TAKES_EFFECT).await;
            vec![victim]
        }
    };
    Ok((nodes, started.elapsed()))
}

/// Undoes what [`inject`] left in place for the runner (the old leader
/// cut off from its peers).
pub fn end(cluster: &TestCluster, kind: FaultKind, nodes: &[u64]) -> Result<()> {
    match (kind, nodes.first()) {
        (FaultKind::IsolateLeader, Some(&old)) => cluster.rejoin(old),
        _ => Ok(()),
    }
}

/// Whose power is cut: a node (any), a majority (the leader with
/// followers), or every node, a third of the time each.
fn power_cut_victims(n: u64, leader: u64, followers: &[u64], rng: &mut StdRng) -> Vec<u64> {
    match rng.random_range(0..3) {
        0 => vec![rng.random_range(1..=n)],
        1 => {
            let mut victims = vec![leader];
            victims.extend(followers.iter().copied().take((n / 2) as usize));
            victims
        }
        _ => (1..=n).collect(),
    }
}

/// The network faults: a partition of the leader, every link degraded, or
/// the leader's slowed; held for `hold`, then undone. Returns the nodes
/// affected.
async fn network(
    cluster: &TestCluster,
    kind: FaultKind,
    leader: u64,
    hold: Duration,
    rng: &mut StdRng,
) -> Result<Vec<u64>> {
    let ms = Duration::from_millis;
    let (nodes, params, dir) = match kind {
        FaultKind::LossyLinks => {
            let delay = rng.random_range(20..=80);
            let params = LinkParams {
                delay: ms(delay),
                jitter: ms(delay / 2),
                loss: rng.random_range(0.05..=0.20),
                reorder: 0.1,
                ..LinkParams::default()
            };
            // Each node's incoming traffic: every packet between two
            // nodes crosses one emulator, as under netem on each sender.
            (
                (1..=cluster.nodes.len() as u64).collect::<Vec<_>>(),
                params,
                Direction::In,
            )
        }
        FaultKind::SlowLeaderLink => {
            let delay = rng.random_range(250..=450);
            let params = LinkParams {
                delay: ms(delay),
                jitter: ms(delay / 10),
                ..LinkParams::default()
            };
            (vec![leader], params, Direction::Both)
        }
        _ => {
            cluster.cut(leader)?;
            tokio::time::sleep(hold).await;
            cluster.heal(leader)?;
            return Ok(vec![leader]);
        }
    };
    let degraded = nodes.iter().try_for_each(|id| cluster.degrade_link(*id, &params, dir));
    if degraded.is_ok() {
        tokio::time::sleep(hold).await;
    }
    for id in &nodes {
        cluster.restore_link(*id);
    }
    degraded.map(|()| nodes)
}
