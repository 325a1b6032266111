//! Faults side by side: the same writes on handlestore, etcd (3.7.3 and
//! 3.5.30) and NATS JetStream KV (with `sync_interval: always`, and as
//! shipped), the same fault to each, and what each kept (docs/chaos.md,
//! "Beside etcd and NATS"). A power cut to every member at once ([`power_cut_run`]): the
//! writes acknowledged before it, those a linearizable read no longer
//! finds after it, whether the system came back. A member killed or cut
//! off its peers ([`fault_run`]): the same, and whether each key's reads
//! and writes stayed linearizable.

mod faults;
mod registers;
mod subject;
mod writer;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::peers::etcd::EtcdRelease;
use crate::powercut::Names;

pub use faults::{Fault, FaultOutcome, FaultRuns, fault_run, fault_table};
pub use registers::RegisterChecks;
pub use subject::Subject;
pub use writer::{Writer, Writers};

/// The systems, in the table's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum System {
    Handlestore,
    /// etcd, fsync on every commit: 3.7.3 (the bench's `etcd`) and 3.5.30
    /// (the anchor before it).
    Etcd(EtcdRelease),
    /// NATS JetStream KV, three replicas, `sync_interval: always`.
    NatsAlways,
    /// The same, with the fsync interval as shipped (two minutes).
    NatsShipped,
}

impl System {
    pub const ALL: [System; 5] = [
        System::Handlestore,
        System::Etcd(EtcdRelease::V3_7),
        System::Etcd(EtcdRelease::V3_5),
        System::NatsAlways,
        System::NatsShipped,
    ];

    pub fn name(self) -> &'static str {
        match self {
            System::Handlestore => "handlestore",
            System::Etcd(release) => release.name(),
            System::NatsAlways => "NATS 2.15.1, sync_interval: always",
            System::NatsShipped => "NATS 2.15.1, as shipped",
        }
    }
}

/// What one run kept.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Writes acknowledged before the fault.
    pub acked: usize,
    /// Writes that ended in an error (outcome unknown; not counted).
    pub unknown: u64,
    /// Whether the system took a write within a minute of starting again
    /// (NATS: given up after 15 s of its servers answering that the
    /// bucket's stream is not there).
    pub back: bool,
    /// Acknowledged writes a linearizable read did not return as written
    /// (every one, when the system did not come back).
    pub lost: usize,
}

/// Clients per system.
const WRITERS: usize = 16;

/// Waits for the load to have run `at_least` and acknowledged `writes`
/// (at most 60 s, else the system is too slow for the run to say much).
async fn load_for(writers: &Writers, at_least: Duration, writes: usize) -> Result<()> {
    let started = Instant::now();
    while started.elapsed() < at_least || writers.acked_so_far() < writes {
        if started.elapsed() > Duration::from_secs(60) {
            bail!("{} writes acknowledged in 60 s", writers.acked_so_far());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Reads every acknowledged write back, 16 at a time; returns how many
/// are missing or changed (a read that fails counts as missing).
async fn count_lost(writer: &Writer, acked: &HashMap<String, String>) -> usize {
    use futures::StreamExt;
    let reads = acked.iter().map(|(key, value)| async move {
        let read = tokio::time::timeout(Duration::from_secs(10), writer.read(key)).await;
        !matches!(read, Ok(Ok(Some(ref v))) if v == value)
    });
    let missing: Vec<bool> = futures::stream::iter(reads).buffer_unordered(16).collect().await;
    missing.into_iter().filter(|m| *m).count()
}

/// After a fault: waits up to 60 s for `subject` to take a write again
/// (saying so, with its logs, when it does not), then reads every
/// acknowledged write back. Returns whether it came back and how many
/// writes it lost (every one, when it did not come back).
async fn read_back(subject: &mut Subject, system: System, acked: &HashMap<String, String>) -> Result<(bool, usize)> {
    if let Err(e) = subject.wait_back(Duration::from_secs(60)).await {
        eprintln!("{}: not back after the fault: {e:#}\n{}", system.name(), subject.logs());
        return Ok((false, acked.len()));
    }
    Ok((true, count_lost(&subject.writer().await?, acked).await))
}

/// One run: `system` started in `dir` on disks that keep names as
/// `names` says, 16 clients writing for at least 3 s (and 300
/// acknowledged writes), then the power cut to all three members at once
/// and every member started again; then every write acknowledged before
/// the cut is read back.
pub async fn power_cut_run(system: System, names: Names, dir: &std::path::Path) -> Result<Outcome> {
    let mut subject = Subject::start(system, names, dir).await?;
    let writers = Writers::start(&subject.writer().await?, WRITERS);
    load_for(&writers, Duration::from_secs(3), 300).await?;
    subject.freeze_all()?;
    let (acked, unknown) = writers.abort();
    subject.cut_and_restart_all()?;
    let (back, lost) = read_back(&mut subject, system, &acked).await?;
    Ok(Outcome {
        acked: acked.len(),
        unknown,
        back,
        lost,
    })
}

/// The runs of one system on one kind of disk.
pub struct Runs {
    pub system: System,
    pub names: Names,
    pub outcomes: Vec<Outcome>,
}

/// The table of the runs, as docs/chaos.md gives it.
pub fn table(runs: &[Runs]) -> String {
    let mut md = String::from(
        "| system | names durable at | runs | acknowledged before the cut | lost | runs that lost any | back within 60 s |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in runs {
        let names = match r.names {
            Names::Posix => "a sync of their directory (POSIX)",
            Names::Journaled => "any sync (ext4's journal)",
        };
        let acked: usize = r.outcomes.iter().map(|o| o.acked).sum();
        let lost: usize = r.outcomes.iter().map(|o| o.lost).sum();
        let losing = r.outcomes.iter().filter(|o| o.lost > 0).count();
        let back = r.outcomes.iter().filter(|o| o.back).count();
        let (name, n) = (r.system.name(), r.outcomes.len());
        let _ = writeln!(
            md,
            "| {name} | {names} | {n} | {acked} | {lost} | {losing} of {n} | {back} of {n} |"
        );
    }
    md
}
