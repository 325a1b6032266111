//! The chaos suite's short runs (fixed seeds), and the proof that its
//! checkers catch loss. Long runs: `cargo run --release -p handlestore-tests
//! --bin chaos -- --duration 30m --seed N` (docs/chaos.md).

use std::time::Duration;

use handlestore_tests::chaos::faults::FaultKind;
use handlestore_tests::chaos::{ChaosConfig, Report, run};

async fn run_alone(cfg: ChaosConfig) -> Report {
    let _one = crate::WHOLE_MACHINE.lock().await;
    run(cfg).await.expect("chaos run")
}

/// Three nodes secured as production should be (TLS, peer mutual TLS,
/// auth: every client and cart server sends a token), under every fault.
#[tokio::test(flavor = "multi_thread")]
async fn chaos_three_nodes() {
    let mut cfg = ChaosConfig::new(42, Duration::from_secs(100), 3);
    cfg.secure = true;
    let report = run_alone(cfg).await;
    eprintln!("{}", report.summary());
    assert!(report.passed(), "{}", report.summary());
    let kinds: std::collections::BTreeSet<FaultKind> = report.faults.iter().map(|f| f.kind).collect();
    let expected = FaultKind::ALL.len() - report.skipped.len();
    assert_eq!(kinds.len(), expected, "every fault kind was injected: {kinds:?}");
    assert!(
        report.leaders.samples > 100 && report.leaders.terms_led > 1,
        "the leaders were followed through the run: {:?}",
        report.leaders
    );
    assert!(
        report.expiry.reads_live > 50 && report.expiry.reads_gone > 50,
        "enough expiry reads to mean something: {:?}",
        report.expiry
    );
    assert!(
        report.checks.acked_adds > 50 && report.checks.register_ops > 200,
        "enough traffic to mean something"
    );
    assert!(
        report.watch.watchers == 2 && report.watch.deliveries >= 2 * report.checks.acked_mints,
        "both watchers followed every mint: {:?}",
        report.watch
    );
    assert!(
        report.sessions.sessions >= 2 && report.sessions.calls_ok > 20 && report.sessions.streams_replayed > 10,
        "enough legacy-session traffic to mean something: {:?}",
        report.sessions
    );
    assert!(
        report.redeem.accepted > 50 && report.redeem.refused > 50,
        "enough racing redemptions to mean something: {:?}",
        report.redeem
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn chaos_five_nodes() {
    let mut cfg = ChaosConfig::new(7, Duration::from_secs(45), 5);
    cfg.faults = vec![
        FaultKind::KillQuorum,
        FaultKind::PauseLeader,
        FaultKind::PartitionLeader,
        FaultKind::IsolateLeader,
        FaultKind::KillLeader,
        FaultKind::LossyLinks,
    ];
    let report = run_alone(cfg).await;
    eprintln!("{}", report.summary());
    assert!(report.passed(), "{}", report.summary());
}

/// A leader whose read lease never ends (a failpoint) keeps answering reads
/// while cut off from the others, who elect a leader and write on: the
/// register checker must catch the stale reads the isolated leader serves.
#[tokio::test(flavor = "multi_thread")]
async fn the_checkers_catch_a_stale_lease() {
    let mut cfg = ChaosConfig::new(3, Duration::from_secs(20), 3);
    cfg.faults = vec![FaultKind::IsolateLeader];
    cfg.failpoints = Some(format!("{}=error", handlestore_node::failpoints::READ_LEASE_UNBOUNDED));
    cfg.cart_clients = 2;
    cfg.session_clients = 0;
    let report = run_alone(cfg).await;
    if !report.skipped.is_empty() {
        eprintln!("skipped: {}", report.skipped.join("; "));
        return;
    }
    eprintln!("{}", report.summary());
    assert!(!report.passed(), "the checkers must catch the stale reads");
    assert!(
        report.summary().contains("NOT LINEARIZABLE"),
        "a register's history is not linearizable"
    );
}

/// The same cart traffic against a setup that does lose data (one cart
/// server keeping carts in memory, restarted mid-flow) must fail the checks.
#[tokio::test(flavor = "multi_thread")]
async fn the_checkers_catch_a_lossy_setup() {
    let mut cfg = ChaosConfig::new(1, Duration::from_secs(15), 3);
    cfg.lossy = true;
    let report = run_alone(cfg).await;
    eprintln!("{}", report.summary());
    assert!(!report.passed(), "the checkers must catch the loss");
    assert!(report.checks.lost() > 0, "lost carts or items are reported");
    assert!(
        report.summary().contains("reproduce with: --seed 1"),
        "a failing run prints its seed"
    );
    assert!(report.summary().contains("LOST"), "and the history around the loss");
}
