//! TLS for a client's connections (rustls on ring): the CA that signed the
//! nodes' certificates, and the client's own certificate where nodes
//! require one (`--tls-client-ca`). Endpoints given as `https://` use it;
//! bare `host:port` endpoints do too once it is set.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

use crate::error::{Error, Result};

/// How a client checks the nodes, and shows itself to them. Cheap to
/// clone.
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("client_certificate", &self.config.client_auth_cert_resolver.has_certs())
            .finish()
    }
}

fn invalid(what: &str) -> impl Fn(rustls::pki_types::pem::Error) -> Error + '_ {
    move |e| Error::InvalidArgument(format!("{what}: {e}"))
}

impl ClientTls {
    /// Trusts the CA certificates in `ca_pem`; with `identity` (a
    /// certificate chain and its private key, PEM) shows that to nodes.
    pub fn new(ca_pem: &[u8], identity: Option<(&[u8], &[u8])>) -> Result<Self> {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem) {
            let cert = cert.map_err(invalid("the CA certificate"))?;
            roots
                .add(cert)
                .map_err(|e| Error::InvalidArgument(format!("the CA certificate: {e}")))?;
        }
        if roots.is_empty() {
            return Err(Error::InvalidArgument("no CA certificate given".into()));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| Error::Other(format!("TLS versions: {e}")))?
            .with_root_certificates(roots);
        let mut config = match identity {
            Some((cert_pem, key_pem)) => {
                let chain = CertificateDer::pem_slice_iter(cert_pem)
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(invalid("the client certificate"))?;
                let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(invalid("the client key"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| Error::InvalidArgument(format!("the client certificate and key: {e}")))?
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// As [`new`](Self::new), from files.
    pub fn from_files(ca: &Path, cert: Option<&Path>, key: Option<&Path>) -> Result<Self> {
        let read = |p: &Path| std::fs::read(p).map_err(|e| Error::InvalidArgument(format!("{}: {e}", p.display())));
        let ca = read(ca)?;
        match (cert, key) {
            (Some(c), Some(k)) => Self::new(&ca, Some((&read(c)?, &read(k)?))),
            (None, None) => Self::new(&ca, None),
            _ => Err(Error::InvalidArgument(
                "a client certificate needs its key, and a key its certificate".into(),
            )),
        }
    }

    /// TLS as command-line flags give it: none without a CA file; a
    /// client certificate without the CA is an error.
    pub fn from_optional_files(ca: Option<&Path>, cert: Option<&Path>, key: Option<&Path>) -> Result<Option<Self>> {
        match ca {
            Some(ca) => Self::from_files(ca, cert, key).map(Some),
            None if cert.is_some() || key.is_some() => Err(Error::InvalidArgument(
                "a client certificate needs --cacert (the CA that signed the nodes' certificates)".into(),
            )),
            None => Ok(None),
        }
    }

    pub(crate) fn connector(&self) -> TlsConnector {
        TlsConnector::from(self.config.clone())
    }
}

/// The name a node's certificate must carry: its host name or IP address.
pub(crate) fn server_name(host: &str) -> std::io::Result<ServerName<'static>> {
    ServerName::try_from(host.to_string())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{host}: {e}")))
}
