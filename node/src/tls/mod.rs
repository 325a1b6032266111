//! TLS on a node's ports (rustls, on ring: the one crypto provider of the
//! build). The client port's server configuration (`server`), the peer
//! port's mutual TLS, both ends (`peer`), all from PEM files and reloaded
//! without a restart when the files change or on SIGHUP (`Reloading`): a
//! file that does not load at reload is logged and the configuration in
//! use is kept. It imports only `config` (the files); `raft` and
//! `server` use it, never the reverse (the Raft wire's ALPN id lives here
//! for that).

pub mod gate;
pub mod names;
pub mod peer;
pub mod server;

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// How often the files are checked for changes.
const WATCH_EVERY: Duration = Duration::from_secs(2);

/// The ALPN protocol id of the Raft wire (`raft::net::peer_wire`), which
/// a leader offers alone and the peer port accepts beside h2.
pub const RAFT_WIRE_ALPN: &[u8] = b"hsraft/1";

/// The first byte of every TLS connection (a handshake record).
pub const HANDSHAKE_RECORD: u8 = 0x16;

/// The message a client in the clear gets on a TLS port.
pub const REQUIRES_TLS: &str = "this port requires TLS: connect with https:// and the cluster's CA \
     (--cacert, HANDLESTORE_CACERT, or ClientBuilder::tls)";

pub use crate::config::TlsFiles;

/// The files of `files`, certificate first.
fn paths(files: &TlsFiles) -> impl Iterator<Item = &Path> {
    [files.cert.as_path(), files.key.as_path()]
        .into_iter()
        .chain(files.ca.as_deref())
}

/// When each file of `files` last changed, to notice a new one.
fn stamps(files: &TlsFiles) -> Vec<Option<SystemTime>> {
    paths(files)
        .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .collect()
}

/// The crypto provider every TLS configuration of the build uses.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// TLS 1.3 and 1.2, nothing older.
pub const VERSIONS: &[&rustls::SupportedProtocolVersion] = &[&rustls::version::TLS13, &rustls::version::TLS12];

pub fn load_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("reading certificates from {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing certificates in {}", path.display()))?;
    anyhow::ensure!(!certs.is_empty(), "no certificate in {}", path.display());
    Ok(certs)
}

pub fn load_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path).with_context(|| format!("reading a private key from {}", path.display()))
}

pub fn load_roots(path: &Path) -> anyhow::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in load_certs(path)? {
        roots
            .add(cert)
            .with_context(|| format!("a CA certificate in {}", path.display()))?;
    }
    Ok(roots)
}

/// A client configuration trusting the CA in `ca` (and showing `identity`,
/// a certificate and its key, if given), offering `alpn`.
pub fn client_config(ca: &Path, identity: Option<(&Path, &Path)>, alpn: &[u8]) -> anyhow::Result<rustls::ClientConfig> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .context("TLS versions")?
        .with_root_certificates(load_roots(ca)?);
    let mut config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(load_certs(cert)?, load_key(key)?)
            .with_context(|| format!("{} and {} do not make a key pair", cert.display(), key.display()))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(config)
}

/// How a configuration is made from its files.
pub type Build<T> = Box<dyn Fn(&TlsFiles) -> anyhow::Result<T> + Send + Sync>;

/// A configuration built from files, swapped whole when they change.
pub struct Reloading<T> {
    what: &'static str,
    files: TlsFiles,
    build: Build<T>,
    current: RwLock<Arc<T>>,
    stamps: Mutex<Vec<Option<SystemTime>>>,
}

impl<T: Send + Sync + 'static> Reloading<T> {
    /// Builds `what` from `files`; an error says which file is wrong.
    pub fn load(what: &'static str, files: TlsFiles, build: Build<T>) -> anyhow::Result<Arc<Self>> {
        let stamps = stamps(&files);
        let config = build(&files).with_context(|| what)?;
        Ok(Arc::new(Self {
            what,
            files,
            build,
            current: RwLock::new(Arc::new(config)),
            stamps: Mutex::new(stamps),
        }))
    }

    /// The configuration in use now.
    pub fn current(&self) -> Arc<T> {
        self.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Loads the files again; on failure the configuration in use stays.
    pub fn reload(&self, why: &str) {
        let stamps = stamps(&self.files);
        match (self.build)(&self.files) {
            Ok(config) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(config);
                tracing::info!(cert = %self.files.cert.display(), "{}: TLS certificates reloaded ({why})", self.what);
            }
            Err(e) => tracing::warn!(
                "{}: TLS certificates not reloaded ({why}), keeping those in use: {e:#}",
                self.what
            ),
        }
        *self.stamps.lock().unwrap_or_else(|p| p.into_inner()) = stamps;
    }

    fn changed(&self) -> bool {
        *self.stamps.lock().unwrap_or_else(|p| p.into_inner()) != stamps(&self.files)
    }

    /// Reloads on SIGHUP and whenever a file changes, until the process
    /// ends.
    pub fn watch(self: &Arc<Self>) {
        let this = self.clone();
        tokio::spawn(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let mut hup = signal(SignalKind::hangup()).ok();
            let mut tick = tokio::time::interval(WATCH_EVERY);
            loop {
                let hangup = async {
                    match hup.as_mut() {
                        Some(h) => h.recv().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = hangup => this.reload("SIGHUP"),
                    _ = tick.tick() => if this.changed() { this.reload("the files changed") },
                }
            }
        });
    }
}

#[cfg(test)]
mod tests;
