//! Who may speak on the peer port: a node proves it is a *member*, not
//! merely that the cluster's CA signed its certificate (a client
//! certificate of the same CA must never reach a Raft RPC).
//!
//! By default a peer's certificate must name a current member's node name,
//! `node-<id>` (its common name or a DNS name; `handlestore certs` names
//! node certificates so and refuses to give a client such a name). The
//! members are the ids of the membership this node holds (voters and
//! learners, kept up to date by `raft::life::boot` as the membership changes);
//! before it holds one, those of `--initial-cluster`; a node started with
//! neither (one waiting to be added) takes any node name until it learns
//! the membership. `--peer-allowed-names` replaces the rule with a fixed
//! list of names.
//!
//! The gate is asked at every TLS handshake on the peer port, and again
//! for every Raft request on a connection already open, so a member
//! removed while connected is refused from its next request on.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, RwLock};
use std::time::{Duration, Instant};

use rustls::pki_types::CertificateDer;

use super::names::names_of;

/// How often refusals are logged (a removed member keeps knocking).
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Certificates whose names are kept parsed, at most (peers are few; an
/// attacker's many certificates only empty it).
const NAMES_KEPT: usize = 256;

/// The rule for the peer port; see the module docs.
#[derive(Debug)]
pub struct PeerGate {
    rule: Rule,
    warned: Mutex<Option<Instant>>,
    /// The names of certificates seen, by their DER bytes: every Raft
    /// request is checked, and parsing X.509 each time would cost more
    /// than the check.
    names: Mutex<HashMap<Vec<u8>, Vec<String>>>,
}

#[derive(Debug)]
enum Rule {
    /// `--peer-allowed-names`: exactly these names.
    Listed(Vec<String>),
    /// Node names of the members.
    Members(RwLock<Members>),
}

#[derive(Debug)]
struct Members {
    /// The membership this node holds, once it holds one.
    current: Option<BTreeSet<u64>>,
    /// `--initial-cluster`'s ids, until then.
    initial: BTreeSet<u64>,
}

/// A member's node name: `node-<id>`.
pub fn node_name(id: u64) -> String {
    format!("node-{id}")
}

/// The id in a node name (`node-<id>`, id > 0), if it is one.
pub fn node_id_of(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("node-")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|id| *id > 0)
}

impl PeerGate {
    /// Peers named in `allowed` (`--peer-allowed-names`), or, with none
    /// listed, the members, starting from `initial` (`--initial-cluster`).
    pub fn new(allowed: Vec<String>, initial: impl IntoIterator<Item = u64>) -> Self {
        let rule = if allowed.is_empty() {
            Rule::Members(RwLock::new(Members {
                current: None,
                initial: initial.into_iter().collect(),
            }))
        } else {
            Rule::Listed(allowed)
        };
        Self {
            rule,
            warned: Mutex::new(None),
            names: Mutex::new(HashMap::new()),
        }
    }

    /// The membership changed: these ids are the members now.
    pub fn set_members(&self, ids: impl IntoIterator<Item = u64>) {
        if let Rule::Members(m) = &self.rule {
            m.write().unwrap_or_else(|p| p.into_inner()).current = Some(ids.into_iter().collect());
        }
    }

    /// Whether a peer with these certificate names may speak Raft here.
    pub fn admits(&self, names: &[String]) -> bool {
        match &self.rule {
            Rule::Listed(allowed) => names.iter().any(|n| allowed.contains(n)),
            Rule::Members(m) => {
                let m = m.read().unwrap_or_else(|p| p.into_inner());
                let members = m.current.as_ref().unwrap_or(&m.initial);
                names
                    .iter()
                    .filter_map(|n| node_id_of(n))
                    .any(|id| members.is_empty() || members.contains(&id))
            }
        }
    }

    /// [`admits`](Self::admits) for a certificate (DER); logs a refusal,
    /// at most every few seconds.
    pub fn admits_cert(&self, cert: &CertificateDer<'_>) -> bool {
        let refused = {
            let mut kept = self.names.lock().unwrap_or_else(|p| p.into_inner());
            if !kept.contains_key(cert.as_ref()) {
                if kept.len() >= NAMES_KEPT {
                    kept.clear();
                }
                kept.insert(cert.as_ref().to_vec(), names_of(cert));
            }
            let names = kept.get(cert.as_ref()).map(Vec::as_slice).unwrap_or_default();
            if self.admits(names) {
                return true;
            }
            names.to_vec()
        };
        self.warn_refused(&refused);
        false
    }

    /// Whether this node's own certificate would be let in by peers
    /// following the same rule (it names this node, or a listed name).
    pub fn admits_self(&self, id: u64, names: &[String]) -> bool {
        match &self.rule {
            Rule::Listed(allowed) => names.iter().any(|n| allowed.contains(n)),
            Rule::Members(_) => names.iter().any(|n| node_id_of(n) == Some(id)),
        }
    }

