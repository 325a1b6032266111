//! The Auth service (auth.proto): users, roles and tokens. Every change is
//! read-edit-propose: the edit is made on the auth state a decision was
//! made at and proposed at that revision, so a change made meanwhile
//! sends it round again (`Api::write_authorized`).

use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use ipb::auth_change::Change;
use tonic::{Request, Response, Status};

use super::token::{self, NewToken};
use super::{Credentials, Decision, Need};
use crate::api::Api;
use crate::state::auth::{AuthView, ROOT};
use crate::status::invalid;

/// Longest user and role names.
const MAX_NAME: usize = 64;

pub struct AuthService {
    api: Arc<Api>,
}

impl AuthService {
    pub fn new(api: Arc<Api>) -> Self {
        Self { api }
    }

    /// Applies the change `edit` makes of the auth state (root only, while
    /// auth is on); answers with the new auth revision.
    async fn change(
        &self,
        creds: &Credentials,
        mut edit: impl FnMut(&AuthView) -> Result<Change, Status>,
    ) -> Result<u64, Status> {
        let res = self
            .api
            .write_authorized(creds, &Need::Root, |d: &Decision| {
                let change = edit(d.view())?;
                Ok((
                    None,
                    ipb::command::Op::AuthChange(ipb::AuthChange { change: Some(change) }),
                ))
            })
            .await?;
        Ok(res.revision)
    }

    async fn decide<T>(&self, request: &Request<T>, need: &Need<'_>) -> Result<Decision, Status> {
        self.api.decide(&Credentials::of(request), need).await
    }
}

fn name(kind: &str, n: &str) -> Result<(), Status> {
    if handlestore_proto::id::is_name(n, MAX_NAME) {
        Ok(())
    } else {
        Err(invalid(format!(
            "{kind} name {n:?} may only contain A-Z a-z 0-9 _ - . (1-{MAX_NAME} bytes)"
        )))
    }
}

fn not_found(what: String) -> Status {
    Reason::NotFound.status(what)
}

fn user<'v>(view: &'v AuthView, n: &str) -> Result<&'v ipb::AuthUser, Status> {
    view.user(n).ok_or_else(|| not_found(format!("no user {n}")))
}

fn role<'v>(view: &'v AuthView, n: &str) -> Result<&'v pb::Role, Status> {
    view.role(n).ok_or_else(|| not_found(format!("no role {n}")))
}

fn with_token(mut u: ipb::AuthUser, t: Option<&NewToken>) -> ipb::AuthUser {
    u.token_id = t.map(|t| t.id.clone()).unwrap_or_default();
    u.token_digest = t.map(|t| t.digest.clone()).unwrap_or_default();
    u
}

/// The token `AuthEnable` was asked to make root's, checked: None when
/// none was given; a malformed one is refused before anything changes.
fn given_root_token(text: &str) -> Result<Option<NewToken>, Status> {
    if text.is_empty() {
        return Ok(None);
    }
    token::adopt(text).map(Some).ok_or_else(|| {
        invalid("root_token is not a handlestore token (hs1_<id>_<secret>: 10 and 32 bytes in unpadded base32)")
    })
}

/// Root has a token already: the one given must be it, or auth would be
/// turned on with a token its caller does not hold.
fn holds_roots_token(root: &ipb::AuthUser, given: &NewToken) -> Result<(), Status> {
    if given.is(&root.token_id, &root.token_digest) {
        Ok(())
    } else {
        Err(Reason::Precondition.status("root has a token already, and it is not the one given: auth stays as it was"))
    }
}

/// A grant as the caller gave it, checked.
fn permission(p: Option<pb::Permission>, limits: &crate::config::Limits) -> Result<pb::Permission, Status> {
    let p = p.ok_or_else(|| invalid("no permission given"))?;
    if p.namespace != "*" {
        crate::api::validate::namespace(&p.namespace, limits)?;
    }
    if pb::Access::try_from(p.access).is_err() {
        return Err(invalid(format!("unknown access {}", p.access)));
    }
    if !p.store.is_empty() && !p.key_prefix.is_empty() {
        return Err(invalid("a grant narrows to a store or to a key prefix, not both"));
    }
    if !p.store.is_empty() {
        crate::api::validate::store(&p.store, limits)?;
    }
    crate::api::validate::state_prefix(&p.key_prefix, limits)?;
    Ok(p)
}

fn public_user(u: &ipb::AuthUser) -> pb::User {
    pb::User {
        name: u.name.clone(),
        roles: u.roles.clone(),
        has_token: !u.token_id.is_empty(),
    }
}

