//! `handlestore dev`: three nodes on loopback in one command. Each node is a
//! child process running `handlestore node`, its output prefixed with its
//! name. Ctrl-C (or SIGTERM) stops all three cleanly; running it again
//! resumes from the same data.
//!
//! By default the cluster is secured as a production one would be, with
//! nothing to set up: certificates (`handlestore certs`) in `DATA/certs`,
//! TLS on the client ports, mutual TLS on peer ports of their own, and
//! auth enabled with root's token in `DATA/root.token`. `--plain` runs it
//! in the clear without auth.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::CliError;

mod secure;

#[derive(clap::Args, Debug)]
pub struct DevArgs {
    /// Where the three nodes keep their data (n1, n2, n3 inside).
    #[arg(long, default_value = DEFAULT_DATA)]
    pub data: PathBuf,
    /// Client port of node 1; nodes 2 and 3 use the next two.
    #[arg(long, default_value_t = 7401)]
    pub base_port: u16,
    /// Host to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Serve a non-loopback --host in the clear (the nodes' --insecure).
    #[arg(long)]
    pub insecure: bool,
    /// No TLS and no auth (a cluster on loopback only).
    #[arg(long)]
    pub plain: bool,
    /// Peer port of node 1 (nodes 2 and 3 use the next two). Default:
    /// --base-port + 10.
    #[arg(long)]
    pub peer_base_port: Option<u16>,
}

/// Where a secured dev cluster keeps its certificates and root's token,
/// under its data directory.
pub const CERTS_DIR: &str = "certs";
pub const ROOT_TOKEN_FILE: &str = "root.token";

/// The default dev data directory, where commands given no credentials
/// look for the dev cluster's CA and root's token.
pub const DEFAULT_DATA: &str = ".handlestore-dev";

/// Ports and flags of the three nodes.
struct Layout {
    host: String,
    ports: Vec<u16>,
    peer_ports: Option<Vec<u16>>,
    certs: Option<PathBuf>,
}

impl Layout {
    fn new(args: &DevArgs) -> Result<Self, CliError> {
        let run = |base: u16| -> Result<Vec<u16>, CliError> {
            (0..3)
                .map(|i| base.checked_add(i))
                .collect::<Option<_>>()
                .ok_or_else(|| CliError::new(2, "port too high"))
        };
        let ports = run(args.base_port)?;
        if args.plain {
            return Ok(Self {
                host: args.host.clone(),
                ports,
                peer_ports: None,
                certs: None,
            });
        }
        let peer_base = match args.peer_base_port {
            Some(p) => p,
            None => args
                .base_port
                .checked_add(10)
                .ok_or_else(|| CliError::new(2, "--base-port too high"))?,
        };
        Ok(Self {
            host: args.host.clone(),
            ports,
            peer_ports: Some(run(peer_base)?),
            certs: Some(args.data.join(CERTS_DIR)),
        })
    }

    fn initial_cluster(&self) -> String {
        let member = |i: usize| match &self.peer_ports {
            Some(pp) => format!("{}={}:{}/{}:{}", i + 1, self.host, self.ports[i], self.host, pp[i]),
            None => format!("{}={}:{}", i + 1, self.host, self.ports[i]),
        };
        (0..3).map(member).collect::<Vec<_>>().join(",")
    }

    /// Node `i`'s flags beyond id, data and cluster.
    fn node_args(&self, i: usize) -> Vec<String> {
        let mut a = vec!["--listen".to_string(), format!("{}:{}", self.host, self.ports[i])];
        // The three stop together: a leader has no one to hand over to.
        a.extend(["--handover-on-stop".into(), "false".into()]);
        if let (Some(pp), Some(certs)) = (&self.peer_ports, &self.certs) {
            let file = |f: String| certs.join(f).display().to_string();
            let (cert, key) = (
                file(format!("node-{}.pem", i + 1)),
                file(format!("node-{}-key.pem", i + 1)),
            );
            a.extend(["--peer-listen".into(), format!("{}:{}", self.host, pp[i])]);
            a.extend(["--tls-cert".into(), cert.clone(), "--tls-key".into(), key.clone()]);
            a.extend(["--peer-tls-cert".into(), cert, "--peer-tls-key".into(), key]);
            a.extend(["--peer-tls-ca".into(), file("ca.pem".into())]);
        }
        a
    }

