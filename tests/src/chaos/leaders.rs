//! No split brain: Raft's election safety, checked from outside. Through
//! the whole run every node is asked for its status a few times a second;
//! a node that answers "leader" says so for one term, and no two nodes may
//! ever say so for the same term.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use handlestore_client::Client;
use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;
use serde::Serialize;
use tokio::task::JoinHandle;

use super::history::History;
use crate::cluster::TestCluster;

/// One node saying it led a term, at a time of the run (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub at_us: u64,
    pub node: u64,
    pub term: u64,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct LeaderChecks {
    /// Statuses answered.
    pub samples: usize,
    /// Terms some node was seen leading.
    pub terms_led: usize,
    /// Terms two nodes said they led.
    pub violations: Vec<String>,
}

/// Asks every node for its status until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    task: JoinHandle<(usize, Vec<Claim>)>,
}

/// Between two rounds of questions.
const EVERY: Duration = Duration::from_millis(200);

impl Sampler {
    pub fn start(cluster: &TestCluster, history: &Arc<History>) -> Self {
        let clients: Vec<Client> = cluster.nodes.iter().map(|n| cluster.client_for(n.id)).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let (s, h) = (stop.clone(), history.clone());
        let task = tokio::spawn(async move {
            let (mut samples, mut claims) = (0, Vec::new());
            while !s.load(Ordering::Relaxed) {
                let answers = futures::future::join_all(clients.iter().map(status)).await;
                let at_us = h.now();
                for st in answers.into_iter().flatten() {
                    samples += 1;
                    if st.state == "leader" {
                        claims.push(Claim {
                            at_us,
                            node: st.node_id,
                            term: st.term,
                        });
                    }
                }
                tokio::time::sleep(EVERY).await;
            }
            (samples, claims)
        });
        Self { stop, task }
    }

    pub async fn finish(self) -> LeaderChecks {
        self.stop.store(true, Ordering::Relaxed);
        let (samples, claims) = self.task.await.unwrap_or_default();
        let mut checks = check(&claims);
        checks.samples = samples;
        checks
    }
}

/// One node's status, if it answers within a second (a paused or cut-off
/// node does not).
async fn status(client: &Client) -> Option<pb::StatusResponse> {
    let mut admin = AdminClient::new(client.channel(0)?);
    let mut req = tonic::Request::new(pb::StatusRequest {});
    req.set_timeout(Duration::from_secs(1));
    let call = admin.status(req);
    let answer = tokio::time::timeout(Duration::from_secs(1), call).await.ok()?;
    answer.ok().map(tonic::Response::into_inner)
}

/// At most one leader per term.
pub fn check(claims: &[Claim]) -> LeaderChecks {
    let mut by_term: BTreeMap<u64, BTreeMap<u64, u64>> = BTreeMap::new();
    for c in claims {
        by_term.entry(c.term).or_default().entry(c.node).or_insert(c.at_us);
    }
    let violations = by_term
        .iter()
        .filter(|(_, leaders)| leaders.len() > 1)
        .map(|(term, leaders)| {
            let who: Vec<String> = leaders
                .iter()
                .map(|(node, at)| format!("node {node} (first at {:.1}s)", *at as f64 / 1e6))
                .collect();
            format!(
                "SPLIT BRAIN: term {term} had {} leaders: {}",
                leaders.len(),
                who.join(", ")
            )
        })
        .collect();
    LeaderChecks {
        samples: 0,
        terms_led: by_term.len(),
        violations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(at_s: u64, node: u64, term: u64) -> Claim {
        Claim {
            at_us: at_s * 1_000_000,
            node,
            term,
        }
    }

    #[test]
    fn one_leader_per_term_passes() {
        // An old leader still saying it leads its old term while a new one
        // leads the next is no split brain.
        let c = check(&[
            claim(1, 1, 2),
            claim(2, 1, 2),
            claim(3, 2, 3),
            claim(3, 1, 2),
            claim(4, 3, 5),
        ]);
        assert!(c.violations.is_empty(), "{:?}", c.violations);
        assert_eq!(c.terms_led, 3);
    }

    #[test]
    fn two_leaders_in_one_term_are_caught() {
        let c = check(&[claim(1, 1, 4), claim(2, 2, 4), claim(3, 2, 5)]);
        assert_eq!(c.violations.len(), 1, "{:?}", c.violations);
        assert!(c.violations[0].contains("term 4") && c.violations[0].contains("node 2"));
    }
}
