//! No split brain: Raft's election safety, checked from outside. Through
//! the whole run every node is asked for its status a few times a second.
//!
//! openraft 0.9 (built without `single-term-leader`, as we build it) names
//! a leader by `(term, node id)`, totally ordered: one term may elect more
//! than one leader, and the higher node id's supersedes the lower's, as a
//! later term would (openraft's `openraft::docs::data::leader_id`). Two
//! nodes saying they lead one term is therefore allowed, and only counted.
//! What must hold is that each leader id is elected once: a node leads a
//! term in one unbroken reign. Once seen leading term T and then seen
//! otherwise (following, another term, or restarted), it never leads T
//! again; doing so means a second election for the same leader id, which
//! only a lost vote allows.

use std::collections::{BTreeMap, BTreeSet};
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

/// One node's answer, at a time of the run (µs): whether it said it led,
/// and its term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub at_us: u64,
    pub node: u64,
    pub term: u64,
    pub leads: bool,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct LeaderChecks {
    /// Statuses answered.
    pub samples: usize,
    /// Terms some node was seen leading.
    pub terms_led: usize,
    /// Terms more than one node was seen leading (allowed: see above).
    pub shared_terms: usize,
    /// Leader ids elected twice: a node leading a term again after it had
    /// stopped leading it.
    pub violations: Vec<String>,
}

/// Asks every node for its status until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    task: JoinHandle<Vec<Sample>>,
}

/// Between two rounds of questions.
const EVERY: Duration = Duration::from_millis(200);

impl Sampler {
    pub fn start(cluster: &TestCluster, history: &Arc<History>) -> Self {
        let clients: Vec<Client> = cluster.nodes.iter().map(|n| cluster.client_for(n.id)).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let (s, h) = (stop.clone(), history.clone());
        let task = tokio::spawn(async move {
            let mut samples = Vec::new();
            while !s.load(Ordering::Relaxed) {
                let answers = futures::future::join_all(clients.iter().map(status)).await;
                let at_us = h.now();
                samples.extend(answers.into_iter().flatten().map(|st| Sample {
                    at_us,
                    node: st.node_id,
                    term: st.term,
                    // One reign whether or not it hears a majority.
                    leads: st.state.starts_with("leader"),
                }));
                tokio::time::sleep(EVERY).await;
            }
            samples
        });
        Self { stop, task }
    }

    pub async fn finish(self) -> LeaderChecks {
        self.stop.store(true, Ordering::Relaxed);
        let samples = self.task.await.unwrap_or_default();
        check(&samples)
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

/// Each node leads each term in one unbroken reign; terms led by more
/// than one node are counted.
pub fn check(samples: &[Sample]) -> LeaderChecks {
    let mut leaders: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    let mut by_node: BTreeMap<u64, Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        if s.leads {
            leaders.entry(s.term).or_default().insert(s.node);
        }
        by_node.entry(s.node).or_default().push(s);
    }
    LeaderChecks {
        samples: samples.len(),
        terms_led: leaders.len(),
        shared_terms: leaders.values().filter(|nodes| nodes.len() > 1).count(),
        violations: by_node.values().flat_map(|s| second_reigns(s)).collect(),
    }
}

/// One node's samples, in time order: a term it leads again after it had
/// stopped leading it.
fn second_reigns(samples: &[&Sample]) -> Vec<String> {
    let (mut reign, mut ended) = (None::<u64>, BTreeMap::<u64, u64>::new());
    let mut violations = Vec::new();
    for s in samples {
        let leading = s.leads.then_some(s.term);
        if let Some(term) = reign.filter(|term| leading != Some(*term)) {
            ended.insert(term, s.at_us);
        }
        reign = leading;
        let Some(term) = leading else { continue };
        if let Some(left) = ended.remove(&term) {
            violations.push(format!(
                "SPLIT BRAIN: node {node} led term {term} again at {:.1}s after it stopped leading it at {:.1}s \
                 (leader id ({term}, {node}) elected twice: a lost vote)",
                s.at_us as f64 / 1e6,
                left as f64 / 1e6,
                node = s.node,
            ));
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(at_s: u64, node: u64, term: u64, leads: bool) -> Sample {
        Sample {
            at_us: at_s * 1_000_000,
            node,
            term,
            leads,
        }
    }

    #[test]
    fn one_reign_per_leader_id_passes() {
        // An old leader still saying it leads its old term while a new one
        // leads the next is no split brain; neither are two leaders of one
        // term (openraft's (term, node id) leader ids), nor a leader that
        // did not answer for a while.
        let c = check(&[
            at(1, 1, 2, true),
            at(1, 2, 2, false),
            at(2, 1, 2, true),
            at(3, 2, 3, true),
            at(3, 1, 2, true),
            at(4, 3, 3, true),
            at(6, 3, 3, true),
            at(7, 1, 5, true),
        ]);
        assert!(c.violations.is_empty(), "{:?}", c.violations);
        assert_eq!((c.samples, c.terms_led, c.shared_terms), (8, 3, 1));
    }

    #[test]
    fn a_term_led_again_is_caught() {
        // Node 2 led term 4, followed in it, then led it again.
        let c = check(&[
            at(1, 2, 4, true),
            at(2, 2, 4, false),
            at(3, 1, 4, false),
            at(4, 2, 4, true),
            at(5, 2, 4, true),
        ]);
        assert_eq!(c.violations.len(), 1, "{:?}", c.violations);
        let v = &c.violations[0];
        assert!(
            v.contains("node 2 led term 4 again at 4.0s") && v.contains("at 2.0s"),
            "{v}"
        );
    }

    #[test]
    fn a_term_led_again_after_another_is_caught() {
        let c = check(&[at(1, 3, 7, true), at(2, 3, 8, true), at(3, 3, 7, true)]);
        assert_eq!(c.violations.len(), 1, "{:?}", c.violations);
    }
}
