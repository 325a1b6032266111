//! Fault hooks for crash tests (fail-rs failpoints), compiled only with the
//! `failpoints` cargo feature (the workspace build of `deploy/build.sh`,
//! which `deploy/dev.sh` and `tests/run.sh` share, enables it; the Docker
//! image builds without it, and there every point is an empty function).
//!
//! A node reads [`ENV`] once, at start: `;`-separated `point=actions`, in
//! fail-rs's syntax (`sleep(100)`, `3*off->crash`, `pause`, `panic`), with
//! two actions of ours: `crash`, which ends the process at that point at
//! once (abort: no clean-up, nothing flushed; what a kill -9 or a machine
//! losing power at that instant leaves), and `error`, which fails the step
//! with an I/O error where the point allows it (`io_here`: a disk
//! refusing a write). Unset, every point does nothing.
//! [`POINTS`] lists them all; the crash tests
//! (`tests/tests/cluster/crash_points.rs`) crash a node at each.

/// The environment variable a node reads its failpoints from.
pub const ENV: &str = "HANDLESTORE_FAILPOINTS";

/// Every point, in the order a write meets them.
pub const POINTS: &[&str] = &[
    // The Raft log (raft/log/log_store.rs): entries appended to RocksDB's
    // memtable, then the WAL synced by the sync thread.
    LOG_APPEND_BEFORE_WRITE,
    LOG_APPEND_AFTER_WRITE,
    LOG_SYNC_BEFORE,
    LOG_SYNC_AFTER,
    // The state machine (state/apply): a batch of committed entries applied
    // in one RocksDB write, then answered.
    APPLY_MID_BATCH,
    APPLY_AFTER_COMMIT,
    // Snapshots (state/snapshot.rs, raft/net/network.rs, raft/service.rs).
    SNAPSHOT_BUILD_MID,
    SNAPSHOT_SEND_MID,
    SNAPSHOT_RECEIVE_MID,
    SNAPSHOT_INSTALL_MID,
    // Log compaction, after the purge point is recorded.
    LOG_PURGE_MID,
];

pub const LOG_APPEND_BEFORE_WRITE: &str = "log-append-before-write";
pub const LOG_APPEND_AFTER_WRITE: &str = "log-append-after-write";
/// Before each WAL sync: `sleep(ms)` here is a slow disk.
pub const LOG_SYNC_BEFORE: &str = "log-sync-before";
pub const LOG_SYNC_AFTER: &str = "log-sync-after";
/// After the first entry of a batch of two or more is applied, before
/// the batch is written.
pub const APPLY_MID_BATCH: &str = "apply-mid-batch";
pub const APPLY_AFTER_COMMIT: &str = "apply-after-commit";
/// After the first column family is written to a snapshot file.
pub const SNAPSHOT_BUILD_MID: &str = "snapshot-build-mid";
/// After the first chunk of a snapshot is sent; `corrupt` there flips a
/// byte of each chunk instead (what the receiver's checksum must catch).
pub const SNAPSHOT_SEND_MID: &str = "snapshot-send-mid";
/// After the first chunk of a snapshot is written to the incoming file.
pub const SNAPSHOT_RECEIVE_MID: &str = "snapshot-receive-mid";
/// After the state is cleared and the first records written.
pub const SNAPSHOT_INSTALL_MID: &str = "snapshot-install-mid";
/// After the purge point is stored, before the entries are deleted.
pub const LOG_PURGE_MID: &str = "log-purge-mid";

/// Points that break a guarantee on purpose, off the write path (no crash
/// test): the proof that a checker catches what they break.
pub const BREAKERS: &[&str] = &[READ_LEASE_UNBOUNDED];

/// Where the leader checks its read lease: `error` here makes a lease that
/// never ends (reads served on it long after other nodes could elect a new
/// leader), what the chaos suite's stale-read checker must catch.
pub const READ_LEASE_UNBOUNDED: &str = "read-lease-unbounded";

/// Points in the cluster's life, off the write path: a crash at each is a
/// test of its own.
pub const LIFE: &[&str] = &[JOIN_BEFORE_PROMOTE];

/// A node joining by itself (`--join`, raft/life/join.rs) has been added
/// as a learner and caught up, and has not yet asked to be made a voter.
pub const JOIN_BEFORE_PROMOTE: &str = "join-before-promote";

/// Configures the points [`ENV`] names; call once, at start.
#[cfg(feature = "failpoints")]
pub fn init() -> anyhow::Result<()> {
    let Ok(spec) = std::env::var(ENV) else {
        return Ok(());
    };
    for item in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, actions) = item
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("{ENV}: `{item}` is not point=actions"))?;
        if ![POINTS, BREAKERS, LIFE].iter().any(|points| points.contains(&name)) {
            let all = [POINTS, BREAKERS, LIFE].concat().join(", ");
            anyhow::bail!("{ENV}: no failpoint `{name}` (there are: {all})");
        }
        // Ours are fail-rs's `return`, given a meaning at the point.
        let actions = actions
            .replace("crash", "return(crash)")
            .replace("corrupt", "return(corrupt)")
            .replace("error", "return(error)");
        fail::cfg(name, &actions).map_err(|e| anyhow::anyhow!("{ENV}: {name}: {e}"))?;
        tracing::warn!("failpoint {name}={actions}");
    }
    Ok(())
}

/// Without the feature, [`ENV`] set is an error: the build cannot obey it.
#[cfg(not(feature = "failpoints"))]
pub fn init() -> anyhow::Result<()> {
    match std::env::var_os(ENV) {
        None => Ok(()),
        Some(_) => anyhow::bail!("{ENV} is set, and this build has no failpoints (the `failpoints` feature)"),
    }
}

/// Ends the process at failpoint `name`, as a crash would.
pub fn crash(name: &str) -> ! {
    eprintln!("handlestore: failpoint {name}: crashing");
    std::process::abort()
}

/// What a failpoint asks of one pass.
#[derive(Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
enum Act {
    Pass,
    Corrupt,
    Fail,
}

/// Passes failpoint `name`: `crash` ends the process here; fail-rs's
/// `sleep`, `pause` and `panic` act as documented.
pub(crate) fn hit(name: &str) {
    let _ = act(name);
}

/// As [`hit`], and tells whether the point asks for `corrupt` on this pass.
pub(crate) fn corrupt_here(name: &str) -> bool {
    act(name) == Act::Corrupt
}

/// As [`hit`], and tells whether the point asks for `error` on this pass.
pub(crate) fn error_here(name: &str) -> bool {
    act(name) == Act::Fail
}

/// As [`hit`], and fails with an I/O error where the point asks for
/// `error` on this pass.
pub(crate) fn io_here(name: &str) -> std::io::Result<()> {
    match error_here(name) {
        true => Err(std::io::Error::other(format!("failpoint {name}: error"))),
        false => Ok(()),
    }
}

#[cfg(feature = "failpoints")]
fn act(name: &str) -> Act {
    match fail::eval(name, |arg| arg).flatten().as_deref() {
        Some("crash") => crash(name),
        Some("corrupt") => Act::Corrupt,
        Some("error") => Act::Fail,
        _ => Act::Pass,
    }
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
fn act(_name: &str) -> Act {
    Act::Pass
}
