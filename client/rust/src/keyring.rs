//! The cluster's replicated key ring (per namespace): list, create, rotate,
//! retire. Secrets are drawn by the leader from its CSPRNG inside a
//! replicated command, so every node holds the same ring.

use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;

use crate::cluster::{Client, Consistency};
use crate::error::Result;
use crate::failover::rpc;
use crate::transport::NodeChannel;

/// One key of the ring.
#[derive(Clone, PartialEq, Eq)]
pub struct RingKey {
    pub id: String,
    /// The primary signs new request state; every key verifies.
    pub primary: bool,
    pub created_ms: u64,
    /// Empty unless asked for.
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for RingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingKey")
            .field("id", &self.id)
            .field("primary", &self.primary)
            .field("created_ms", &self.created_ms)
            .field("secret", &if self.secret.is_empty() { "(none)" } else { "(redacted)" })
            .finish()
    }
}

fn admin(ch: NodeChannel) -> AdminClient<NodeChannel> {
    AdminClient::new(ch)
}

fn keys(resp: pb::KeyringResponse) -> Vec<RingKey> {
    resp.keys
        .into_iter()
        .map(|k| RingKey {
            primary: k.state == "primary",
            id: k.id,
            created_ms: k.created_ms,
            secret: k.secret,
        })
        .collect()
}

impl Client {
    /// The key ring of this client's namespace, oldest first. Secrets are
    /// included only when asked for (the request-state codec needs them).
    pub async fn keyring(&self, include_secrets: bool) -> Result<Vec<RingKey>> {
        let msg = pb::KeyringListRequest {
            namespace: self.namespace().to_string(),
            include_secrets,
            read: Some(Consistency::Linearizable.to_pb()),
        };
        let resp = rpc!(self, admin, keyring_list, msg)?;
        Ok(keys(resp))
    }

    /// Creates the ring with its first key (fails with `AlreadyExists` if
    /// the namespace has one), or with `create = false` rotates: a new
    /// primary, the old one kept for verification. Returns the new key's id.
    pub async fn keyring_rotate(&self, create: bool) -> Result<String> {
        let ticket = self.write_ticket();
        let msg = pb::KeyringRotateRequest {
            namespace: self.namespace().to_string(),
            create,
            write_id: Some(ticket.id),
        };
        let resp = rpc!(self, admin, keyring_rotate, msg)?;
        Ok(resp.key_id)
    }

    /// Retires a (non-primary) key: what it signed no longer verifies.
    pub async fn keyring_retire(&self, key_id: &str) -> Result<()> {
        let ticket = self.write_ticket();
        let msg = pb::KeyringRetireRequest {
            namespace: self.namespace().to_string(),
            key_id: key_id.to_string(),
            write_id: Some(ticket.id),
        };
        rpc!(self, admin, keyring_retire, msg)?;
        Ok(())
    }
}
