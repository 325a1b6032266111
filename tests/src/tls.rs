//! Certificates for test clusters with TLS, made by `handlestore certs` as
//! a user would make them.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use handlestore_client::ClientTls;

/// A directory of certificates from `handlestore certs`: a CA, nodes 1 to
/// `nodes` (localhost and 127.0.0.1), and a client named `root`.
#[derive(Debug, Clone)]
pub struct TestTls {
    pub dir: PathBuf,
    /// Whether nodes require client certificates (`--tls-client-ca`).
    pub client_certs: bool,
}

impl TestTls {
    /// Makes the certificates in `dir` (a CA, `nodes` nodes and the root
    /// client).
    pub fn make(dir: &Path, nodes: u64, client_certs: bool) -> Result<Self> {
        let hosts: Vec<(u64, String)> = (1..=nodes).map(|id| (id, "127.0.0.1".to_string())).collect();
        Self::make_for(dir, &hosts, client_certs)
    }

    /// As [`make`](Self::make), for nodes at these hosts (each certificate
    /// also names localhost and 127.0.0.1).
    pub fn make_for(dir: &Path, hosts: &[(u64, String)], client_certs: bool) -> Result<Self> {
        let mut cmd = Command::new(crate::handlestore_bin());
        cmd.arg("certs").arg("--dir").arg(dir).args(["--client", "root"]);
        for (id, host) in hosts {
            let names = if host == "127.0.0.1" {
                String::new()
            } else {
                format!(",{host}")
            };
            cmd.args(["--node", &format!("{id}=localhost,127.0.0.1{names}")]);
        }
        certs(&mut cmd)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            client_certs,
        })
    }

    /// Adds a client certificate named `name` (signed by the same CA).
    pub fn add_client(&self, name: &str) -> Result<()> {
        let mut cmd = Command::new(crate::handlestore_bin());
        cmd.arg("certs").arg("--dir").arg(&self.dir).args(["--client", name]);
        certs(&mut cmd)
    }

    /// Adds a node certificate for node `id` (at localhost and 127.0.0.1),
    /// signed by the same CA.
    pub fn add_node(&self, id: u64) -> Result<()> {
        let mut cmd = Command::new(crate::handlestore_bin());
        cmd.arg("certs").arg("--dir").arg(&self.dir);
        cmd.args(["--node", &format!("{id}=localhost,127.0.0.1")]);
        certs(&mut cmd)
    }

    /// The attacker's view of a certificate in this directory (`stem`:
    /// `client-root`, `node-4`, ...).
    pub fn identity(&self, stem: &str) -> (PathBuf, PathBuf, PathBuf) {
        (
            self.path("ca.pem"),
            self.path(&format!("{stem}.pem")),
            self.path(&format!("{stem}-key.pem")),
        )
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// The flags that give node `id` its TLS: on the client port, and
    /// mutual TLS on the peer port, with the same node certificate.
    pub fn node_args(&self, id: u64) -> Vec<String> {
        let file = |f: String| self.path(&f).display().to_string();
        let (cert, key) = (file(format!("node-{id}.pem")), file(format!("node-{id}-key.pem")));
        let mut args = vec![
            "--tls-cert".into(),
            cert.clone(),
            "--tls-key".into(),
            key.clone(),
            "--peer-tls-cert".into(),
            cert,
            "--peer-tls-key".into(),
            key,
            "--peer-tls-ca".into(),
            file("ca.pem".into()),
        ];
        if self.client_certs {
            args.extend(["--tls-client-ca".into(), file("ca.pem".into())]);
        }
        args
    }

    /// The client side: the CA, and the root client's certificate where
    /// nodes require one.
    pub fn client(&self) -> ClientTls {
        self.client_as(self.client_certs.then_some("root"))
    }

    /// The client side, showing client `name`'s certificate (or none).
    pub fn client_as(&self, name: Option<&str>) -> ClientTls {
        let ca = self.path("ca.pem");
        let result = match name {
            Some(n) => {
                let (cert, key) = (
                    self.path(&format!("client-{n}.pem")),
                    self.path(&format!("client-{n}-key.pem")),
                );
                ClientTls::from_files(&ca, Some(&cert), Some(&key))
            }
            None => ClientTls::from_files(&ca, None, None),
        };
        result.expect("client TLS")
    }
}

fn certs(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().context("running handlestore certs")?;
    if !out.status.success() {
        bail!(
            "handlestore certs failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
