//! Authentication and authorization of client calls, decided against the
//! replicated auth state ([`state::auth`](crate::state::auth)) so every node decides alike.
//!
//! A caller is named by its bearer token or, on a node that verifies
//! client certificates, by its certificate's common name (a token, when
//! both are given, decides). While auth is disabled every call is allowed
//! and credentials are not looked at. A decision remembers the auth
//! revision it was made at: writes carry it into the log, where a decision
//! made before the latest auth change is refused and made again; reads
//! decide once the read gate has caught this node up. A refusal made on a
//! node that may lag is made again after catching up (`Api::decide`).

pub mod rules;
pub mod service;
pub mod token;

use std::sync::Arc;

use handlestore_proto::conn::PeerInfo;
use handlestore_proto::meta::AUTHORIZATION_HEADER;
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use rustls::pki_types::CertificateDer;
use tonic::{Request, Status};

pub use rules::{Need, On};

use crate::observe::logs::request::stage_now;
use crate::state::StateStore;
use crate::state::auth::AuthView;

/// The credentials a call came with (not yet checked).
#[derive(Clone, Default)]
pub struct Credentials {
    /// The bearer token, or why the authorization header is unusable.
    token: Option<Result<String, &'static str>>,
    /// The verified client certificate; its common name is read only when
    /// it decides who the caller is.
    cert: Option<Arc<CertificateDer<'static>>>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("token", &self.token.as_ref().map(|_| "(redacted)"))
            .field("cert", &self.cert.is_some())
            .finish()
    }
}

impl Credentials {
    pub fn of<T>(request: &Request<T>) -> Self {
        let token = request.metadata().get(AUTHORIZATION_HEADER).map(|v| {
            let v = v.to_str().map_err(|_| "the authorization header is not text")?;
            v.strip_prefix("Bearer ")
                .map(|t| t.trim().to_string())
                .ok_or("the authorization header is not \"Bearer <token>\"")
        });
        let cert = request
            .extensions()
            .get::<PeerInfo>()
            .and_then(|p| p.client_cert.clone());
        Self { token, cert }
    }

    /// No token and no client certificate.
    pub fn is_empty(&self) -> bool {
        self.token.is_none() && self.cert.is_none()
    }
}

/// A call allowed: by whom, and at which auth revision.
#[derive(Debug, Clone)]
pub struct Decision {
    view: Arc<AuthView>,
    /// None while auth is disabled (everyone may do everything).
    user: Option<String>,
}

impl Decision {
    pub fn revision(&self) -> u64 {
        self.view.revision()
    }

    pub fn view(&self) -> &AuthView {
        &self.view
    }

    /// The user, if auth is enabled.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    pub fn allows(&self, need: &Need<'_>) -> bool {
        let Some(name) = &self.user else { return true };
        rules::allows(self.grants(name).as_deref(), need)
    }

    /// A user's grants through its roles (None: root, granted everything).
    fn grants(&self, name: &str) -> Option<Vec<&pb::Permission>> {
        let roles = self.view.user(name).map(|u| u.roles.as_slice()).unwrap_or_default();
        rules::grants(&self.view, roles)
    }

    /// Whether the caller sees every owner's handles where `need` reaches
    /// (auth off, or admin of the store).
    pub fn sees_all_owners(&self, need: &Need<'_>) -> bool {
        match need {
            Need::In {
                ns, on: On::Store(s), ..
            } => self.allows(&Need::store(ns, pb::Access::Admin, s)),
            _ => true,
        }
    }

    /// Whether a handle with this owner is visible to the caller in an
    /// owner-bound store (`need` names the store).
    pub fn sees_owner(&self, need: &Need<'_>, owner: &str) -> bool {
        self.user.as_deref().is_none_or(|u| u == owner) || self.sees_all_owners(need)
    }

    /// Whether some state key under `prefix` of `ns` is readable.
    pub fn reads_some_under(&self, ns: &str, prefix: &str) -> bool {
        let Some(name) = &self.user else { return true };
        rules::reads_some_under(self.grants(name).as_deref(), ns, prefix)
    }
}

