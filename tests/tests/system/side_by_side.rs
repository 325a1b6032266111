//! Faults side by side. Power loss: handlestore, etcd 3.7.3 and 3.5.30, NATS JetStream KV
//! with `sync_interval: always` and NATS as shipped, each three members
//! on `powercut_fs` disks under the same writes, the power cut to all
//! three at once, two runs each in a test run (`HANDLESTORE_SIDE_BY_SIDE_RUNS=5`
//! for docs/chaos.md's table). The disks keep names as ext4's journal does (a sync of
//! anything makes every name change before it durable): the disk the
//! others run on in production; `HANDLESTORE_SIDE_BY_SIDE_POSIX=N` adds N
//! runs each on the strict disk the other power-loss tests use (a name
//! durable only once its directory is synced). The table goes to stderr and to
//! `$CARGO_TARGET_TMPDIR/side-by-side-power-cut.md` (docs/chaos.md holds
//! the latest). handlestore must keep every acknowledged write and come
//! back each time; the others are measured, not judged. Skipped, saying
//! why, without root and `/dev/fuse`; a peer the install script could not
//! fetch is left out, saying so.

use std::path::PathBuf;

use handlestore_tests::netns::NetNs;
use handlestore_tests::peers::{ensure_installed, peer_bin};
use handlestore_tests::powercut::Names;
use handlestore_tests::powercut::mount::unavailable;
use handlestore_tests::side_by_side::{Fault, FaultRuns, Runs, System, fault_run, fault_table, power_cut_run, table};

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// Why `system` cannot run here, if it cannot.
fn missing(system: System) -> Option<String> {
    let bin = match system {
        System::Handlestore => return None,
        System::Etcd(release) => release.bin(),
        System::NatsAlways | System::NatsShipped => peer_bin("nats-server"),
    };
    (!bin.exists()).then(|| format!("{} is missing (deploy/install-bench-deps.sh)", bin.display()))
}

/// Installs the peers when missing; says so when that fails (those
/// missing are then left out).
async fn install_peers() {
    if let Err(e) = tokio::task::spawn_blocking(ensure_installed).await.expect("install") {
        eprintln!("the peers' install failed ({e:#}); those missing are left out");
    }
}

/// `n` runs of `run`, each in a new directory, every outcome printed
/// under `label`; a run that fails fails the test.
async fn repeat<O, Fut>(label: &str, n: usize, run: impl Fn(PathBuf) -> Fut) -> Vec<O>
where
    O: std::fmt::Debug,
    Fut: Future<Output = anyhow::Result<O>>,
{
    let mut outcomes = Vec::new();
    for i in 1..=n {
        let dir = tempfile::tempdir().expect("tempdir");
        let outcome = run(dir.path().to_path_buf())
            .await
            .unwrap_or_else(|e| panic!("{label} run {i}: {e:#}"));
        eprintln!("{label} run {i}: {outcome:?}");
        outcomes.push(outcome);
    }
    outcomes
}

/// Prints a table and writes it to `$CARGO_TARGET_TMPDIR/<file>`.
fn save_table(file: &str, md: &str) {
    eprintln!("{md}");
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(file);
    std::fs::write(&out, md).expect("the table");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_power_cut_to_every_member_side_by_side() {
    if let Some(why) = unavailable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let _one = crate::WHOLE_MACHINE.lock().await;
    install_peers().await;
    let mut runs = Vec::new();
    let counts = [
        (Names::Journaled, env_count("HANDLESTORE_SIDE_BY_SIDE_RUNS", 2)),
        (Names::Posix, env_count("HANDLESTORE_SIDE_BY_SIDE_POSIX", 0)),
    ];
    for (names, n) in counts.into_iter().filter(|(_, n)| *n > 0) {
        for system in System::ALL {
            match missing(system) {
                Some(why) => eprintln!("SKIPPED {}: {why}", system.name()),
                None => {
                    let label = format!("{} ({names:?})", system.name());
                    let outcomes = repeat(&label, n, |dir| async move { power_cut_run(system, names, &dir).await });
                    runs.push(Runs {
                        system,
                        names,
                        outcomes: outcomes.await,
                    });
                }
            }
        }
    }
    save_table("side-by-side-power-cut.md", &table(&runs));
    for r in runs.iter().filter(|r| r.system == System::Handlestore) {
        for (i, o) in r.outcomes.iter().enumerate() {
            assert!(
                o.back && o.lost == 0,
                "handlestore ({:?}) run {}: {o:?}",
                r.names,
                i + 1
            );
        }
    }
}

/// Why the kill and partition runs cannot run here, if they cannot.
fn no_namespaces() -> Option<String> {
    if let Err(why) = NetNs::available() {
        return Some(why);
    }
    NetNs::links_available().err().filter(|why| why.contains("iptables"))
}

/// Kill and partition side by side: handlestore, etcd 3.7.3 and 3.5.30, NATS with
/// `sync_interval: always` and NATS as shipped, each member in a network
/// namespace of its own; the leader killed, the leader cut off its peers
/// but not its clients, a follower so cut off; a register workload
/// checked for linearizability and set writes read back after. One run of each by
/// default (`HANDLESTORE_SIDE_BY_SIDE_FAULT_RUNS` for more: docs/chaos.md
/// gives five). The table goes to stderr and to
/// `$CARGO_TARGET_TMPDIR/side-by-side-faults.md`. handlestore must lose
/// nothing, stay linearizable and come back each time; the others are
/// measured. Skipped, saying why, without root, namespaces and iptables.
#[tokio::test(flavor = "multi_thread")]
async fn a_member_killed_or_cut_off_side_by_side() {
    if let Some(why) = no_namespaces() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let _one = crate::WHOLE_MACHINE.lock().await;
    install_peers().await;
    let n = env_count("HANDLESTORE_SIDE_BY_SIDE_FAULT_RUNS", 1);
    let mut runs = Vec::new();
    // NATS as shipped too, though a killed process or a cut link leaves
    // its page cache where it was: its fsync interval, all that sets it
    // apart, does not come into play here.
    for system in System::ALL {
        if let Some(why) = missing(system) {
            eprintln!("SKIPPED {}: {why}", system.name());
            continue;
        }
        for fault in Fault::ALL {
            let label = format!("{} ({fault:?})", system.name());
            let outcomes = repeat(&label, n, |dir| async move { fault_run(system, fault, &dir).await }).await;
            runs.push(FaultRuns {
                system,
                fault,
                outcomes,
            });
        }
    }
    save_table("side-by-side-faults.md", &fault_table(&runs));
    for r in runs.iter().filter(|r| r.system == System::Handlestore) {
        for (i, o) in r.outcomes.iter().enumerate() {
            let clean = o.back && o.lost == 0 && o.registers.violations == 0;
            assert!(clean, "handlestore ({:?}) run {}: {o:?}", r.fault, i + 1);
        }
    }
}
