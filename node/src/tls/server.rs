//! The server side of a port's TLS: HTTP/2 (gRPC), HTTP/1.1 (health) or
//! the Raft wire by ALPN, optionally requiring client certificates from a
//! CA (and, on the peer port, those of peers its gate admits).

use std::sync::Arc;

use anyhow::Context;
use rustls::ServerConfig;
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use tokio_rustls::TlsAcceptor;

use super::gate::PeerGate;
use super::{RAFT_WIRE_ALPN, Reloading, TlsFiles, VERSIONS, load_certs, load_key, load_roots, peer, provider};

/// A port's TLS, reloaded when its files change.
pub type ServerTls = Reloading<ServerConfig>;

/// Loads a port's TLS (`what` names it in errors and logs); on the peer
/// port, `gate` says which peers' certificates are let in.
pub fn load(what: &'static str, files: TlsFiles, gate: Option<Arc<PeerGate>>) -> anyhow::Result<Arc<ServerTls>> {
    Reloading::load(what, files, Box::new(move |files| server_config(files, gate.clone())))
}

/// An acceptor with the configuration in use now.
pub fn acceptor(tls: &ServerTls) -> TlsAcceptor {
    TlsAcceptor::from(tls.current())
}

fn client_verifier(
    files: &TlsFiles,
    gate: Option<Arc<PeerGate>>,
) -> anyhow::Result<Option<Arc<dyn ClientCertVerifier>>> {
    let Some(ca) = &files.ca else {
        return Ok(None);
    };
    let roots = Arc::new(load_roots(ca)?);
    let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider())
        .build()
        .context("client certificate verifier")?;
    Ok(Some(match gate {
        Some(gate) => Arc::new(peer::MembersOnly::new(verifier, gate)),
        None => verifier,
    }))
}

fn server_config(files: &TlsFiles, gate: Option<Arc<PeerGate>>) -> anyhow::Result<ServerConfig> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(VERSIONS)
        .context("TLS versions")?;
    let builder = match client_verifier(files, gate)? {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder
        .with_single_cert(load_certs(&files.cert)?, load_key(&files.key)?)
        .with_context(|| {
            format!(
                "{} and {} do not make a key pair",
                files.cert.display(),
                files.key.display()
            )
        })?;
    // The Raft wire is offered wherever TLS is; a port that does not
    // serve it refuses such a connection after the handshake (`ports`).
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec(), RAFT_WIRE_ALPN.to_vec()];
    Ok(config)
}
