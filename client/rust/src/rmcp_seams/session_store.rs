//! rmcp's `SessionStore` on the cluster: a legacy `Mcp-Session-Id` session
//! initialized on one replica is restored on any other, also after the
//! first one is gone. Each session is one state key holding the client's
//! `initialize` parameters and the principal that created it; a restore by
//! anyone else finds nothing. The key expires after the idle TTL, which
//! every restore (and [`super::BindSessions`], on use) pushes back.
//!
//! A push back is a write, so it is made only when it is due: each write
//! gives the key the TTL plus a quarter ([`SLACK_DIVISOR`]), and a restore
//! rewrites it only once less than the TTL is left, by this replica's
//! clock against the expiry the cluster stamped. A session is so kept at
//! least the TTL after its last use (less only by as much as this
//! replica's clock runs behind the leader's) and at most 1.25× it, and a
//! restore of a session in use is one linearizable read, not a read and a
//! write. A clock so far behind that the expiry looks further off than a
//! write could have set it makes every restore write, as before.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::transport::streamable_http_server::session::store::{SessionState, SessionStore, SessionStoreError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::cluster::Client;
use crate::cluster_state::ClusterStateTool;
use crate::error::{Error, Result};
use crate::state_tool::{DeleteOptions, StateTool, StateValue, StoreOptions};
use crate::ttl::Ttl;

use super::principal;

/// The key prefix sessions live under, in the client's namespace.
pub const SESSIONS_PREFIX: &str = "mcp/sessions";
/// A session nobody used for this long is gone.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(3600);
/// A write gives the key the TTL plus the TTL divided by this: the
/// window in which a restore need not write.
const SLACK_DIVISOR: u32 = 4;

/// What one session's key holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Record {
    /// Who initialized the session (`None`: no principal was bound).
    pub principal: Option<String>,
    pub state: SessionState,
}

/// A session record as read, with the revision a refresh compares against.
pub(super) struct Found {
    pub record: Record,
    pub revision: u64,
    /// Unix milliseconds, by the leader's clock; `None`: never expires.
    pub expires_at_ms: Option<u64>,
}

/// Sessions shared by every replica; cheap to clone.
#[derive(Clone)]
pub struct ClusterSessionStore {
    client: Client,
    state: ClusterStateTool,
    prefix: String,
    ttl: Duration,
}

impl ClusterSessionStore {
    /// Sessions under [`SESSIONS_PREFIX`] in `client`'s namespace, idle TTL
    /// [`DEFAULT_SESSION_TTL`].
    pub fn new(client: &Client) -> Self {
        Self {
            client: client.clone(),
            state: client.state_tool(),
            prefix: SESSIONS_PREFIX.to_string(),
            ttl: DEFAULT_SESSION_TTL,
        }
    }

    /// How long an unused session lives (at least a second).
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// Another key prefix (several servers in one namespace).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    pub(super) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Follows the session keys: deletions and expiries show up here.
    pub(super) async fn watch(&self) -> Result<crate::watch::Watch> {
        let target = crate::watch::WatchTarget::prefix(format!("{}/", self.prefix));
        let opts = crate::watch::WatchOptions {
            keys_only: true,
            ..Default::default()
        };
        self.client.watch(target, opts).await
    }

    /// The key of a session id: its digest, so any id the client sends
    /// makes a valid key and the key reveals nothing.
    pub(super) fn key(&self, session_id: &str) -> String {
        let digest = Sha256::digest(session_id.as_bytes());
        format!("{}/{}", self.prefix, data_encoding::BASE32_NOPAD.encode(&digest[..16]))
    }

    pub(super) async fn read(&self, session_id: &str) -> Result<Option<Found>> {
        let Some(entry) = self.state.retrieve(&self.key(session_id)).await? else {
            return Ok(None);
        };
        let record = match entry.value {
            Some(StateValue::Json(v)) => serde_json::from_value::<Record>(v).ok(),
            _ => None,
        };
        let record = record.ok_or_else(|| Error::Codec(format!("session {session_id}: unreadable record")))?;
        Ok(Some(Found {
            record,
            revision: entry.mod_revision,
            expires_at_ms: entry.expires_at_ms,
        }))
    }

    /// What a write gives the key: the TTL and its slack.
    fn stored_ttl(&self) -> Duration {
        self.ttl + self.ttl / SLACK_DIVISOR
    }

