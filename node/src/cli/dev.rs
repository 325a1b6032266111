//! `handlestore dev`: three nodes on loopback in one command. Each node is a
//! child process running `handlestore node`, its output prefixed with its
//! name. Ctrl-C (or SIGTERM) stops all three cleanly; running it again
//! resumes from the same data.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::CliError;

#[derive(clap::Args, Debug)]
pub struct DevArgs {
    /// Where the three nodes keep their data (n1, n2, n3 inside).
    #[arg(long, default_value = ".handlestore-dev")]
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
}

pub async fn run(args: DevArgs) -> Result<(), CliError> {
    // Ctrl-C while the nodes start still stops them all.
    let stop = super::shutdown_signal();
    let exe = std::env::current_exe().map_err(|e| CliError::new(2, format!("locating own binary: {e}")))?;
    let ports: Vec<u16> = (0..3)
        .map(|i| args.base_port.checked_add(i))
        .collect::<Option<_>>()
        .ok_or_else(|| CliError::new(2, "--base-port too high"))?;
    let cluster: Vec<String> = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}={}:{p}", i + 1, args.host))
        .collect();
    let cluster = cluster.join(",");
    let mut children: Vec<Child> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let id = i + 1;
        let data = args.data.join(format!("n{id}"));
        let spawned = Command::new(&exe)
            .arg("node")
            .args(["--id", &id.to_string()])
            .args(["--listen", &format!("{}:{port}", args.host)])
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
    let endpoints: Vec<String> = ports.iter().map(|p| format!("http://{}:{p}", args.host)).collect();
    println!("handlestore dev cluster: 3 nodes, data in {}", args.data.display());
    for (i, e) in endpoints.iter().enumerate() {
        println!("  node {}: {e}", i + 1);
    }
    println!("  export HANDLESTORE_ENDPOINTS={}", endpoints.join(","));
    println!("Press Ctrl-C to stop.");

    // Run until a signal, or until a node exits on its own.
    let exited = tokio::select! {
        _ = stop => None,
        id = first_exit(&mut children) => Some(id),
    };
    if let Some((i, status)) = &exited {
        eprintln!("node {} exited ({status}); stopping the others", i + 1);
    }
    stop_all(&mut children).await;
    match exited {
        Some((i, _)) => Err(CliError::new(1, format!("node {} stopped unexpectedly", i + 1))),
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
