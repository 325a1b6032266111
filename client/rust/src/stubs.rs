//! The generated clients of the node's Handles and State services over one
//! node's channel, with the client's message size limit: the handle and
//! state stores call them, and the point reads that go alone do too.

use handlestore_proto::v1 as pb;
use pb::handles_client::HandlesClient;
use pb::state_client::StateClient;

use crate::transport::NodeChannel;

/// The largest gRPC message the client accepts or sends (values are limited
/// by the node, 1 MiB by default).
pub(crate) const MAX_MESSAGE: usize = 64 << 20;

/// The Handles service on this channel.
pub(crate) fn handles(ch: NodeChannel) -> HandlesClient<NodeChannel> {
    HandlesClient::new(ch)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE)
}

/// The State service on this channel.
pub(crate) fn state(ch: NodeChannel) -> StateClient<NodeChannel> {
    StateClient::new(ch)
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE)
}