/// Every namespace with a policy or data: usage and policy, by name.
pub(crate) fn namespaces(api: &Api, view: &AuthView) -> Result<Vec<pb::NamespaceUsage>, Status> {
    let usage = crate::api::point_read(|| api.state.usage())?;
    let mut out: std::collections::BTreeMap<String, pb::NamespaceUsage> = usage
        .into_iter()
        .map(|(name, u)| {
            let row = pb::NamespaceUsage {
                name: name.clone(),
                entries: u.entries.max(0) as u64,
                bytes: u.bytes.max(0) as u64,
                policy: None,
            };
            (name, row)
        })
        .collect();
    for p in &view.state().namespaces {
        let row = out.entry(p.name.clone()).or_insert_with(|| pb::NamespaceUsage {
            name: p.name.clone(),
            ..Default::default()
        });
        row.policy = Some(p.clone());
    }
    Ok(out.into_values().collect())
}

#[tonic::async_trait]
impl pb::auth_server::Auth for AuthService {
    async fn auth_status(
        &self,
        request: Request<pb::AuthStatusRequest>,
    ) -> Result<Response<pb::AuthStatusResponse>, Status> {
        let view = self.api.state.auth();
        let creds = Credentials::of(&request);
        // Anyone may learn whether auth is on; who the caller is, only
        // with valid credentials.
        let who = if creds.is_empty() {
            None
        } else {
            self.api
                .decide(&creds, &Need::Authenticated)
                .await?
                .user()
                .map(String::from)
        };
        let roles = who
            .as_deref()
            .and_then(|u| view.user(u))
            .map(|u| u.roles.clone())
            .unwrap_or_default();
        Ok(Response::new(pb::AuthStatusResponse {
            enabled: view.enabled(),
            revision: view.revision(),
            user: who.unwrap_or_default(),
            roles,
        }))
    }

    async fn auth_enable(
        &self,
        request: Request<pb::AuthEnableRequest>,
    ) -> Result<Response<pb::AuthEnableResponse>, Status> {
        let creds = Credentials::of(&request);
        let given = given_root_token(&request.get_ref().root_token)?;
        let adopting = given.is_some();
        let fresh = given.unwrap_or_else(token::generate);
        let mut made = false;
        // First root (with a token if it has none), then auth on.
        self.change(&creds, |view| {
            let mut root = view.user(ROOT).cloned().unwrap_or_else(|| ipb::AuthUser {
                name: ROOT.into(),
                ..Default::default()
            });
            if !root.roles.iter().any(|r| r == ROOT) {
                root.roles.push(ROOT.into());
            }
            made = root.token_id.is_empty();
            if made {
                root = with_token(root, Some(&fresh));
            } else if adopting {
                holds_roots_token(&root, &fresh)?;
            }
            Ok(Change::PutUser(root))
        })
        .await?;
        let revision = self.change(&creds, |_| Ok(Change::SetEnabled(true))).await?;
        tracing::info!(revision, root_token_adopted = made && adopting, "auth enabled");
        Ok(Response::new(pb::AuthEnableResponse {
            // A token the caller gave is not sent back.
            root_token: if made && !adopting { fresh.token } else { String::new() },
            revision,
        }))
    }

    async fn auth_disable(
        &self,
        request: Request<pb::AuthDisableRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let creds = Credentials::of(&request);
        let revision = self.change(&creds, |_| Ok(Change::SetEnabled(false))).await?;
        tracing::info!(revision, "auth disabled");
        Ok(Response::new(pb::AuthChangeResponse { revision }))
    }

