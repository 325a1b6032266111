//! The TypeScript client's scripts under Node.js:
//! `node --import tsx <script>` run from client/ts (so its node_modules resolve), for the
//! `tsclient` bench (`client/ts/bench/clientBench.ts`) and the TypeScript
//! cart server replicas of the `ts-cart*` systems
//! (`client/ts/examples/cartServer.ts`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use handlestore_tests::cluster::free_port;

/// Node.js and the TypeScript client's directory with its dependencies
/// installed.
#[derive(Debug, Clone)]
pub struct Node {
    /// client/ts.
    pub dir: PathBuf,
}

impl Node {
    /// Node.js on PATH (20 or later) and client/ts's node_modules (tsx,
    /// ioredis), or what is missing and how to get it.
    pub fn find() -> Result<Self> {
        let dir = handlestore_tests::repo_root().join("client/ts");
        let version = Command::new("node").arg("--version").output();
        let version = match version {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
            _ => bail!("Node.js is missing: the TypeScript rows need `node` (20 or later) on PATH"),
        };
        let major: u32 = version
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        anyhow::ensure!(
            major >= 20,
            "Node.js {version} is too old: the TypeScript rows need 20 or later"
        );
        for module in ["tsx", "ioredis", "@modelcontextprotocol/sdk"] {
            anyhow::ensure!(
                dir.join("node_modules").join(module).is_dir(),
                "{} has no node_modules/{module}: run `npm ci` there first",
                dir.display()
            );
        }
        Ok(Self { dir })
    }

    /// `node --import tsx <script>` (relative to client/ts), run from
    /// client/ts.
    pub fn script(&self, script: &str) -> Command {
        let mut c = Command::new("node");
        c.args(["--import", "tsx", script]).current_dir(&self.dir);
        c
    }
}

/// A replica of client/ts/examples/cartServer.ts on a free port, killed on
/// drop.
pub struct TsCartServer {
    pub addr: SocketAddr,
    child: Child,
    log: PathBuf,
}

impl TsCartServer {
    /// Starts `cartServer.ts` with `args` (e.g. `--kv memory`), its output
    /// in a log under `log_dir`, and waits until it accepts connections.
    pub async fn start(node: &Node, args: &[&str], log_dir: &Path) -> Result<Self> {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse()?;
        let log = log_dir.join(format!("ts-cart-server-{}.log", addr.port()));
        let out = std::fs::File::options().create(true).append(true).open(&log)?;
        let child = node
            .script("examples/cartServer.ts")
            .args(["--listen", &addr.to_string()])
            .args(args)
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .spawn()
            .context("spawning node examples/cartServer.ts")?;
        let mut server = Self { addr, child, log };
        server.wait_ready(Duration::from_secs(60)).await?;
        Ok(server)
    }

    async fn wait_ready(&mut self, limit: Duration) -> Result<()> {
        let deadline = Instant::now() + limit;
        while tokio::net::TcpStream::connect(self.addr).await.is_err() {
            let exited = self.child.try_wait()?;
            if exited.is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(&self.log).unwrap_or_default();
                let why = exited.map_or("did not start in time".to_string(), |s| format!("exited ({s})"));
                bail!("cartServer.ts on {} {why}:\n{log}", self.addr);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// The process id (node runs the script in its own process).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }
}

impl Drop for TsCartServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
