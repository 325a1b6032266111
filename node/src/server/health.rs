//! Plain-HTTP health endpoints on the node's port, for load balancers,
//! orchestrators and `docker compose` healthchecks:
//!
//! - `GET /healthz`: the process is up and serving (always 200 while it runs).
//! - `GET /readyz`: this node can serve a linearizable read now: a leader is
//!   known, it confirmed its leadership with a quorum, and this node has
//!   applied up to the leader's commit index, and its clock is trusted
//!   (`crate::clock`), and its disk has room ([`storage::disk`](crate::storage::disk)). 503 with the
//!   reason otherwise (no leader, no quorum, partitioned away, still
//!   catching up, clock off, disk full).
//!
//! Both answer in text; the gRPC services share the port (the server accepts
//! HTTP/1.1 for these and HTTP/2 for gRPC).

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use handlestore_proto::v1 as pb;

use crate::api::Api;
use crate::api::read::ReadAt;
use crate::state::ExpiryTime;

/// The longest `/readyz` waits before answering "not ready".
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// Adds `/healthz` and `/readyz` to the server's routes.
pub fn add_routes(router: &mut axum::Router, api: Arc<Api>, id: u64) {
    let ready = move || {
        let api = api.clone();
        async move { readyz(&api, id).await }
    };
    let r = std::mem::take(router)
        .route(
            "/healthz",
            get(move || async move { (StatusCode::OK, format!("ok: node {id}\n")) }),
        )
        .route("/readyz", get(ready));
    *router = r;
}

async fn readyz(api: &Api, id: u64) -> (StatusCode, String) {
    let opts = pb::ReadOptions {
        consistency: pb::Consistency::Linearizable as i32,
        ..Default::default()
    };
    if let Some(problem) = api.proposer.disk().report().problem() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: node {id}: {problem}\n"),
        );
    }
    let leader = api.proposer.leader_view().leader.map(|l| l.id);
    match tokio::time::timeout(READY_TIMEOUT, api.reads.ready(Some(&opts))).await {
        Ok(Ok(ReadAt {
            time: ExpiryTime::Unknown(why),
            ..
        })) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: node {id}: {why}\n"),
        ),
        Ok(Ok(at)) => (
            StatusCode::OK,
            format!(
                "ready: node {id}, leader {}, applied {}\n",
                leader.map(|l| l.to_string()).unwrap_or_else(|| "?".into()),
                at.revision
            ),
        ),
        Ok(Err(status)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: node {id}: {}\n", status.message()),
        ),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: node {id}: no answer from the leader within {READY_TIMEOUT:?}\n"),
        ),
    }
}
