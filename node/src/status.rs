//! gRPC error statuses with a human message and a machine-readable
//! `ErrorDetail` (prost-encoded into the status details).

use std::cell::Cell;

use handlestore_proto::reason;
use handlestore_proto::v1 as pb;
use prost::Message;
use tonic::{Code, Status};

/// Metadata key carrying the leader's client address, for clients that
/// follow the leader instead of being forwarded: on UNAVAILABLE answers,
/// and on the answer to a write this node forwarded to the leader.
pub use handlestore_proto::meta::LEADER_HEADER as LEADER_ADDR_HEADER;

tokio::task_local! {
    /// Where the request being served was forwarded, if it was: set by the
    /// write path, turned into a `LEADER_ADDR_HEADER` on the answer by
    /// [`leader_header`].
    static FORWARDED_TO: Cell<Option<String>>;
}

/// Notes that the request being served was forwarded to the leader at
/// `addr`; its answer names that leader. Outside a request (no
/// [`leader_header`] around it) this does nothing.
pub fn note_forwarded(addr: &str) {
    let _ = FORWARDED_TO.try_with(|cell| cell.set(Some(addr.to_string())));
}

/// Middleware around every request: an answer to a write that was forwarded
/// to the leader carries the leader's address, so a client sends its next
/// call there instead of paying the extra hop on every write (after a
/// failover a client may have settled on a follower).
pub async fn leader_header(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let served = FORWARDED_TO.scope(Cell::new(None), next.run(req));
    tokio::pin!(served);
    let mut resp = (&mut served).await;
    if let Some(addr) = served.as_mut().take_value().and_then(Cell::into_inner)
        && let Ok(v) = addr.parse()
    {
        resp.headers_mut().insert(LEADER_ADDR_HEADER, v);
    }
    resp
}

/// Who the leader is, as far as this node knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderHint {
    pub id: u64,
    /// Where clients reach the leader (what they are told).
    pub addr: String,
    /// Where other nodes reach it; empty: at `addr`.
    pub peer_addr: String,
}

impl LeaderHint {
    pub fn new(id: u64, member: Option<&crate::config::Member>) -> Self {
        let member = member.cloned().unwrap_or_default();
        Self {
            id,
            addr: member.addr,
            peer_addr: member.peer_addr,
        }
    }

    /// Where other nodes reach the leader.
    pub fn peer(&self) -> &str {
        crate::config::peer_of(&self.addr, &self.peer_addr)
    }
}

pub fn status(code: Code, reason: &str, message: impl Into<String>) -> Status {
    with_detail(
        code,
        message,
        pb::ErrorDetail {
            reason: reason.into(),
            ..Default::default()
        },
    )
}

pub fn with_detail(code: Code, message: impl Into<String>, detail: pb::ErrorDetail) -> Status {
    let leader_addr = detail.leader_addr.clone();
    let mut st = Status::with_details(code, message, detail.encode_to_vec().into());
    if !leader_addr.is_empty()
        && let Ok(v) = leader_addr.parse()
    {
        st.metadata_mut().insert(LEADER_ADDR_HEADER, v);
    }
    st
}

pub fn invalid(message: impl Into<String>) -> Status {
    status(Code::InvalidArgument, reason::INVALID_ARGUMENT, message)
}

pub fn unavailable(reason: &str, message: impl Into<String>, leader: Option<&LeaderHint>) -> Status {
    let mut detail = pb::ErrorDetail {
        reason: reason.into(),
        ..Default::default()
    };
    if let Some(l) = leader {
        detail.leader_id = l.id;
        detail.leader_addr = l.addr.clone();
    }
    with_detail(Code::Unavailable, message, detail)
}

/// This node's clock is not trusted for what was asked (reason
/// "clock_offset"): the caller should try another node.
pub fn clock(e: &crate::clock::ClockError) -> Status {
    unavailable(reason::CLOCK_OFFSET, e.to_string(), None)
}

pub fn internal(message: impl Into<String>) -> Status {
    status(Code::Internal, reason::INTERNAL, message)
}