    /// Who is let in now, for logs and errors ("node-1, node-2, node-3").
    pub fn describe(&self) -> String {
        match &self.rule {
            Rule::Listed(allowed) => allowed.join(", "),
            Rule::Members(m) => {
                let m = m.read().unwrap_or_else(|p| p.into_inner());
                let members = m.current.as_ref().unwrap_or(&m.initial);
                if members.is_empty() {
                    return "any node-ID (no membership known yet)".into();
                }
                members.iter().map(|id| node_name(*id)).collect::<Vec<_>>().join(", ")
            }
        }
    }

    /// Refuses to start a node whose own peer certificate its peers would
    /// refuse (the cluster would never form, and say so only on the others).
    pub fn check_own(&self, id: u64, files: &super::TlsFiles) -> anyhow::Result<()> {
        let certs = super::load_certs(&files.cert)?;
        let names = certs.first().map(names_of).unwrap_or_default();
        if self.admits_self(id, &names) {
            return Ok(());
        }
        let wanted = match &self.rule {
            Rule::Listed(allowed) => format!("one of --peer-allowed-names ({})", allowed.join(", ")),
            Rule::Members(_) => format!(
                "{} (peers let in only members' node certificates; `handlestore certs --node {id}=HOST` makes one, \
                 or list your certificates' names with --peer-allowed-names)",
                node_name(id)
            ),
        };
        anyhow::bail!(
            "the peer certificate {} names {names:?}, not {wanted}",
            files.cert.display()
        )
    }

    fn warn_refused(&self, names: &[String]) {
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        if warned.is_some_and(|t| t.elapsed() < WARN_EVERY) {
            return;
        }
        *warned = Some(Instant::now());
        tracing::warn!(
            ?names,
            allowed = %self.describe(),
            "refused a peer: its certificate names no current member (a client's certificate, or a node \
             that is not or no longer a member; --peer-allowed-names overrides)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn node_names_are_node_dash_a_positive_id() {
        assert_eq!(node_id_of("node-1"), Some(1));
        assert_eq!(node_id_of("node-42"), Some(42));
        for not in [
            "node-", "node-0", "node-x", "node-1a", "node--1", "root", "xnode-1", "node-+1",
        ] {
            assert_eq!(node_id_of(not), None, "{not}");
        }
        assert_eq!(node_name(7), "node-7");
    }

    #[test]
    fn members_are_the_initial_cluster_until_a_membership_is_known() {
        let gate = PeerGate::new(vec![], [1, 2, 3]);
        assert!(gate.admits(&names(&["node-2"])));
        assert!(gate.admits(&names(&["n2.internal", "node-3"])), "any of its names");
        assert!(!gate.admits(&names(&["node-4"])), "not a member");
        assert!(!gate.admits(&names(&["root"])), "a client");
        assert!(!gate.admits(&[]), "no name at all");
        gate.set_members([1, 2, 4]);
        assert!(gate.admits(&names(&["node-4"])), "added");
        assert!(!gate.admits(&names(&["node-3"])), "removed");
        assert_eq!(gate.describe(), "node-1, node-2, node-4");
    }

    #[test]
    fn a_node_with_no_membership_and_no_initial_cluster_takes_any_node_name() {
        let gate = PeerGate::new(vec![], []);
        assert!(gate.admits(&names(&["node-9"])));
        assert!(!gate.admits(&names(&["root"])));
        gate.set_members([1]);
        assert!(!gate.admits(&names(&["node-9"])));
    }

    #[test]
    fn listed_names_replace_the_rule() {
        let gate = PeerGate::new(names(&["n1.example", "n2.example"]), [1, 2]);
        assert!(gate.admits(&names(&["n2.example"])));
        assert!(!gate.admits(&names(&["node-1"])), "only the list counts");
        gate.set_members([1, 2, 3]);
        assert!(!gate.admits(&names(&["node-3"])));
        assert!(gate.admits_self(1, &names(&["n1.example"])));
        assert!(!gate.admits_self(1, &names(&["node-1"])));
    }

    fn cert(common_name: &str) -> CertificateDer<'static> {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).expect("params");
        params.distinguished_name.push(rcgen::DnType::CommonName, common_name);
        let key = rcgen::KeyPair::generate().expect("key");
        params.self_signed(&key).expect("cert").der().clone()
    }

    #[test]
    fn certificates_are_judged_by_their_names_as_the_membership_is_now() {
        let gate = PeerGate::new(vec![], [1, 2, 3]);
        let (node2, root) = (cert("node-2"), cert("root"));
        assert!(gate.admits_cert(&node2));
        assert!(!gate.admits_cert(&root));
        gate.set_members([1, 3]);
        assert!(!gate.admits_cert(&node2), "removed: refused from now on");
        assert!(
            !gate.admits_cert(&CertificateDer::from(vec![1, 2, 3])),
            "garbage names nothing"
        );
    }

    #[test]
    fn a_node_is_let_in_by_its_own_name_only() {
        let gate = PeerGate::new(vec![], [1, 2, 3]);
        assert!(gate.admits_self(2, &names(&["node-2", "localhost"])));
        assert!(!gate.admits_self(2, &names(&["node-3"])));
        assert!(!gate.admits_self(2, &names(&["localhost"])));
    }
}
