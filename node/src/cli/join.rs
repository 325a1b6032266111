//! How a node started with `--join` asks the cluster to let it in: the
//! admin API at those endpoints, its leader found as `handlestore member`
//! finds it, with the credentials an admin command would take
//! (`--join-cacert`, `--join-token-file`, `--join-token`, or the CLI's
//! environment variables). What to ask, and when, is
//! `raft::life::join`'s.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;

use super::leader::leader_status;
use super::{CliError, Conn};
use crate::config::Member;
use crate::raft::NodeId;
use crate::raft::join::{Cluster, LeaderView};

/// The deadline of each call (finding the leader included).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The cluster behind `--join`'s endpoints.
pub struct AdminCluster {
    conn: Conn,
}

impl AdminCluster {
    /// The cluster at `endpoints`, reached with these credentials; refuses
    /// what no call could use (a bad endpoint, an unreadable file).
    pub fn new(
        endpoints: Vec<String>,
        cacert: Option<PathBuf>,
        token: Option<String>,
        token_file: Option<PathBuf>,
    ) -> Result<Self, CliError> {
        let conn = Conn {
            endpoints,
            namespace: handlestore_proto::limits::DEFAULT_NAMESPACE.to_string(),
            timeout: CALL_TIMEOUT,
            cacert,
            cert: None,
            key: None,
            token,
            token_file,
        };
        conn.client()
            .map_err(|e| CliError::new(2, format!("--join: {}", e.message)))?;
        Ok(Self { conn })
    }

    async fn leader(&self) -> Result<(pb::StatusResponse, handlestore_client::NodeChannel), String> {
        leader_status(&self.conn).await.map_err(|e| e.message)
    }
}

/// The leader's view in its status.
fn view_of(s: &pb::StatusResponse) -> LeaderView {
    let ids = |voter: bool| s.members.iter().filter(|m| m.voter == voter).map(|m| m.id).collect();
    LeaderView {
        leader: s.node_id,
        voters: ids(true),
        learners: ids(false),
        applied: s.applied_index,
    }
}

impl Cluster for AdminCluster {
    fn leader_view(&self) -> BoxFuture<'_, Result<LeaderView, String>> {
        async move { Ok(view_of(&self.leader().await?.0)) }.boxed()
    }

    fn add_learner(&self, id: NodeId, member: Member) -> BoxFuture<'_, Result<(), String>> {
        async move {
            let (_, ch) = self.leader().await?;
            let mut admin = AdminClient::new(ch);
            let asked = admin.add_learner(pb::AddLearnerRequest {
                id,
                addr: member.addr,
                blocking: false,
                peer_addr: member.peer_addr,
            });
            asked
                .await
                .map_err(|s| format!("adding it as a learner: {}", s.message()))?;
            Ok(())
        }
        .boxed()
    }

    fn set_voters(&self, voters: BTreeSet<NodeId>) -> BoxFuture<'_, Result<(), String>> {
        async move {
            let (_, ch) = self.leader().await?;
            let mut admin = AdminClient::new(ch);
            let asked = admin.change_membership(pb::ChangeMembershipRequest {
                voters: voters.into_iter().collect(),
                retain: true,
            });
            asked.await.map_err(|s| format!("making it a voter: {}", s.message()))?;
            Ok(())
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leaders_status_tells_voters_learners_and_how_far_it_applied() {
        let member = |id, voter| pb::Member {
            id,
            addr: format!("hs-{id}:7401"),
            voter,
            peer_addr: String::new(),
        };
        let s = pb::StatusResponse {
            node_id: 2,
            applied_index: 77,
            members: vec![member(1, true), member(2, true), member(4, false)],
            ..Default::default()
        };
        assert_eq!(
            view_of(&s),
            LeaderView {
                leader: 2,
                voters: [1, 2].into(),
                learners: [4].into(),
                applied: 77
            }
        );
    }

    #[test]
    fn an_endpoint_no_call_could_use_is_refused_at_once() {
        let e = AdminCluster::new(vec!["not a url at all".into()], None, None, None)
            .err()
            .expect("refused");
        assert!(e.message.starts_with("--join:"), "{}", e.message);
    }
}
