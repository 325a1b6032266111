//! `ClientStateStore`: what an MCP client must remember to survive its own
//! restart (session id, access token, negotiated protocol version, server
//! capabilities), kept in the cluster's state tool under
//! `mcp-clients/<client key>/...`. The access token is stored encrypted with
//! the replicated key ring (AES-256-GCM, bound to the client key).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::cluster::Client;
use crate::error::{Error, Result};
use crate::request_state::{Mode, RequestStateCodec};
use crate::state_tool::{DeleteOptions, StateTool, StateValue, StoreOptions};

const ROOT: &str = "mcp-clients";
const SESSION_ID: &str = "session-id";
const ACCESS_TOKEN: &str = "access-token";
const PROTOCOL_VERSION: &str = "protocol-version";
const SERVER_CAPABILITIES: &str = "server-capabilities";
/// The sealed token carries an expiry; the store's own TTL (none) governs.
const TOKEN_SEAL_TTL: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Persisted state of one MCP client, keyed by a client key of your choice
/// (e.g. the server URL's host plus a user id).
pub struct ClientStateStore {
    tool: Arc<dyn StateTool>,
    codec: Arc<RequestStateCodec>,
    client_key: String,
}

impl ClientStateStore {
    /// A store over any state tool and an **encrypting** codec.
    pub fn new(tool: Arc<dyn StateTool>, codec: Arc<RequestStateCodec>, client_key: &str) -> Result<Self> {
        if codec.mode() != Mode::Encrypted {
            return Err(Error::InvalidArgument(
                "the access token needs an encrypting codec (Mode::Encrypted)".into(),
            ));
        }
        let ok = !client_key.is_empty()
            && client_key.len() <= 128
            && !client_key.contains('/')
            && !client_key.chars().any(char::is_control);
        if !ok {
            return Err(Error::InvalidArgument(format!(
                "client key {client_key:?} must be 1-128 characters without '/' or control characters"
            )));
        }
        Ok(Self {
            tool,
            codec,
            client_key: client_key.to_string(),
        })
    }

    /// A store in the cluster, in `client`'s namespace, encrypting with its
    /// key ring (which must exist: `handlestore keyring create`).
    pub async fn from_cluster(client: &Client, client_key: &str) -> Result<Self> {
        let codec = RequestStateCodec::from_cluster(client, Mode::Encrypted).await?;
        Self::new(Arc::new(client.state_tool()), Arc::new(codec), client_key)
    }

    fn key(&self, field: &str) -> String {
        format!("{ROOT}/{}/{field}", self.client_key)
    }

    async fn set(&self, field: &str, v: Value) -> Result<()> {
        self.tool
            .store(&self.key(field), StateValue::Json(v), StoreOptions::default())
            .await?;
        Ok(())
    }

    async fn get(&self, field: &str) -> Result<Option<Value>> {
        Ok(self.tool.retrieve(&self.key(field)).await?.and_then(|e| match e.value {
            Some(StateValue::Json(v)) => Some(v),
            _ => None,
        }))
    }

    async fn clear_field(&self, field: &str) -> Result<()> {
        self.tool.delete(&self.key(field), DeleteOptions::default()).await?;
        Ok(())
    }

    async fn get_string(&self, field: &str) -> Result<Option<String>> {
        Ok(self.get(field).await?.and_then(|v| v.as_str().map(str::to_string)))
    }

    pub async fn set_session_id(&self, id: &str) -> Result<()> {
        self.set(SESSION_ID, Value::String(id.into())).await
    }

    pub async fn session_id(&self) -> Result<Option<String>> {
        self.get_string(SESSION_ID).await
    }

    pub async fn clear_session_id(&self) -> Result<()> {
        self.clear_field(SESSION_ID).await
    }

    /// Stores the token encrypted; only holders of the key ring can read it.
    pub async fn set_access_token(&self, token: &str) -> Result<()> {
        let sealed = self
            .codec
            .encode(
                &Value::String(token.into()),
                &self.client_key,
                Some(ACCESS_TOKEN),
                TOKEN_SEAL_TTL,
            )
            .await?;
        self.set(ACCESS_TOKEN, Value::String(sealed)).await
    }

