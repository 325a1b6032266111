//! gRPC error statuses with a human message and a machine-readable
//! `ErrorDetail` (prost-encoded into the status details).

use handlestore_proto::v1 as pb;
use prost::Message;
use tonic::{Code, Status};

/// Metadata key carrying the leader's client address on UNAVAILABLE
/// answers, for clients that follow the leader instead of being forwarded.
pub const LEADER_ADDR_HEADER: &str = "x-handlestore-leader";

/// Who the leader is, as far as this node knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderHint {
    pub id: u64,
    pub addr: String,
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
    status(Code::InvalidArgument, "invalid_argument", message)
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

pub fn internal(message: impl Into<String>) -> Status {
    status(Code::Internal, "internal", message)
}
