//! Users, roles and tokens of a cluster with auth (root only, while auth is
//! enabled). Tokens come back once, in the answer that made them; the
//! cluster keeps only their digests.

use handlestore_proto::v1 as pb;
use pb::auth_client::AuthClient;

use crate::cluster::Client;
use crate::error::Result;
use crate::failover::rpc;
use crate::transport::NodeChannel;

pub use pb::{Access, NamespacePolicy, NamespaceUsage, Permission, Role, User};

fn auth(ch: NodeChannel) -> AuthClient<NodeChannel> {
    AuthClient::new(ch)
}

/// A token kept in a file (`--token-file`, `HANDLESTORE_TOKEN_FILE`: the
/// way container secrets are handed over): the file's first line, trimmed.
pub fn read_token_file(path: &std::path::Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(path)?;
    let token = text.lines().next().unwrap_or("").trim();
    if token.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the file holds no token",
        ));
    }
    Ok(token.to_string())
}

/// Whether auth is on, and who this client is.
#[derive(Debug, Clone)]
pub struct AuthStatus {
    pub enabled: bool,
    pub revision: u64,
    /// "" when the client sent no credentials.
    pub user: String,
    pub roles: Vec<String>,
}

impl Client {
    pub async fn auth_status(&self) -> Result<AuthStatus> {
        let r = rpc!(self, auth, auth_status, pb::AuthStatusRequest {})?;
        Ok(AuthStatus {
            enabled: r.enabled,
            revision: r.revision,
            user: r.user,
            roles: r.roles,
        })
    }

    /// Turns auth on; answers with root's new token if the user root was
    /// made now (None if it existed).
    pub async fn auth_enable(&self) -> Result<Option<String>> {
        let r = rpc!(self, auth, auth_enable, pb::AuthEnableRequest::default())?;
        Ok(Some(r.root_token).filter(|t| !t.is_empty()))
    }

    /// Turns auth on with `token` (`hs1_...`, made elsewhere: a Kubernetes
    /// Secret) as root's, if root has no token yet; if it has one, `token`
    /// must be it. A malformed token is refused (`InvalidArgument`) and
    /// nothing changes.
    pub async fn auth_enable_with_root_token(&self, token: &str) -> Result<()> {
        let msg = pb::AuthEnableRequest {
            root_token: token.into(),
        };
        rpc!(self, auth, auth_enable, msg)?;
        Ok(())
    }

    pub async fn auth_disable(&self) -> Result<()> {
        rpc!(self, auth, auth_disable, pb::AuthDisableRequest {})?;
        Ok(())
    }

    /// A new user with these roles; answers with its token (None with
    /// `no_token`: the user then authenticates by client certificate).
    pub async fn user_add(&self, name: &str, roles: &[String], no_token: bool) -> Result<Option<String>> {
        let msg = pb::UserAddRequest {
            name: name.into(),
            roles: roles.to_vec(),
            no_token,
        };
        let r = rpc!(self, auth, user_add, msg)?;
        Ok(Some(r.token).filter(|t| !t.is_empty()))
    }

    pub async fn user_remove(&self, name: &str) -> Result<()> {
        rpc!(self, auth, user_remove, pb::UserRemoveRequest { name: name.into() })?;
        Ok(())
    }

    pub async fn user_list(&self) -> Result<Vec<User>> {
        Ok(rpc!(self, auth, user_list, pb::UserListRequest {})?.users)
    }

    /// A new token for `name`; its old token stops working at once.
    pub async fn user_token_rotate(&self, name: &str) -> Result<String> {
        let msg = pb::UserTokenRotateRequest { name: name.into() };
        Ok(rpc!(self, auth, user_token_rotate, msg)?.token)
    }

    pub async fn user_grant_role(&self, name: &str, role: &str) -> Result<()> {
        let msg = pb::UserRoleRequest {
            name: name.into(),
            role: role.into(),
        };
        rpc!(self, auth, user_grant_role, msg)?;
        Ok(())
    }

    pub async fn user_revoke_role(&self, name: &str, role: &str) -> Result<()> {
        let msg = pb::UserRoleRequest {
            name: name.into(),
            role: role.into(),
        };
        rpc!(self, auth, user_revoke_role, msg)?;
        Ok(())
    }

    pub async fn role_add(&self, name: &str) -> Result<()> {
        rpc!(self, auth, role_add, pb::RoleAddRequest { name: name.into() })?;
        Ok(())
    }

    pub async fn role_remove(&self, name: &str) -> Result<()> {
        rpc!(self, auth, role_remove, pb::RoleRemoveRequest { name: name.into() })?;
        Ok(())
    }

    pub async fn role_grant(&self, role: &str, permission: Permission) -> Result<()> {
        let msg = pb::RolePermissionRequest {
            role: role.into(),
            permission: Some(permission),
        };
        rpc!(self, auth, role_grant, msg)?;
        Ok(())
    }

    pub async fn role_revoke(&self, role: &str, permission: Permission) -> Result<()> {
        let msg = pb::RolePermissionRequest {
            role: role.into(),
            permission: Some(permission),
        };
        rpc!(self, auth, role_revoke, msg)?;
        Ok(())
    }

    pub async fn role_list(&self) -> Result<Vec<Role>> {
        Ok(rpc!(self, auth, role_list, pb::RoleListRequest {})?.roles)
    }

    /// Sets a namespace's policy whole: quotas (0 = none) and owner-bound
    /// handle stores.
    pub async fn namespace_set(&self, policy: NamespacePolicy) -> Result<()> {
        let msg = pb::NamespaceSetRequest { policy: Some(policy) };
        rpc!(self, auth, namespace_set, msg)?;
        Ok(())
    }

    /// Every namespace with a policy or data: its usage and policy.
    pub async fn namespace_list(&self) -> Result<Vec<NamespaceUsage>> {
        Ok(rpc!(self, auth, namespace_list, pb::NamespaceListRequest {})?.namespaces)
    }
}
