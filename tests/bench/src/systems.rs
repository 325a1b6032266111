//! The systems a benchmark compares, each started on free loopback ports
//! with its data on the same disk, and stopped (killed, data removed) on
//! drop: a 3-node handlestore cluster, a 3-member etcd cluster, and Redis.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use handlestore_tests::cluster::free_port;

/// Installs etcd and Redis (Debian packages) when missing. One call at a
/// time in this process (the script also waits for other processes).
pub fn ensure_installed() -> Result<()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let have = |b: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {b}")])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if have("etcd") && have("redis-server") {
        return Ok(());
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/install-bench-deps.sh");
    let status = Command::new(&script)
        .status()
        .with_context(|| format!("running {}", script.display()))?;
    if !status.success() {
        bail!("{} failed", script.display());
    }
    Ok(())
}

/// Child processes killed on drop.
struct Procs(Vec<Child>);

impl Procs {
    fn pids(&self) -> Vec<u32> {
        self.0.iter().map(Child::id).collect()
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn log_file(dir: &Path, name: &str) -> Result<(Stdio, Stdio)> {
    let f = std::fs::File::create(dir.join(format!("{name}.log")))?;
    Ok((Stdio::from(f.try_clone()?), Stdio::from(f)))
}

/// A 3-member etcd cluster (Debian's etcd-server), as etcd documents a
/// local cluster: one data dir per member, fsync on every commit.
pub struct Etcd {
    procs: Procs,
    pub endpoints: Vec<String>,
}

impl Etcd {
    pub async fn start(dir: &Path) -> Result<Self> {
        let members: Vec<(String, u16, u16)> = (1..=3).map(|i| (format!("e{i}"), free_port(), free_port())).collect();
        let initial: Vec<String> = members
            .iter()
            .map(|(n, _, p)| format!("{n}=http://127.0.0.1:{p}"))
            .collect();
        let initial = initial.join(",");
        let mut procs = Procs(Vec::new());
        for (name, client, peer) in &members {
            let (out, err) = log_file(dir, name)?;
            let child = Command::new("etcd")
                .args(["--name", name])
                .arg("--data-dir")
                .arg(dir.join(name))
                .args(["--listen-client-urls", &format!("http://127.0.0.1:{client}")])
                .args(["--advertise-client-urls", &format!("http://127.0.0.1:{client}")])
                .args(["--listen-peer-urls", &format!("http://127.0.0.1:{peer}")])
                .args(["--initial-advertise-peer-urls", &format!("http://127.0.0.1:{peer}")])
                .args(["--initial-cluster", &initial])
                .args(["--initial-cluster-state", "new", "--initial-cluster-token", "bench"])
                .args(["--logger", "zap", "--log-level", "error"])
                .stdout(out)
                .stderr(err)
                .spawn()
                .context("starting etcd (is etcd-server installed? deploy/install-bench-deps.sh)")?;
            procs.0.push(child);
        }
        let endpoints: Vec<String> = members
            .iter()
            .map(|(_, c, _)| format!("http://127.0.0.1:{c}"))
            .collect();
        // Ready once a linearizable write and read go through.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ok = async {
                let mut c = etcd_client::Client::connect(endpoints.clone(), None).await?;
                c.put("bench/ready", "1", None).await?;
                c.get("bench/ready", None).await?;
                Ok::<_, etcd_client::Error>(())
            };
            match tokio::time::timeout(Duration::from_secs(5), ok).await {
                Ok(Ok(())) => break,
                _ if Instant::now() > deadline => bail!("etcd did not start within 60s; see {}", dir.display()),
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        Ok(Self { procs, endpoints })
    }

    /// The members' process ids.
    pub fn pids(&self) -> Vec<u32> {
        self.procs.pids()
    }

    pub async fn client(&self) -> Result<etcd_client::Client> {
        Ok(etcd_client::Client::connect(self.endpoints.clone(), None).await?)
    }
}

/// How a Redis server persists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisMode {
    /// Debian's defaults: RDB snapshots, no append-only file.
    Shipped,
    /// `appendonly yes`, `appendfsync always`: fsync before each reply.
    FsyncAlways,
}

/// One Redis server (it replicates nothing).
pub struct Redis {
    procs: Procs,
    pub url: String,
}

impl Redis {
    pub async fn start(dir: &Path, mode: RedisMode) -> Result<Self> {
        let port = free_port();
        let name = match mode {
            RedisMode::Shipped => "redis",
            RedisMode::FsyncAlways => "redis-fsync",
        };
        let data = dir.join(name);
        std::fs::create_dir_all(&data)?;
        let (out, err) = log_file(dir, name)?;
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--daemonize", "no"])
            .arg("--dir")
            .arg(&data);
        if mode == RedisMode::FsyncAlways {
            cmd.args(["--appendonly", "yes", "--appendfsync", "always"]);
        }
        let child = cmd
            .stdout(out)
            .stderr(err)
            .spawn()
            .context("starting redis-server (is redis-server installed? deploy/install-bench-deps.sh)")?;
        let procs = Procs(vec![child]);
        let url = format!("redis://127.0.0.1:{port}/");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ok = async {
                let c = redis::Client::open(url.as_str())?;
                let mut conn = c.get_multiplexed_async_connection().await?;
                redis::cmd("PING").query_async::<String>(&mut conn).await
            };
            match tokio::time::timeout(Duration::from_secs(2), ok).await {
                Ok(Ok(_)) => break,
                _ if Instant::now() > deadline => bail!("redis did not start within 30s"),
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        Ok(Self { procs, url })
    }

    /// The server's process id.
    pub fn pids(&self) -> Vec<u32> {
        self.procs.pids()
    }

    /// One connection per worker, as a pool would give. The redis crate
    /// gives up on an answer after 500 ms by default; here a slow answer
    /// counts in the latency, as for the other systems, not as an error.
    pub async fn connection(&self) -> Result<redis::aio::MultiplexedConnection> {
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(60)));
        Ok(redis::Client::open(self.url.as_str())?
            .get_multiplexed_async_connection_with_config(&config)
            .await?)
    }
}
