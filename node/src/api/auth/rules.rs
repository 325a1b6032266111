//! What a role's grants allow: pure functions over the replicated auth
//! records, so every node decides alike.

use handlestore_proto::v1 as pb;
use pb::Access;

use crate::state::auth::{AuthView, ROOT};

/// What a call needs.
#[derive(Debug, Clone, Copy)]
pub enum Need<'a> {
    /// Any known user (status, auth status).
    Authenticated,
    /// The role root: membership, snapshots, auth changes.
    Root,
    /// Access to something in a namespace.
    In { ns: &'a str, access: Access, on: On<'a> },
}

/// What in a namespace a call touches.
#[derive(Debug, Clone, Copy)]
pub enum On<'a> {
    /// The namespace as a whole (its key ring).
    Namespace,
    /// One handle store.
    Store(&'a str),
    /// One state key.
    Key(&'a str),
    /// Every state key under a prefix.
    Prefix(&'a str),
}

impl<'a> Need<'a> {
    /// The namespace the call reaches into, if one.
    pub fn reaches(&self) -> Option<&'a str> {
        match self {
            Need::In { ns, .. } => Some(*ns),
            _ => None,
        }
    }

    pub fn store(ns: &'a str, access: Access, store: &'a str) -> Self {
        Need::In {
            ns,
            access,
            on: On::Store(store),
        }
    }

    pub fn key(ns: &'a str, access: Access, key: &'a str) -> Self {
        Need::In {
            ns,
            access,
            on: On::Key(key),
        }
    }

    pub fn prefix(ns: &'a str, access: Access, prefix: &'a str) -> Self {
        Need::In {
            ns,
            access,
            on: On::Prefix(prefix),
        }
    }

    pub fn namespace(ns: &'a str, access: Access) -> Self {
        Need::In {
            ns,
            access,
            on: On::Namespace,
        }
    }
}

/// The grants of a user's roles (None for root: everything).
pub fn grants<'v>(view: &'v AuthView, roles: &[String]) -> Option<Vec<&'v pb::Permission>> {
    if roles.iter().any(|r| r == ROOT) {
        return None;
    }
    Some(
        roles
            .iter()
            .filter_map(|r| view.role(r))
            .flat_map(|r| r.permissions.iter())
            .collect(),
    )
}

/// Whether `grants` (None = root) allow `need`.
pub fn allows(grants: Option<&[&pb::Permission]>, need: &Need<'_>) -> bool {
    let Some(grants) = grants else { return true };
    match need {
        Need::Authenticated => true,
        Need::Root => false,
        Need::In { ns, access, on } => grants.iter().any(|g| covers(g, ns, *access, on)),
    }
}

/// Whether `grants` allow reading at least some state key under `prefix`
/// of `ns` (a listing then shows those, and hides the rest).
pub fn reads_some_under(grants: Option<&[&pb::Permission]>, ns: &str, prefix: &str) -> bool {
    let Some(grants) = grants else { return true };
    grants.iter().any(|g| {
        in_namespace(g, ns)
            && access_covers(g.access(), Access::Read)
            && g.store.is_empty()
            && (g.key_prefix.starts_with(prefix) || prefix.starts_with(&g.key_prefix))
    })
}

/// How the CLI and messages name an access level.
pub fn access_name(a: Access) -> &'static str {
    match a {
        Access::Read => "read",
        Access::Write => "write",
        Access::Admin => "admin",
        Access::Keyring => "keyring",
    }
}

fn covers(g: &pb::Permission, ns: &str, access: Access, on: &On<'_>) -> bool {
    in_namespace(g, ns) && access_covers(g.access(), access) && target_covers(g, on)
}

fn in_namespace(g: &pb::Permission, ns: &str) -> bool {
    g.namespace == "*" || g.namespace == ns
}

fn access_covers(granted: Access, needed: Access) -> bool {
    match needed {
        Access::Read => matches!(granted, Access::Read | Access::Write | Access::Admin),
        Access::Write => matches!(granted, Access::Write | Access::Admin),
        Access::Admin => granted == Access::Admin,
        Access::Keyring => matches!(granted, Access::Keyring | Access::Admin),
    }
}

fn target_covers(g: &pb::Permission, on: &On<'_>) -> bool {
    if !g.store.is_empty() {
        return matches!(on, On::Store(s) if *s == g.store);
    }
    if !g.key_prefix.is_empty() {
        return match on {
            On::Key(k) | On::Prefix(k) => k.starts_with(&g.key_prefix),
            On::Store(_) | On::Namespace => false,
        };
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn perm(ns: &str, access: Access, store: &str, key_prefix: &str) -> pb::Permission {
        pb::Permission {
            namespace: ns.into(),
            access: access as i32,
            store: store.into(),
            key_prefix: key_prefix.into(),
        }
    }

    #[test]
    fn grants_cover_their_namespace_access_and_narrowing_only() {
        let reader = perm("a", Access::Read, "", "");
        let cart_writer = perm("a", Access::Write, "cart", "");
        let draft_writer = perm("b", Access::Write, "", "drafts/");
        let codec = perm("*", Access::Keyring, "", "");
        let g = [&reader, &cart_writer, &draft_writer, &codec];
        let g = Some(&g[..]);
        assert!(allows(g, &Need::store("a", Access::Read, "job")));
        assert!(allows(g, &Need::store("a", Access::Write, "cart")));
        assert!(!allows(g, &Need::store("a", Access::Write, "job")));
        assert!(!allows(g, &Need::store("b", Access::Read, "cart")), "another namespace");
        assert!(allows(g, &Need::key("b", Access::Write, "drafts/x")));
        assert!(!allows(g, &Need::key("b", Access::Write, "draftsx")));
        assert!(allows(g, &Need::prefix("b", Access::Write, "drafts/7/")));
        assert!(!allows(g, &Need::prefix("b", Access::Write, "drafts")));
        assert!(
            !allows(g, &Need::store("b", Access::Write, "drafts/")),
            "a key grant is no store grant"
        );
        assert!(
            allows(g, &Need::namespace("z", Access::Keyring)),
            "* is every namespace"
        );
        assert!(!allows(g, &Need::namespace("a", Access::Admin)));
        assert!(!allows(g, &Need::Root));
        assert!(allows(None, &Need::Root), "root may do everything");
    }

    #[test]
    fn admin_covers_everything_in_its_namespace_and_keyring_only_the_ring() {
        let admin = perm("a", Access::Admin, "", "");
        let g = [&admin];
        for access in [Access::Read, Access::Write, Access::Admin, Access::Keyring] {
            assert!(allows(Some(&g[..]), &Need::namespace("a", access)));
        }
        let codec = perm("a", Access::Keyring, "", "");
        let g = [&codec];
        assert!(!allows(Some(&g[..]), &Need::key("a", Access::Read, "k")));
        let narrowed = perm("a", Access::Admin, "cart", "");
        let g = [&narrowed];
        assert!(!allows(Some(&g[..]), &Need::namespace("a", Access::Keyring)));
    }

    #[test]
    fn a_listing_is_allowed_where_some_key_under_it_is_readable() {
        let drafts = perm("a", Access::Read, "", "drafts/");
        let g = [&drafts];
        let g = Some(&g[..]);
        assert!(reads_some_under(g, "a", ""));
        assert!(reads_some_under(g, "a", "drafts/x"));
        assert!(!reads_some_under(g, "a", "carts/"));
        assert!(!reads_some_under(g, "b", ""));
    }
}
