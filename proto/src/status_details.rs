//! How a node's [`ErrorDetail`](pb::ErrorDetail) travels: inside a
//! `google.rpc.Status` (gRPC's richer error model), as an `Any` of type
//! [`TYPE_URL`], in an error's `grpc-status-details-bin` trailer and in a
//! `WriteFailure.details`. That trailer is where every gRPC library looks for
//! a `google.rpc.Status` (grpc-go's `status.FromError(err).Details()`,
//! grpc-java's `StatusProto`, Python's `grpc_status`, connect-es), so a
//! caller in any language reads the reason through its library's own
//! parsing.
//!
//! Nodes before this release sent the bare `ErrorDetail` there. [`decode`]
//! still reads that form, for one release, so that a client talking to an
//! older node, and a node forwarding an older peer's status during a rolling
//! upgrade, keep the reason. The cases every client is held to are
//! `proto/vectors/error_details.json`.
//!
//! The two forms cannot be mistaken for each other. `ErrorDetail`'s field 1
//! (`reason`) is a string (wire type 2) and `google.rpc.Status`' field 1
//! (`code`) an int32 (wire type 0), and the node always sets both: prost
//! refuses either as the other ("invalid wire type"). Runtimes that keep a
//! field of the wrong wire type as an unknown field (protobuf-go, -java,
//! Python's) parse them, but still find no reason: a `Status` never fills
//! `ErrorDetail.reason` (its field 1 is a varint), and an `ErrorDetail`'s
//! field 3, the leader's printable address, never holds an `Any` whose type
//! URL (field 1, tag byte 0x0a, a control character) is set. So each reader
//! tries the new form first and takes the old one only when it names a
//! reason; the vectors hold every client to that.

use prost::Message;
use prost_types::Any;
use tonic_types::pb::Status as RpcStatus;

use crate::v1 as pb;

/// The type URL of the `ErrorDetail` inside a `google.rpc.Status`, as
/// every protobuf runtime's `Any.pack` writes it.
pub const TYPE_URL: &str = "type.googleapis.com/handlestore.v1.ErrorDetail";

impl prost::Name for pb::ErrorDetail {
    const NAME: &'static str = "ErrorDetail";
    const PACKAGE: &'static str = "handlestore.v1";

    fn type_url() -> String {
        TYPE_URL.into()
    }
}

/// The details of a status of `code` and `message` that carries `detail`:
/// the status itself, as `google.rpc.Status` (whose code and message must
/// be the call's: grpc-go and grpc-java check the code, Python's
/// `grpc_status` both).
pub fn encode(code: tonic::Code, message: &str, detail: &pb::ErrorDetail) -> Vec<u8> {
    RpcStatus {
        code: code as i32,
        message: message.into(),
        details: vec![Any {
            type_url: TYPE_URL.into(),
            value: detail.encode_to_vec(),
        }],
    }
    .encode_to_vec()
}

/// The `ErrorDetail` a status's details carry, in either form; `None` when
/// they carry none (empty, from something other than a node, or damaged).
pub fn decode(details: &[u8]) -> Option<pb::ErrorDetail> {
    in_status(details).or_else(|| bare(details))
}

/// The form nodes send: the first `ErrorDetail` among a `google.rpc.Status`'
/// details (matched by type name, as `Any.unpack` does in every runtime).
fn in_status(details: &[u8]) -> Option<pb::ErrorDetail> {
    let status = RpcStatus::decode(details).ok()?;
    status
        .details
        .iter()
        .find_map(|any| any.to_msg::<pb::ErrorDetail>().ok())
}

/// The form nodes of the previous release send: the bare `ErrorDetail`,
/// which always names its reason. Read for one release.
fn bare(details: &[u8]) -> Option<pb::ErrorDetail> {
    pb::ErrorDetail::decode(details).ok().filter(|d| !d.reason.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mismatch() -> pb::ErrorDetail {
        pb::ErrorDetail {
            reason: "revision_mismatch".into(),
            current_revision: 7,
            leader_id: 2,
            leader_addr: "10.0.0.2:7001".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_node_sends_a_google_rpc_status_with_the_detail_as_any() {
        let bytes = encode(tonic::Code::FailedPrecondition, "lost", &mismatch());
        let status = RpcStatus::decode(bytes.as_slice()).expect("a google.rpc.Status");
        assert_eq!(status.code, tonic::Code::FailedPrecondition as i32);
        assert_eq!(status.message, "lost");
        assert_eq!(status.details.len(), 1);
        assert_eq!(status.details[0].type_url, TYPE_URL);
        assert_eq!(decode(&bytes), Some(mismatch()));
    }

    #[test]
    fn the_previous_release_s_bare_detail_is_still_read() {
        assert_eq!(decode(&mismatch().encode_to_vec()), Some(mismatch()));
    }

    /// Each form fails to decode as the other (prost checks wire types), so
    /// neither reader can take one for the other.
    #[test]
    fn the_two_forms_cannot_be_confused() {
        let new = encode(tonic::Code::FailedPrecondition, "lost", &mismatch());
        let old = mismatch().encode_to_vec();
        assert!(
            pb::ErrorDetail::decode(new.as_slice()).is_err(),
            "a Status read as an ErrorDetail"
        );
        assert!(
            RpcStatus::decode(old.as_slice()).is_err(),
            "an ErrorDetail read as a Status"
        );
        assert_eq!(bare(&new), None);
        assert_eq!(in_status(&old), None);
    }

    #[test]
    fn details_from_something_else_name_no_reason() {
        let other = RpcStatus {
            code: tonic::Code::Unavailable as i32,
            message: "upstream connect error".into(),
            details: vec![Any {
                type_url: "type.googleapis.com/google.rpc.RetryInfo".into(),
                value: vec![],
            }],
        };
        for bytes in [vec![], vec![0xff, 0xff, 0xff], other.encode_to_vec()] {
            assert_eq!(decode(&bytes), None, "{bytes:?}");
        }
    }
}
