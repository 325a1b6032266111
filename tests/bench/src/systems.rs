//! The systems a benchmark compares, each started on free loopback ports
//! with its data on the same disk, and stopped (killed, data removed) on
//! drop: Redis here; etcd and NATS in the test harness
//! (`handlestore_tests::peers`), which the system tier's side-by-side
//! faults start too.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use handlestore_tests::cluster::free_port;
pub use handlestore_tests::peers::etcd::{Etcd, EtcdRelease};
pub use handlestore_tests::peers::nats::{Nats, NatsSync};
pub use handlestore_tests::peers::{Member, ensure_installed, peer_bin};

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
    server: Member,
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
        let mut args: Vec<std::ffi::OsString> =
            ["--port", &port.to_string(), "--bind", "127.0.0.1", "--daemonize", "no"]
                .map(Into::into)
                .to_vec();
        args.extend(["--dir".into(), data.into()]);
        if mode == RedisMode::FsyncAlways {
            args.extend(["--appendonly", "yes", "--appendfsync", "always"].map(Into::into));
        }
        let server = Member::start(dir, name, Path::new("redis-server"), args)?;
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
        Ok(Self { server, url })
    }

    /// The server's process id.
    pub fn pids(&self) -> Vec<u32> {
        self.server.pid().into_iter().collect()
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
