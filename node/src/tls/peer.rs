//! Mutual TLS between nodes on the peer port. A node dials its peers with
//! its own certificate and trusts only the cluster's CA for theirs (the
//! peer address's host must be named in the peer's certificate); a node
//! accepts only peers whose certificate is from that CA and that its
//! [`PeerGate`] admits (a current member's node name, by default).

use std::sync::Arc;

use anyhow::Context;
use handlestore_proto::conn::{ClientConn, Conn};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, DistinguishedName, SignatureScheme};
use tokio_rustls::TlsConnector;

use super::gate::PeerGate;
use super::{Reloading, TlsFiles};

/// The dialing side of the peer port's TLS, reloaded with its files.
pub type PeerClientTls = Reloading<ClientConfig>;

pub fn load_client(files: TlsFiles) -> anyhow::Result<Arc<PeerClientTls>> {
    Reloading::load("peer TLS", files, Box::new(client_config))
}

fn client_config(files: &TlsFiles) -> anyhow::Result<ClientConfig> {
    let ca = files
        .ca
        .as_ref()
        .context("peer TLS needs the cluster's CA (--peer-tls-ca)")?;
    super::client_config(ca, Some((&files.cert, &files.key)), b"h2")
}

/// The configuration in use, asking for the Raft wire (alone) by ALPN.
pub fn wire_config(tls: &PeerClientTls) -> Arc<ClientConfig> {
    let mut config = (*tls.current()).clone();
    config.alpn_protocols = vec![super::RAFT_WIRE_ALPN.to_vec()];
    Arc::new(config)
}

/// Mutual TLS over a connection to the peer at `host`, for a gRPC
/// channel (the connection is opened by whoever resolves the peer's name).
pub async fn handshake(host: &str, tcp: tokio::net::TcpStream, tls: &PeerClientTls) -> std::io::Result<ClientConn> {
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let name = ServerName::try_from(host.clone())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{host}: {e}")))?;
    let stream = TlsConnector::from(tls.current()).connect(name, Conn::new(tcp)).await?;
    Ok(ClientConn::Tls(Box::new(stream)))
}

/// A client-certificate verifier that, on top of the CA's check, lets in
/// only the peers the gate admits (see [`PeerGate`]).
#[derive(Debug)]
pub struct MembersOnly {
    inner: Arc<dyn ClientCertVerifier>,
    gate: Arc<PeerGate>,
}

impl MembersOnly {
    pub fn new(inner: Arc<dyn ClientCertVerifier>, gate: Arc<PeerGate>) -> Self {
        Self { inner, gate }
    }
}

impl ClientCertVerifier for MembersOnly {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verified = self.inner.verify_client_cert(end_entity, intermediates, now)?;
        if self.gate.admits_cert(end_entity) {
            return Ok(verified);
        }
        Err(rustls::Error::InvalidCertificate(
            CertificateError::ApplicationVerificationFailure,
        ))
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
