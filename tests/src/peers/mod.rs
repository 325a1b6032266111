//! The stores handlestore is measured beside, as processes on loopback:
//! a 3-member etcd cluster ([`etcd`]) and a 3-server NATS JetStream
//! cluster with one key-value bucket ([`nats`]). The bench's rows
//! (tests/bench) and the system tier's side-by-side faults (power loss)
//! start them alike. Member `name` keeps its data under `dir/name` (its
//! disk: a test may mount `powercut_fs` there before starting it), its
//! output in `dir/name.log`; every member can be frozen, killed and
//! started again on the same ports over the same disk. The members run
//! on loopback, or each in a network namespace of its own ([`Placement`]),
//! where a fault can cut one off.

pub mod etcd;
mod member;
pub mod nats;
mod placement;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

pub use member::Member;
pub use placement::Placement;

/// Where `deploy/install-bench-deps.sh` puts the peers it fetches (etcd
/// 3.5.30, nats-server 2.15.1): `$HANDLESTORE_PEERS`, or
/// `~/.cache/handlestore/peers`.
fn peers_dir() -> PathBuf {
    match std::env::var_os("HANDLESTORE_PEERS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/handlestore/peers"),
    }
}

/// A peer's binary as the install script leaves it.
pub fn peer_bin(name: &str) -> PathBuf {
    peers_dir().join("bin").join(name)
}

/// Member `name`'s disk: everything it keeps is under it.
pub fn disk(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Installs the peers when missing (Redis and etcd 3.4 from the machine's
/// suite, etcd 3.5.30 and nats-server from Debian's unstable one), one
/// call at a time in this process (the script also waits for other
/// processes). A peer the script could not get fails when its system
/// starts, saying so.
pub fn ensure_installed() -> Result<()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let peers = ["etcd", "nats-server"].iter().all(|b| peer_bin(b).exists());
    if have("etcd") && have("redis-server") && peers {
        return Ok(());
    }
    let script = crate::repo_root().join("deploy/install-bench-deps.sh");
    let status = Command::new(&script)
        .status()
        .with_context(|| format!("running {}", script.display()))?;
    let usable = status.success() || (have("etcd") && have("redis-server"));
    if !usable {
        bail!("{} failed", script.display());
    }
    Ok(())
}

/// Tries `attempt` (each try given 5 s) until it succeeds or `within`
/// has passed; `what` names it in the error.
pub(crate) async fn until_ok<F, Fut>(within: Duration, what: &str, attempt: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    until_ok_or(within, what, attempt, |_| false).await
}

/// As [`until_ok`], but giving up at once when `hopeless`, called with
/// each failed try's error in turn, says so.
pub(crate) async fn until_ok_or<F, Fut>(
    within: Duration,
    what: &str,
    mut attempt: F,
    mut hopeless: impl FnMut(&str) -> bool,
) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let deadline = Instant::now() + within;
    loop {
        let error = match tokio::time::timeout(Duration::from_secs(5), attempt()).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => format!("{e:#}"),
            Err(_) => "no answer within 5 s".to_string(),
        };
        if hopeless(&error) || Instant::now() > deadline {
            bail!("{what} within {within:?}: {error}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
