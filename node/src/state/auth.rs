//! The auth records as the state machine keeps them: one `AuthState`
//! (users, roles, whether auth is on, its revision) under the meta key
//! `auth`, replaced whole by every auth change, and the in-memory view the
//! api layer decides with. Deciding (who a token names, what a role
//! allows) is the api's business; this module only stores and indexes.

use std::collections::HashMap;

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use rocksdb::DB;

use super::{Result, meta, read_meta};

/// The built-in role that may do everything (and the user `auth enable`
/// creates with it).
pub const ROOT: &str = "root";

/// The auth state, indexed for lookups by token id, user and role name.
#[derive(Debug, Default)]
pub struct AuthView {
    state: ipb::AuthState,
    users: HashMap<String, usize>,
    tokens: HashMap<String, usize>,
    roles: HashMap<String, usize>,
}

impl AuthView {
    pub fn new(state: ipb::AuthState) -> Self {
        let users = index(state.users.iter().map(|u| u.name.as_str()));
        let tokens = index(state.users.iter().map(|u| u.token_id.as_str()));
        let roles = index(state.roles.iter().map(|r| r.name.as_str()));
        Self {
            state,
            users,
            tokens,
            roles,
        }
    }

    pub fn enabled(&self) -> bool {
        self.state.enabled
    }

    /// The log index of the latest auth change (0 = none).
    pub fn revision(&self) -> u64 {
        self.state.revision
    }

    pub fn state(&self) -> &ipb::AuthState {
        &self.state
    }

    pub fn user(&self, name: &str) -> Option<&ipb::AuthUser> {
        self.users.get(name).map(|&i| &self.state.users[i])
    }

    /// The user whose token has this (public) id.
    pub fn user_by_token_id(&self, token_id: &str) -> Option<&ipb::AuthUser> {
        self.tokens.get(token_id).map(|&i| &self.state.users[i])
    }

    pub fn role(&self, name: &str) -> Option<&pb::Role> {
        self.roles.get(name).map(|&i| &self.state.roles[i])
    }

    /// A namespace's policy (quotas, owner-bound stores), if it has one.
    pub fn policy(&self, ns: &str) -> Option<&pb::NamespacePolicy> {
        self.state.namespaces.iter().find(|p| p.name == ns)
    }

    /// Whether handles of `store` in `ns` belong to the user that minted
    /// them.
    pub fn owner_bound(&self, ns: &str, store: &str) -> bool {
        self.policy(ns)
            .is_some_and(|p| p.owner_bound_stores.iter().any(|s| s == store))
    }
}

/// Position by name, skipping empty names (users without a token).
fn index<'a>(names: impl Iterator<Item = &'a str>) -> HashMap<String, usize> {
    names
        .enumerate()
        .filter(|(_, n)| !n.is_empty())
        .map(|(i, n)| (n.to_string(), i))
        .collect()
}

/// The stored auth state (the default, auth off, if none was ever stored).
pub(crate) fn load(db: &DB) -> Result<ipb::AuthState> {
    Ok(read_meta::<ipb::AuthState>(db, meta::AUTH)?.unwrap_or_default())
}
