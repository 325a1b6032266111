//! The answer to a write this node forwarded to the leader carries the
//! leader's client address (`raft::writes::forwarded`), for clients that
//! follow the leader: after a failover a client may have settled on a
//! follower, and the header moves its next call to the leader.

use handlestore_proto::meta::LEADER_HEADER;

use crate::raft::forwarded;

/// Middleware around every request: names the leader on the answer to a
/// request that was forwarded to it.
pub async fn leader_header(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let (mut resp, to) = forwarded::watching(next.run(req)).await;
    if let Some(v) = to.and_then(|addr| addr.parse().ok()) {
        resp.headers_mut().insert(LEADER_HEADER, v);
    }
    resp
}