    /// Must the expiry be pushed back: is less than the TTL left, or more
    /// than a write could have given (this replica's clock is behind)?
    fn due(&self, expires_at_ms: Option<u64>, now_ms: u64) -> bool {
        let Some(at) = expires_at_ms else {
            return false;
        };
        let left = u128::from(at.saturating_sub(now_ms));
        left < self.ttl.as_millis() || left > self.stored_ttl().as_millis()
    }

    /// Makes the session's expiry at least the TTL away: a write if it is
    /// due (unless the session changed since `found`, deleted or stored
    /// again). The session's revision now, or None if it changed.
    pub(super) async fn refresh(&self, session_id: &str, found: &Found) -> Result<Option<u64>> {
        if !self.due(found.expires_at_ms, now_ms()) {
            return Ok(Some(found.revision));
        }
        let value = serde_json::to_value(&found.record).map_err(|e| Error::Codec(e.to_string()))?;
        let opts = StoreOptions {
            ttl: Ttl::After(self.stored_ttl()),
            expected_revision: Some(found.revision),
        };
        match self.state.store(&self.key(session_id), value.into(), opts).await {
            Ok(revision) => Ok(Some(revision)),
            Err(Error::Conflict { .. } | Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn write(&self, session_id: &str, record: &Record) -> Result<u64> {
        let value = serde_json::to_value(record).map_err(|e| Error::Codec(e.to_string()))?;
        let opts = StoreOptions {
            ttl: Ttl::After(self.stored_ttl()),
            expected_revision: None,
        };
        self.state.store(&self.key(session_id), value.into(), opts).await
    }

    pub(super) async fn remove(&self, session_id: &str) -> Result<()> {
        self.state
            .delete(&self.key(session_id), DeleteOptions::default())
            .await?;
        Ok(())
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[async_trait::async_trait]
impl SessionStore for ClusterSessionStore {
    /// The session, if it exists and the current principal created it; a
    /// found session's expiry is pushed back when due (see the module).
    async fn load(&self, session_id: &str) -> std::result::Result<Option<SessionState>, SessionStoreError> {
        let Some(found) = self.read(session_id).await? else {
            return Ok(None);
        };
        if found.record.principal != principal::current() {
            tracing::warn!("session restore refused: another principal created this session");
            return Ok(None);
        }
        // Best effort: the restore goes on if the refresh fails.
        if let Err(e) = self.refresh(session_id, &found).await {
            tracing::warn!(error = %e, "session expiry not refreshed");
        }
        Ok(Some(found.record.state))
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> std::result::Result<(), SessionStoreError> {
        let record = Record {
            principal: principal::current(),
            state: state.clone(),
        };
        self.write(session_id, &record).await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> std::result::Result<(), SessionStoreError> {
        self.remove(session_id).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_ids_key_is_valid_whatever_the_id() {
        let client = Client::builder(["http://127.0.0.1:1"]).build().expect("client");
        let store = ClusterSessionStore {
            state: client.state_tool(),
            client,
            prefix: SESSIONS_PREFIX.into(),
            ttl: DEFAULT_SESSION_TTL,
        };
        for id in ["3f1c2a", "a/b//c", "\u{7f}\n", ""] {
            let key = store.key(id);
            assert!(crate::key::validate_key(&key, crate::key::MAX_KEY_LEN).is_ok(), "{key}");
        }
        assert_ne!(store.key("a"), store.key("b"));
    }

    #[test]
    fn a_restore_writes_only_when_less_than_the_ttl_is_left() {
        let client = Client::builder(["http://127.0.0.1:1"]).build().expect("client");
        let store = ClusterSessionStore::new(&client).with_ttl(Duration::from_secs(100));
        assert_eq!(store.stored_ttl(), Duration::from_secs(125));
        let now = 1_000_000_000;
        // Just written (125 s left) and until 100 s are left: no write.
        for left in [125_000, 110_000, 100_000] {
            assert!(!store.due(Some(now + left), now), "{left} ms left");
        }
        // Less than the TTL left, or expired by this clock: a write.
        for left in [99_999, 1, 0] {
            assert!(store.due(Some(now + left), now), "{left} ms left");
        }
        assert!(store.due(Some(now - 5_000), now));
        // Further off than a write sets: this clock is behind, so write.
        assert!(store.due(Some(now + 125_001), now));
        // A key without expiry has nothing to push back.
        assert!(!store.due(None, now));
    }
}
