//! What a client needs to reach a cluster, handed to everything that talks
//! to one (the chaos suite's clients and cart servers, the bench): TLS and
//! a token when the cluster has them, nothing when it does not.

use std::path::PathBuf;

use handlestore_client::{Client, ClientBuilder, ClientTls};

#[derive(Clone, Default)]
pub struct Credentials {
    /// The client side of TLS, and the CA file it was made from.
    pub tls: Option<(ClientTls, PathBuf)>,
    pub token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("ca", &self.tls.as_ref().map(|(_, ca)| ca))
            .field("token", &self.token.as_ref().map(|_| "(redacted)"))
            .finish()
    }
}

impl Credentials {
    /// TLS with the CA in `ca` and the token kept in `token_file`.
    pub fn from_files(ca: &std::path::Path, token_file: &std::path::Path) -> anyhow::Result<Self> {
        let tls = ClientTls::from_files(ca, None, None)?;
        let token = handlestore_client::auth::read_token_file(token_file)?;
        Ok(Self {
            tls: Some((tls, ca.to_path_buf())),
            token: Some(token),
        })
    }

    /// A client builder for `endpoints` with these credentials.
    pub fn builder<I, S>(&self, endpoints: I) -> ClientBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut b = Client::builder(endpoints);
        if let Some((tls, _)) = &self.tls {
            b = b.tls(tls.clone());
        }
        if let Some(t) = &self.token {
            b = b.token(t.clone());
        }
        b
    }

    /// The environment that gives a child process (`cart_server`,
    /// `handlestore`) these credentials; the token stays out of its
    /// command line.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if let Some((_, ca)) = &self.tls {
            env.push(("HANDLESTORE_CACERT".into(), ca.display().to_string()));
        }
        if let Some(t) = &self.token {
            env.push(("HANDLESTORE_TOKEN".into(), t.clone()));
        }
        env
    }
}