    /// The token, or `None` if there is none, or if it can no longer be
    /// decrypted (its key was retired): then the client signs in again.
    pub async fn access_token(&self) -> Result<Option<String>> {
        let Some(sealed) = self.get_string(ACCESS_TOKEN).await? else {
            return Ok(None);
        };
        Ok(self
            .codec
            .decode(&sealed, &self.client_key, Some(ACCESS_TOKEN))
            .await
            .and_then(|v| v.as_str().map(str::to_string)))
    }

    pub async fn clear_access_token(&self) -> Result<()> {
        self.clear_field(ACCESS_TOKEN).await
    }

    pub async fn set_protocol_version(&self, version: &str) -> Result<()> {
        self.set(PROTOCOL_VERSION, Value::String(version.into())).await
    }

    pub async fn protocol_version(&self) -> Result<Option<String>> {
        self.get_string(PROTOCOL_VERSION).await
    }

    pub async fn clear_protocol_version(&self) -> Result<()> {
        self.clear_field(PROTOCOL_VERSION).await
    }

    /// The server's capabilities as negotiated (any JSON).
    pub async fn set_server_capabilities(&self, caps: &Value) -> Result<()> {
        self.set(SERVER_CAPABILITIES, caps.clone()).await
    }

    pub async fn server_capabilities(&self) -> Result<Option<Value>> {
        self.get(SERVER_CAPABILITIES).await
    }

    pub async fn clear_server_capabilities(&self) -> Result<()> {
        self.clear_field(SERVER_CAPABILITIES).await
    }

    /// Forgets everything stored for this client.
    pub async fn clear(&self) -> Result<()> {
        let prefix = format!("{ROOT}/{}/", self.client_key);
        self.tool.delete(&prefix, DeleteOptions::prefix(100)).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryStateTool, RingKey};

    fn codec(mode: Mode) -> Arc<RequestStateCodec> {
        let k = RingKey {
            id: "k".into(),
            primary: true,
            created_ms: 0,
            secret: vec![7; 32],
        };
        Arc::new(RequestStateCodec::with_keys(&[k], mode).expect("codec"))
    }

    #[tokio::test]
    async fn fields_round_trip_and_the_token_is_encrypted() {
        let tool: Arc<dyn StateTool> = Arc::new(MemoryStateTool::new());
        let s = ClientStateStore::new(tool.clone(), codec(Mode::Encrypted), "server.example-alice").expect("store");
        assert_eq!(s.session_id().await.unwrap(), None);
        s.set_session_id("sess-1").await.unwrap();
        s.set_access_token("secret-token").await.unwrap();
        s.set_protocol_version("2026-07-28").await.unwrap();
        s.set_server_capabilities(&serde_json::json!({"tools": {}}))
            .await
            .unwrap();
        assert_eq!(s.session_id().await.unwrap().as_deref(), Some("sess-1"));
        assert_eq!(s.access_token().await.unwrap().as_deref(), Some("secret-token"));
        assert_eq!(s.protocol_version().await.unwrap().as_deref(), Some("2026-07-28"));
        assert_eq!(
            s.server_capabilities().await.unwrap(),
            Some(serde_json::json!({"tools": {}}))
        );
        let raw = tool
            .retrieve("mcp-clients/server.example-alice/access-token")
            .await
            .unwrap()
            .unwrap();
        let raw = format!("{:?}", raw.value);
        assert!(
            raw.contains("v1e.") && !raw.contains("secret-token"),
            "stored encrypted: {raw}"
        );
        // Another client key cannot read it even with the same ring.
        let other = ClientStateStore::new(tool.clone(), codec(Mode::Encrypted), "server.example-bob").unwrap();
        assert_eq!(other.access_token().await.unwrap(), None);
        s.clear_access_token().await.unwrap();
        assert_eq!(s.access_token().await.unwrap(), None);
        s.clear().await.unwrap();
        assert_eq!(s.session_id().await.unwrap(), None);
        assert_eq!(s.server_capabilities().await.unwrap(), None);
    }

    #[test]
    fn bad_client_keys_and_signing_codecs_are_refused() {
        let tool: Arc<dyn StateTool> = Arc::new(MemoryStateTool::new());
        for bad in ["", "a/b", "x\n"] {
            assert!(
                ClientStateStore::new(tool.clone(), codec(Mode::Encrypted), bad).is_err(),
                "{bad:?}"
            );
        }
        assert!(ClientStateStore::new(tool, codec(Mode::Signed), "ok").is_err());
    }
}
