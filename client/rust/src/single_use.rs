//! Single use across replicas: SEP-2322 says the one-time redemption of
//! MRTR `requestState` MUST be enforced by the server, and with several
//! replicas "this replica has seen it" is not enough. A [`SingleUse`]
//! redeems a token once in the whole cluster: the first redemption, on any
//! replica, wins; every later one, anywhere, is refused. A redemption is a
//! create-only write of a handle whose id is derived from the token
//! (SHA-256, 128 bits), kept until the token's own expiry: replicated like
//! every write, so a failover never forgets it, and retried exactly once.

use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::cluster::Client;
use crate::cluster_store::ClusterHandleStore;
use crate::error::{Error, Result};
use crate::ttl::Ttl;

/// The handle store redemptions go to, in the client's namespace.
pub const REDEEMED_STORE: &str = "mcp-redeemed";

/// Redeems tokens once across every replica; cheap to clone.
#[derive(Clone)]
pub struct SingleUse {
    store: std::sync::Arc<ClusterHandleStore<bool>>,
}

impl SingleUse {
    /// Redemptions in `client`'s namespace (store [`REDEEMED_STORE`]).
    pub fn new(client: &Client) -> Self {
        Self {
            store: std::sync::Arc::new(client.handle_store(REDEEMED_STORE).build()),
        }
    }

    /// Redeems `token`: true if this was its first redemption anywhere,
    /// false if it was redeemed before. The record is kept for `ttl` (at
    /// least a second): give the token's remaining lifetime, after which
    /// it is refused anyway. An error leaves the outcome unknown: treat the
    /// token as not redeemed by this call (fail closed).
    pub async fn redeem(&self, token: &str, ttl: Duration) -> Result<bool> {
        let ttl = Ttl::After(ttl.max(Duration::from_secs(1)));
        match self.store.mint_with_id(&token_id(token), &true, ttl).await {
            Ok(_) => Ok(true),
            Err(Error::AlreadyExists(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// The handle id a token is redeemed under.
fn token_id(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    data_encoding::BASE32_NOPAD.encode(&digest[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokens_id_is_a_valid_handle_id_and_differs_per_token() {
        let a = token_id("v1.payload.tag");
        assert!(crate::id::validate_handle_id(&a).is_ok(), "{a}");
        assert_eq!(a, token_id("v1.payload.tag"));
        assert_ne!(a, token_id("v1.payload.tah"));
    }

    #[test]
    fn tokens_are_redeemed_under_the_shared_vectors_ids() {
        let all: serde_json::Value =
            serde_json::from_str(include_str!("../../../proto/vectors/request_state_vectors.json")).expect("vectors");
        let cases = all["redemptions"].as_array().expect("redemptions");
        assert!(!cases.is_empty());
        for case in cases {
            let token = case["token"].as_str().expect("token");
            assert_eq!(token_id(token), case["id"].as_str().expect("id"), "{token:?}");
        }
    }
}
