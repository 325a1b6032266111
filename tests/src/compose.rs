//! Drives `deploy/docker-compose.yml` for the Docker tests: one compose
//! project per test, on free host ports, torn down (volumes too) on drop.
//!
//! Works with the Compose plugin (`docker compose`) or the standalone
//! `docker-compose`, whichever this machine has.

use std::process::Output;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::process::Command;

use crate::cluster::{free_port, handlestore_bin};
use crate::creds::Credentials;

/// Why Docker tests cannot run here, or `None` when a Docker engine answers
/// and a Compose command exists.
pub fn unavailable() -> Option<String> {
    let engine = std::process::Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output();
    match engine {
        Err(e) => return Some(format!("the docker command is not available ({e})")),
        Ok(o) if !o.status.success() => {
            return Some(format!(
                "no Docker engine answers: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ));
        }
        Ok(_) => {}
    }
    if compose_command().is_none() {
        return Some("neither `docker compose` nor `docker-compose` is installed".into());
    }
    None
}

fn compose_command() -> Option<Vec<String>> {
    let ok = |cmd: &str, args: &[&str]| {
        std::process::Command::new(cmd)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if ok("docker", &["compose", "version"]) {
        Some(vec!["docker".into(), "compose".into()])
    } else if ok("docker-compose", &["version"]) {
        Some(vec!["docker-compose".into()])
    } else {
        None
    }
}

/// Builds the image the tests run (`deploy/build-image.sh`, from the
/// binaries this test run already built) under `tag`.
pub async fn build_image(tag: &str) -> Result<()> {
    let bin_dir = handlestore_bin().parent().expect("target dir").to_path_buf();
    let out = Command::new(crate::repo_root().join("deploy/build-image.sh"))
        .env("HANDLESTORE_IMAGE", tag)
        .env("HANDLESTORE_BIN_DIR", &bin_dir)
        .output()
        .await
        .context("running deploy/build-image.sh")?;
    if !out.status.success() {
        bail!(
            "deploy/build-image.sh failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The image of the `metrics` profile's Prometheus the tests build.
pub const PROMETHEUS_IMAGE: &str = "handlestore-prometheus:test";

/// Builds the `metrics` profile's Prometheus image
/// (`deploy/build-prometheus-image.sh`, from Debian's binary).
pub async fn build_prometheus_image() -> Result<()> {
    let out = Command::new(crate::repo_root().join("deploy/build-prometheus-image.sh"))
        .env("HANDLESTORE_PROMETHEUS_IMAGE", PROMETHEUS_IMAGE)
        .output()
        .await
        .context("running deploy/build-prometheus-image.sh")?;
    check("deploy/build-prometheus-image.sh", out).map(drop)
}

/// One compose project from `deploy/docker-compose.yml`.
pub struct Compose {
    cmd: Vec<String>,
    pub project: String,
    /// Host ports of node1..node3's client port.
    pub node_ports: [u16; 3],
    /// Host ports of cart1 and cart2.
    pub cart_ports: [u16; 2],
    /// Host port of the `metrics` profile's Prometheus.
    pub prometheus_port: u16,
    image: String,
    /// Copies of the CA and root's token from the `secrets` volume.
    secrets: tempfile::TempDir,
}

impl Compose {
    pub fn new(image: &str) -> Result<Self> {
        let cmd = compose_command().context("no compose command")?;
        let project = format!("hstest{}x{}", std::process::id(), free_port());
        Ok(Self {
            cmd,
            project,
            node_ports: [free_port(), free_port(), free_port()],
            cart_ports: [free_port(), free_port()],
            prometheus_port: free_port(),
            image: image.to_string(),
            secrets: tempfile::tempdir()?,
        })
    }

    /// `compose --project-name P --file deploy/docker-compose.yml`, with
    /// this project's image and ports in its environment.
    fn std_command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(&self.cmd[0]);
        c.args(&self.cmd[1..])
            .arg("--project-name")
            .arg(&self.project)
            .arg("--file")
            .arg(crate::repo_root().join("deploy/docker-compose.yml"))
            .env("HANDLESTORE_IMAGE", &self.image)
            .env("HANDLESTORE_PROMETHEUS_IMAGE", PROMETHEUS_IMAGE)
            .env("PROMETHEUS_PORT", self.prometheus_port.to_string())
            .env("RUST_LOG", "info,openraft=warn");
        for (i, p) in self.node_ports.iter().enumerate() {
            c.env(format!("HANDLESTORE_PORT_{}", i + 1), p.to_string());
        }
        for (i, p) in self.cart_ports.iter().enumerate() {
            c.env(format!("CART_PORT_{}", i + 1), p.to_string());
        }
        c
    }

    fn command(&self) -> Command {
        let mut c = Command::from(self.std_command());
        c.kill_on_drop(true);
        c
    }

    /// Runs `compose ARGS`; fails with its output when it fails.
    pub async fn run(&self, args: &[&str]) -> Result<String> {
        let out = self
            .command()
            .args(args)
            .output()
            .await
            .with_context(|| format!("compose {args:?}"))?;
        check(&format!("compose {}", args.join(" ")), out)
    }

    pub async fn up(&self) -> Result<()> {
        self.run(&["up", "--detach", "--no-build"]).await.map(drop)
    }

    /// The container id of a service.
    pub async fn container(&self, service: &str) -> Result<String> {
        let id = self.run(&["ps", "--quiet", service]).await?.trim().to_string();
        if id.is_empty() {
            bail!("service {service} has no container");
        }
        Ok(id)
    }

    /// `docker ARGS` on a service's container (`{}` is replaced by its id).
    pub async fn docker(&self, service: &str, args: &[&str]) -> Result<String> {
        let id = self.container(service).await?;
        let args: Vec<String> = args.iter().map(|a| a.replace("{}", &id)).collect();
        docker(&args).await
    }

    /// Runs `handlestore ARGS` inside a node's container, against that node
    /// only; returns its output whether it succeeded or not.
    pub async fn exec_handlestore(&self, service: &str, args: &[&str]) -> Result<Output> {
        let id = self.container(service).await?;
        let out = Command::new("docker")
            .args(["exec", &id, "/usr/local/bin/handlestore"])
            .args(args)
            .output()
            .await?;
        Ok(out)
    }

    /// The health status Docker reports for a service ("healthy", ...).
    pub async fn health(&self, service: &str) -> Result<String> {
        Ok(self
            .docker(service, &["inspect", "--format", "{{.State.Health.Status}}", "{}"])
            .await?
            .trim()
            .to_string())
    }

    /// Waits until Docker reports every service healthy.
    pub async fn wait_healthy(&self, services: &[&str], timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let mut states = Vec::new();
            for s in services {
                states.push(self.health(s).await.unwrap_or_else(|e| format!("{e:#}")));
            }
            if states.iter().all(|s| s == "healthy") {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "not healthy within {timeout:?}: {services:?} are {states:?}\n{}",
                    self.logs().await
                );
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// The compose network the nodes talk on.
    pub fn network(&self) -> String {
        format!("{}_cluster", self.project)
    }

    /// Cuts a service off the cluster network: a real partition.
    pub async fn disconnect(&self, service: &str) -> Result<()> {
        let net = self.network();
        self.docker(service, &["network", "disconnect", &net, "{}"])
            .await
            .map(drop)
    }

    /// Puts it back, under its service name again.
    pub async fn reconnect(&self, service: &str) -> Result<()> {
        let net = self.network();
        self.docker(service, &["network", "connect", "--alias", service, &net, "{}"])
            .await
            .map(drop)
    }

    /// Host endpoints of the nodes (`https://127.0.0.1:PORT`).
    pub fn endpoints(&self) -> Vec<String> {
        (1..=self.node_ports.len()).map(|n| self.endpoint(n)).collect()
    }

    pub fn endpoint(&self, node: usize) -> String {
        format!("https://127.0.0.1:{}", self.node_ports[node - 1])
    }

    /// The CA and root's token the one-shot services put in the `secrets`
    /// volume, copied out of node1's container (as docs/docker.md says
    /// an operator does).
    pub async fn credentials(&self) -> Result<Credentials> {
        let mut files = Vec::new();
        for name in ["ca.pem", "root.token"] {
            let to = self.secrets.path().join(name);
            let from = format!("{{}}:/secrets/{name}");
            self.docker("node1", &["cp", &from, &to.display().to_string()]).await?;
            files.push(to);
        }
        Credentials::from_files(&files[0], &files[1])
    }

    /// MCP URLs of the two cart servers.
    pub fn cart_urls(&self) -> Vec<String> {
        self.cart_ports
            .iter()
            .map(|p| format!("http://127.0.0.1:{p}/mcp"))
            .collect()
    }

    /// The last lines of every service's log, for failure messages.
    pub async fn logs(&self) -> String {
        match self
            .command()
            .args(["logs", "--no-color", "--tail", "40"])
            .output()
            .await
        {
            Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
            Err(e) => format!("(no logs: {e})"),
        }
    }
}

impl Drop for Compose {
    fn drop(&mut self) {
        // Containers (the metrics profile's too), network and volumes:
        // leave nothing behind.
        let _ = self
            .std_command()
            .args(["--profile", "metrics", "down", "--volumes", "--timeout", "5"])
            .output();
    }
}

/// Runs `docker ARGS`; fails with its output when it fails.
pub async fn docker(args: &[String]) -> Result<String> {
    let out = Command::new("docker")
        .args(args)
        .output()
        .await
        .with_context(|| format!("docker {args:?}"))?;
    check(&format!("docker {}", args.join(" ")), out)
}

fn check(what: &str, out: Output) -> Result<String> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        bail!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}
