//! Kill and partition side by side: each system's three members in
//! network namespaces, clients on the host reaching every member; the
//! register workload and the set writers running through a fault of one
//! member and its repair; then each key's history checked for
//! linearizability and every acknowledged set write read back.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::registers::{RegisterChecks, Registers};
use super::writer::Writers;
use super::{Subject, System, read_back};

/// One member's fault, held for `HELD` and then repaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The leader killed (SIGKILL), started again after.
    KillLeader,
    /// The leader cut off its two peers but not off clients.
    IsolateLeader,
    /// A follower cut off its two peers but not off clients: the
    /// minority side of a partition, without the leader.
    IsolateFollower,
}

impl Fault {
    pub const ALL: [Fault; 3] = [Fault::KillLeader, Fault::IsolateLeader, Fault::IsolateFollower];

    pub fn name(self) -> &'static str {
        match self {
            Fault::KillLeader => "leader killed",
            Fault::IsolateLeader => "leader cut off its peers, not its clients",
            Fault::IsolateFollower => "follower cut off its peers, not its clients (minority partition)",
        }
    }
}

/// Load before the fault, the fault, and load after its repair.
const BEFORE: Duration = Duration::from_secs(2);
const HELD: Duration = Duration::from_secs(6);
const AFTER: Duration = Duration::from_secs(4);

/// Keys of the register workload, its clients, and the set writers.
const KEYS: usize = 3;
const REGISTER_CLIENTS: usize = 6;
const SET_WRITERS: usize = 4;

/// What one run under one fault kept and saw.
#[derive(Debug, Clone)]
pub struct FaultOutcome {
    /// Set writes acknowledged, and how many of them a linearizable read
    /// after the run did not return.
    pub acked: usize,
    pub lost: usize,
    /// Whether the system took a write within 60 s of the repair.
    pub back: bool,
    pub registers: RegisterChecks,
}

/// Which member `fault` strikes: the leader, or the next one after it.
async fn target(subject: &Subject, fault: Fault) -> Result<usize> {
    let leader = subject.leader().await?;
    Ok(match fault {
        Fault::IsolateFollower => (leader + 1) % 3,
        _ => leader,
    })
}

async fn strike(subject: &mut Subject, fault: Fault, member: usize) -> Result<()> {
    match fault {
        Fault::KillLeader => subject.kill(member),
        _ => subject.isolate(member, false)?,
    }
    tokio::time::sleep(HELD).await;
    match fault {
        Fault::KillLeader => subject.restart(member),
        _ => subject.isolate(member, true),
    }
}

/// One run: `system` started in `dir`, the workloads through `fault`.
pub async fn fault_run(system: System, fault: Fault, dir: &Path) -> Result<FaultOutcome> {
    let mut subject = Subject::start_in_namespaces(system, dir).await?;
    let mut clients = Vec::new();
    for _ in 0..REGISTER_CLIENTS {
        clients.push(subject.writer().await?);
    }
    let registers = Registers::start(clients, KEYS).await?;
    let set = subject.writer().await?;
    let writers = Writers::start(&set, SET_WRITERS);
    tokio::time::sleep(BEFORE).await;
    let member = target(&subject, fault).await?;
    strike(&mut subject, fault, member).await?;
    tokio::time::sleep(AFTER).await;
    let registers = registers.stop_and_check().await;
    let (acked, _) = writers.abort();
    let (back, lost) = read_back(&mut subject, system, &acked).await?;
    Ok(FaultOutcome {
        acked: acked.len(),
        lost,
        back,
        registers,
    })
}

/// The runs of one system under one fault.
pub struct FaultRuns {
    pub system: System,
    pub fault: Fault,
    pub outcomes: Vec<FaultOutcome>,
}

/// The table of the runs, as docs/chaos.md gives it.
pub fn fault_table(runs: &[FaultRuns]) -> String {
    let mut md = String::from(
        "| system | fault | runs | set writes acknowledged | lost | register operations checked | \
         register writes of unknown outcome | registers not linearizable | inconclusive | back within 60 s |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in runs {
        let sum = |f: fn(&FaultOutcome) -> usize| r.outcomes.iter().map(f).sum::<usize>();
        let (acked, lost) = (sum(|o| o.acked), sum(|o| o.lost));
        let (checked, unknown) = (sum(|o| o.registers.completed), sum(|o| o.registers.unknown_writes));
        let (bad, unsure) = (sum(|o| o.registers.violations), sum(|o| o.registers.inconclusive));
        let keys = r.outcomes.len() * KEYS;
        let back = r.outcomes.iter().filter(|o| o.back).count();
        let (system, fault, n) = (r.system.name(), r.fault.name(), r.outcomes.len());
        let _ = writeln!(
            md,
            "| {system} | {fault} | {n} | {acked} | {lost} | {checked} | {unknown} | {bad} of {keys} | {unsure} of {keys} | {back} of {n} |"
        );
    }
    md
}