/// Decides calls against this node's applied auth state.
pub struct Guard {
    state: Arc<StateStore>,
}

impl Guard {
    pub fn new(state: Arc<StateStore>) -> Self {
        Self { state }
    }

    /// Who the caller is (None while auth is disabled), at this node's
    /// auth state; UNAUTHENTICATED if auth is on and the credentials name
    /// no user.
    fn authenticate(&self, creds: &Credentials) -> Result<Decision, Status> {
        let view = self.state.auth();
        if !view.enabled() {
            return Ok(Decision { view, user: None });
        }
        let user = identify(&view, creds)?;
        Ok(Decision { view, user: Some(user) })
    }

    /// Authenticates the caller and checks it may do `need`.
    pub fn check(&self, creds: &Credentials, need: &Need<'_>) -> Result<Decision, Status> {
        stage_now("auth", || {
            let d = self.named(creds, need)?;
            if d.allows(need) {
                Ok(d)
            } else {
                Err(denied(d.user().unwrap_or_default(), need))
            }
        })
    }

    /// As `check`, but a read of a prefix is allowed where some key under
    /// it is readable: listings and watches leave out the rest.
    pub fn check_some(&self, creds: &Credentials, need: &Need<'_>) -> Result<Decision, Status> {
        stage_now("auth", || {
            let d = self.named(creds, need)?;
            let allowed = match need {
                Need::In {
                    ns, on: On::Prefix(p), ..
                } => d.reads_some_under(ns, p),
                _ => d.allows(need),
            };
            if allowed {
                Ok(d)
            } else {
                Err(denied(d.user().unwrap_or_default(), need))
            }
        })
    }

    /// Authenticates the caller, and names the call's namespace and caller
    /// in its log record.
    fn named(&self, creds: &Credentials, need: &Need<'_>) -> Result<Decision, Status> {
        let d = self.authenticate(creds);
        let user = d.as_ref().ok().and_then(Decision::user);
        crate::observe::logs::request::caller(need.reaches(), user);
        d
    }
}

/// The user the credentials name, or UNAUTHENTICATED. The message never
/// repeats a token.
fn identify(view: &AuthView, creds: &Credentials) -> Result<String, Status> {
    match (&creds.token, &creds.cert) {
        (Some(Err(why)), _) => Err(unauthenticated(why)),
        (Some(Ok(t)), _) => {
            let user = token::parse(t).and_then(|p| {
                let user = view.user_by_token_id(&p.id)?;
                p.matches(&user.token_digest).then_some(user)
            });
            user.map(|u| u.name.clone())
                .ok_or_else(|| unauthenticated("the token is invalid or revoked"))
        }
        (None, Some(cert)) => {
            let name = crate::tls::names::common_name(cert)
                .ok_or_else(|| unauthenticated("the client certificate has no common name"))?;
            match view.user(&name) {
                Some(u) => Ok(u.name.clone()),
                None => Err(unauthenticated(&format!(
                    "the client certificate names {name:?}, which is no user"
                ))),
            }
        }
        (None, None) => Err(unauthenticated(
            "auth is enabled: send a token (authorization: Bearer <token>) or a client certificate",
        )),
    }
}

fn unauthenticated(why: &str) -> Status {
    Reason::Unauthenticated.status(why)
}

/// PERMISSION_DENIED for `user`, naming what it lacks.
pub(crate) fn denied(user: &str, need: &Need<'_>) -> Status {
    let what = match need {
        Need::Authenticated => "this call".to_string(),
        Need::Root => "this call (it needs the role root)".to_string(),
        Need::In { ns, access, on } => {
            let on = match on {
                On::Namespace => String::new(),
                On::Store(s) => format!(", handle store {s}"),
                On::Key(k) => format!(", key {k}"),
                On::Prefix(p) => format!(", keys under {p:?}"),
            };
            format!("{} access to namespace {ns}{on}", rules::access_name(*access))
        }
    };
    Reason::PermissionDenied.status(format!("user {user} has no {what}"))
}
