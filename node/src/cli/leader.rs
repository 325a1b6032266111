//! The cluster's leader, as the membership commands (`member`, `member
//! shrink`) and a joining node (`join`) find it: the first node that
//! answers names it, and the leader's own status is the view of the
//! membership that changes are made to.

use handlestore_client::NodeChannel as Channel;
use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;

use super::{CliError, Conn};

/// The leader's own status and a channel to it: its view of the
/// membership is the one changes are made to. A node that points at a
/// leader that no longer leads is asked again, within `--timeout`.
pub(super) async fn leader_status(conn: &Conn) -> Result<(pb::StatusResponse, Channel), CliError> {
    let deadline = tokio::time::Instant::now() + conn.timeout;
    loop {
        let (s, ch) = leader(conn).await?;
        if s.state == "leader" {
            return Ok((s, ch));
        }
        let asked = AdminClient::new(ch.clone()).status(pb::StatusRequest {}).await;
        match asked.map(tonic::Response::into_inner) {
            Ok(s) if s.state.starts_with("leader") => return Ok((s, ch)),
            Ok(s) if tokio::time::Instant::now() >= deadline => {
                return Err(CliError::new(
                    2,
                    format!(
                        "node {} said node {} leads, which says it is a {}",
                        s.node_id, s.leader_id, s.state
                    ),
                ));
            }
            Err(e) if tokio::time::Instant::now() >= deadline => {
                return Err(CliError::new(2, format!("cannot reach the leader: {}", e.message())));
            }
            _ => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
        }
    }
}

/// The status of the first node that answers, and a channel to the leader.
pub(super) async fn leader(conn: &Conn) -> Result<(pb::StatusResponse, Channel), CliError> {
    // A node that knows no leader passes the question to the next.
    let (s, ch) = conn
        .first_answer(|ch| async move {
            let s = AdminClient::new(ch.clone())
                .status(pb::StatusRequest {})
                .await?
                .into_inner();
            if s.state != "leader" && (s.leader_id == 0 || s.leader_addr.is_empty()) {
                return Err(tonic::Status::unavailable("no leader elected"));
            }
            Ok((s, ch))
        })
        .await
        .map_err(|e| CliError::new(e.code, format!("cannot reach the leader: {}", e.message)))?;
    if s.state == "leader" {
        return Ok((s, ch));
    }
    let leader = conn.client_for([s.leader_addr.clone()])?;
    let ch = leader
        .channel(0)
        .ok_or_else(|| CliError::new(2, "no channel to the leader"))?;
    Ok((s, ch))
}
