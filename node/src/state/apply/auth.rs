//! Applying auth: the check that refuses a command authorized against an
//! outdated auth state (as etcd's auth revision does), and the auth
//! changes themselves. A change replaces users or roles whole; the api
//! layer reads the state, edits it and proposes the result at the revision
//! it read, so two concurrent edits never silently merge.

use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use ipb::auth_change::Change;
use ipb::command::Op;

use super::{Tx, fail, ok};
use crate::state::Result;
use crate::state::auth::{AuthView, ROOT};

/// The auth state as one apply batch sees it: the applied view, and the
/// batch's own edited copy once a command in it changed auth.
pub(super) struct TxAuth {
    base: Arc<AuthView>,
    pub(super) changed: Option<ipb::AuthState>,
}

impl TxAuth {
    pub(super) fn new(base: Arc<AuthView>) -> Self {
        Self { base, changed: None }
    }

    pub(super) fn current(&self) -> &ipb::AuthState {
        self.changed.as_ref().unwrap_or_else(|| self.base.state())
    }
}

type Refusal = ipb::CommandResult;

impl Tx<'_> {
    /// The refusal of a command authorized at an outdated auth revision:
    /// while auth is on, any command; an auth change, always.
    pub(super) fn auth_refusal(&self, cmd: &ipb::Command) -> Option<Refusal> {
        let at = cmd.auth_revision?;
        let auth = self.auth.current();
        let is_change = matches!(cmd.op, Some(Op::AuthChange(_)));
        if at == auth.revision || !(auth.enabled || is_change) {
            return None;
        }
        let mut refused = fail(
            ipb::ResultCode::ResultAuthStale,
            format!(
                "authorized at auth revision {at}, but the auth state is at revision {}",
                auth.revision
            ),
        );
        refused.current_revision = auth.revision;
        Some(refused)
    }

    pub(super) fn auth_change(&mut self, index: u64, c: ipb::AuthChange) -> Result<ipb::CommandResult> {
        let mut state = self.auth.current().clone();
        let Some(change) = c.change else {
            return Ok(fail(ipb::ResultCode::ResultInvalid, "an auth change names no change"));
        };
        if let Err(refused) = edit(&mut state, change) {
            return Ok(refused);
        }
        state.revision = index;
        self.auth.changed = Some(state);
        Ok(ok())
    }
}

fn edit(state: &mut ipb::AuthState, change: Change) -> Result<(), Refusal> {
    match change {
        Change::SetEnabled(on) => {
            if on && !has_root(state) {
                return Err(fail(
                    ipb::ResultCode::ResultPrecondition,
                    "auth needs a user root with the role root before it is enabled",
                ));
            }
            state.enabled = on;
        }
        Change::PutUser(u) => put_user(state, u)?,
        Change::RemoveUser(name) => {
            if name == ROOT && state.enabled {
                return Err(fail(
                    ipb::ResultCode::ResultPrecondition,
                    "the user root cannot be removed while auth is enabled",
                ));
            }
            let before = state.users.len();
            state.users.retain(|u| u.name != name);
            if state.users.len() == before {
                return Err(fail(ipb::ResultCode::ResultNotFound, format!("no user {name}")));
            }
        }
        Change::PutRole(r) => {
            if r.name.is_empty() || r.name == ROOT {
                return Err(fail(ipb::ResultCode::ResultInvalid, "the role root is built in"));
            }
            match state.roles.iter_mut().find(|x| x.name == r.name) {
                Some(x) => *x = r,
                None => state.roles.push(r),
            }
        }
        Change::RemoveRole(name) => remove_role(state, &name)?,
        Change::SetNamespace(p) => {
            if p.name.is_empty() {
                return Err(fail(ipb::ResultCode::ResultInvalid, "a policy needs a namespace"));
            }
            state.namespaces.retain(|x| x.name != p.name);
            if p.max_entries > 0 || p.max_bytes > 0 || !p.owner_bound_stores.is_empty() {
                state.namespaces.push(p);
                state.namespaces.sort_by(|a, b| a.name.cmp(&b.name));
            }
        }
    }
    Ok(())
}

fn has_root(state: &ipb::AuthState) -> bool {
    state
        .users
        .iter()
        .any(|u| u.name == ROOT && u.roles.iter().any(|r| r == ROOT))
}

fn put_user(state: &mut ipb::AuthState, u: ipb::AuthUser) -> Result<(), Refusal> {
    if u.name.is_empty() {
        return Err(fail(ipb::ResultCode::ResultInvalid, "a user needs a name"));
    }
    if let Some(missing) = u
        .roles
        .iter()
        .find(|r| *r != ROOT && !state.roles.iter().any(|x| &x.name == *r))
    {
        return Err(fail(ipb::ResultCode::ResultNotFound, format!("no role {missing}")));
    }
    if !u.token_id.is_empty() && state.users.iter().any(|x| x.token_id == u.token_id && x.name != u.name) {
        return Err(fail(ipb::ResultCode::ResultAlreadyExists, "token id in use"));
    }
    if state.enabled && u.name == ROOT && !u.roles.iter().any(|r| r == ROOT) {
        return Err(fail(
            ipb::ResultCode::ResultPrecondition,
            "the user root keeps the role root while auth is enabled",
        ));
    }
    match state.users.iter_mut().find(|x| x.name == u.name) {
        Some(x) => *x = u,
        None => state.users.push(u),
    }
    Ok(())
}

fn remove_role(state: &mut ipb::AuthState, name: &str) -> Result<(), Refusal> {
    if name == ROOT {
        return Err(fail(ipb::ResultCode::ResultInvalid, "the role root is built in"));
    }
    let before = state.roles.len();
    state.roles.retain(|r| r.name != name);
    if state.roles.len() == before {
        return Err(fail(ipb::ResultCode::ResultNotFound, format!("no role {name}")));
    }
    for u in &mut state.users {
        u.roles.retain(|r| r != name);
    }
    Ok(())
}