    async fn user_add(&self, request: Request<pb::UserAddRequest>) -> Result<Response<pb::UserTokenResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        name("user", &r.name)?;
        let t = (!r.no_token).then(token::generate);
        let revision = self
            .change(&creds, |view| {
                if view.user(&r.name).is_some() {
                    return Err(Reason::AlreadyExists.status(format!("user {} exists", r.name)));
                }
                for x in r.roles.iter().filter(|x| *x != ROOT) {
                    role(view, x)?;
                }
                let u = ipb::AuthUser {
                    name: r.name.clone(),
                    roles: r.roles.clone(),
                    ..Default::default()
                };
                Ok(Change::PutUser(with_token(u, t.as_ref())))
            })
            .await?;
        tracing::info!(user = %r.name, revision, "user added");
        Ok(Response::new(pb::UserTokenResponse {
            token: t.map(|t| t.token).unwrap_or_default(),
            revision,
        }))
    }

    async fn user_remove(
        &self,
        request: Request<pb::UserRemoveRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let revision = self
            .change(&creds, |view| {
                user(view, &r.name)?;
                Ok(Change::RemoveUser(r.name.clone()))
            })
            .await?;
        tracing::info!(user = %r.name, revision, "user removed");
        Ok(Response::new(pb::AuthChangeResponse { revision }))
    }

    async fn user_list(&self, request: Request<pb::UserListRequest>) -> Result<Response<pb::UserListResponse>, Status> {
        let d = self.decide(&request, &Need::Root).await?;
        Ok(Response::new(pb::UserListResponse {
            users: d.view().state().users.iter().map(public_user).collect(),
            revision: d.revision(),
        }))
    }

    async fn user_token_rotate(
        &self,
        request: Request<pb::UserTokenRotateRequest>,
    ) -> Result<Response<pb::UserTokenResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let t = token::generate();
        let revision = self
            .change(&creds, |view| {
                let u = user(view, &r.name)?.clone();
                Ok(Change::PutUser(with_token(u, Some(&t))))
            })
            .await?;
        tracing::info!(user = %r.name, revision, "token rotated");
        Ok(Response::new(pb::UserTokenResponse {
            token: t.token,
            revision,
        }))
    }

    async fn user_grant_role(
        &self,
        request: Request<pb::UserRoleRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let revision = self
            .change(&creds, |view| {
                let mut u = user(view, &r.name)?.clone();
                if r.role != ROOT {
                    role(view, &r.role)?;
                }
                if !u.roles.contains(&r.role) {
                    u.roles.push(r.role.clone());
                }
                Ok(Change::PutUser(u))
            })
            .await?;
        Ok(Response::new(pb::AuthChangeResponse { revision }))
    }

    async fn user_revoke_role(
        &self,
        request: Request<pb::UserRoleRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let revision = self
            .change(&creds, |view| {
                let mut u = user(view, &r.name)?.clone();
                if !u.roles.contains(&r.role) {
                    return Err(not_found(format!("user {} has no role {}", r.name, r.role)));
                }
                u.roles.retain(|x| *x != r.role);
                Ok(Change::PutUser(u))
            })
            .await?;
        Ok(Response::new(pb::AuthChangeResponse { revision }))
    }

    async fn role_add(&self, request: Request<pb::RoleAddRequest>) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        name("role", &r.name)?;
        let revision = self
            .change(&creds, |view| {
                if r.name == ROOT || view.role(&r.name).is_some() {
                    return Err(Reason::AlreadyExists.status(format!("role {} exists", r.name)));
                }
                Ok(Change::PutRole(pb::Role {
                    name: r.name.clone(),
                    permissions: Vec::new(),
                }))
            })
            .await?;
        Ok(Response::new(pb::AuthChangeResponse { revision }))
    }

    async fn role_remove(
        &self,
        request: Request<pb::RoleRemoveRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let revision = self
            .change(&creds, |view| {
                role(view, &r.name)?;
                Ok(Change::RemoveRole(r.name.clone()))
            })
            .await?;
        Ok(Response::new(pb::AuthChangeResponse { revision }))
    }

    async fn role_grant(
        &self,
        request: Request<pb::RolePermissionRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let p = permission(r.permission, &self.api.limits)?;
        let revision = self
            .change(&creds, |view| {
                let mut x = role(view, &r.role)?.clone();
                if !x.permissions.contains(&p) {
                    x.permissions.push(p.clone());
                }
                Ok(Change::PutRole(x))
            })
            .await?;
        Ok(Response::new(pb::AuthChangeResponse { revision }))
    }

    async fn role_revoke(
        &self,
        request: Request<pb::RolePermissionRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let creds = Credentials::of(&request);
        let r = request.into_inner();
        let p = permission(r.permission, &self.api.limits)?;
        let revision = self
            .change(&creds, |view| {
                let mut x = role(view, &r.role)?.clone();
                if !x.permissions.contains(&p) {
                    return Err(not_found(format!("role {} has no such grant", r.role)));
                }
                x.permissions.retain(|g| *g != p);
                Ok(Change::PutRole(x))
            })
            .await?;
        Ok(Response::new(pb::AuthChangeResponse { revision }))
    }

    async fn namespace_set(
        &self,
        request: Request<pb::NamespaceSetRequest>,
    ) -> Result<Response<pb::AuthChangeResponse>, Status> {
        let creds = Credentials::of(&request);
        let mut p = request.into_inner().policy.ok_or_else(|| invalid("no policy given"))?;
        let l = &self.api.limits;
        p.name = crate::api::validate::namespace(&p.name, l)?;
        for store in &p.owner_bound_stores {
            crate::api::validate::store(store, l)?;
        }
        p.owner_bound_stores.sort();
        p.owner_bound_stores.dedup();
        let revision = self.change(&creds, |_| Ok(Change::SetNamespace(p.clone()))).await?;
        tracing::info!(namespace = %p.name, max_entries = p.max_entries, max_bytes = p.max_bytes,
            owner_bound = ?p.owner_bound_stores, revision, "namespace policy set");
        Ok(Response::new(pb::AuthChangeResponse { revision }))
    }

    async fn namespace_list(
        &self,
        request: Request<pb::NamespaceListRequest>,
    ) -> Result<Response<pb::NamespaceListResponse>, Status> {
        let d = self.decide(&request, &Need::Root).await?;
        Ok(Response::new(pb::NamespaceListResponse {
            namespaces: namespaces(&self.api, d.view())?,
            revision: d.revision(),
        }))
    }

    async fn role_list(&self, request: Request<pb::RoleListRequest>) -> Result<Response<pb::RoleListResponse>, Status> {
        let d = self.decide(&request, &Need::Root).await?;
        Ok(Response::new(pb::RoleListResponse {
            roles: d.view().state().roles.clone(),
            revision: d.revision(),
        }))
    }
}