    fn endpoints(&self) -> Vec<String> {
        let scheme = if self.certs.is_some() { "https" } else { "http" };
        self.ports
            .iter()
            .map(|p| format!("{scheme}://{}:{p}", self.host))
            .collect()
    }
}

/// Makes the dev cluster's certificates (kept if they exist).
fn make_certs(dir: &std::path::Path, host: &str) -> Result<(), CliError> {
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    if !hosts.contains(&host.to_string()) {
        hosts.push(host.to_string());
    }
    super::certs::run(super::certs::CertsArgs {
        dir: dir.to_path_buf(),
        nodes: (1..=3).map(|i| format!("{i}={}", hosts.join(","))).collect(),
        clients: vec!["root".into()],
        days: 3650,
        force: false,
    })
}

pub async fn run(args: DevArgs) -> Result<(), CliError> {
    // Ctrl-C while the nodes start still stops them all.
    let stop = super::shutdown_signal();
    let exe = std::env::current_exe().map_err(|e| CliError::new(2, format!("locating own binary: {e}")))?;
    let layout = Layout::new(&args)?;
    if let Some(certs) = &layout.certs {
        make_certs(certs, &args.host)?;
    }
    let cluster = layout.initial_cluster();
    let mut children: Vec<Child> = Vec::new();
    for i in 0..3 {
        let id = i + 1;
        let data = args.data.join(format!("n{id}"));
        let spawned = Command::new(&exe)
            .arg("node")
            .args(["--id", &id.to_string()])
            .args(layout.node_args(i))
            .arg("--data")
            .arg(&data)
            .args(["--initial-cluster", &cluster])
            .args(args.insecure.then_some("--insecure"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                stop_all(&mut children).await;
                return Err(CliError::new(2, format!("starting node {id}: {e}")));
            }
        };
        prefix_output(&mut child, format!("n{id}"));
        children.push(child);
    }
    let endpoints = layout.endpoints();
    println!("handlestore dev cluster: 3 nodes, data in {}", args.data.display());
    for (i, e) in endpoints.iter().enumerate() {
        println!("  node {}: {e}", i + 1);
    }
    // Says how to reach the cluster (setting auth up first when secured),
    // then runs until a signal or until a node exits on its own.
    let announce = async {
        match &layout.certs {
            Some(certs) => secure::announce(&args.data, certs, &endpoints).await?,
            None => println!("  export HANDLESTORE_ENDPOINTS={}", endpoints.join(",")),
        }
        println!("Press Ctrl-C to stop.");
        std::future::pending::<Result<(), String>>().await
    };
    let failed = tokio::select! {
        _ = stop => None,
        (i, status) = first_exit(&mut children) => {
            eprintln!("node {} exited ({status}); stopping the others", i + 1);
            Some(format!("node {} stopped unexpectedly", i + 1))
        }
        Err(e) = announce => Some(e),
    };
    stop_all(&mut children).await;
    match failed {
        Some(why) => Err(CliError::new(1, why)),
        None => Ok(()),
    }
}

fn prefix_output(child: &mut Child, name: String) {
    if let Some(out) = child.stdout.take() {
        let name = name.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                println!("[{name}] {l}");
            }
        });
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(async move {
            let mut lines = BufReader::new(err).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                eprintln!("[{name}] {l}");
            }
        });
    }
}

async fn first_exit(children: &mut [Child]) -> (usize, String) {
    loop {
        for (i, c) in children.iter_mut().enumerate() {
            if let Ok(Some(status)) = c.try_wait() {
                return (i, status.to_string());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// SIGTERM to every node, then wait (and SIGKILL whatever is still running
/// after 15 s).
async fn stop_all(children: &mut [Child]) {
    for c in children.iter() {
        if let Some(pid) = c.id() {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
        }
    }
    for c in children.iter_mut() {
        if tokio::time::timeout(Duration::from_secs(15), c.wait()).await.is_err() {
            let _ = c.kill().await;
        }
    }
}
