//! The commands of a normal log entry, shared and encoded once.
//!
//! After the leader appends an entry, it is read back for each follower
//! and for the apply, and it is encoded for the log and for each follower.
//! With the proposal behind an `Arc` and its encoding kept beside it, each
//! read is a reference count and the encoding happens once: at the
//! proposer on the leader; on a follower the bytes it received are kept
//! and written to its log as they are.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use handlestore_proto::internal::v1 as ipb;
use prost::Message;

/// A proposal and its protobuf encoding. Cheap to clone.
#[derive(Clone)]
pub struct Payload(Arc<Inner>);

struct Inner {
    proposal: ipb::Proposal,
    encoded: Bytes,
}

impl Payload {
    /// Encodes `proposal` (the leader, proposing it).
    pub fn new(proposal: ipb::Proposal) -> Self {
        let encoded = Bytes::from(proposal.encode_to_vec());
        Self(Arc::new(Inner { proposal, encoded }))
    }

    /// Decodes a proposal received or read back, keeping its bytes.
    pub fn decode(encoded: Bytes) -> Result<Self, prost::DecodeError> {
        let proposal = ipb::Proposal::decode(encoded.clone())?;
        Ok(Self(Arc::new(Inner { proposal, encoded })))
    }

    pub fn proposal(&self) -> &ipb::Proposal {
        &self.0.proposal
    }

    /// The proposal's protobuf encoding.
    pub fn encoded(&self) -> &Bytes {
        &self.0.encoded
    }

    /// The proposal itself, to be consumed: taken if this is the last
    /// reference, else copied.
    pub fn into_proposal(self) -> ipb::Proposal {
        match Arc::try_unwrap(self.0) {
            Ok(inner) => inner.proposal,
            Err(shared) => shared.proposal.clone(),
        }
    }
}

/// What the Raft library prints of an entry (at debug and trace level):
/// the kinds of its commands, never their values, key-ring secrets or
/// token digests.
impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ipb::command::Op;
        let p = &self.0.proposal;
        let kinds = p.commands.iter().map(|c| match &c.op {
            Some(Op::HandleWrite(_)) => "handle_write",
            Some(Op::HandleDelete(_)) => "handle_delete",
            Some(Op::Expire(_)) => "expire",
            Some(Op::StateWrite(_)) => "state_write",
            Some(Op::StateDelete(_)) => "state_delete",
            Some(Op::StateDeletePrefix(_)) => "state_delete_prefix",
            Some(Op::StateBatch(_)) => "state_batch",
            Some(Op::KeyringRotate(_)) => "keyring_rotate",
            Some(Op::KeyringRetire(_)) => "keyring_retire",
            Some(Op::AuthChange(_)) => "auth_change",
            Some(Op::ClusterIdentity(_)) => "cluster_identity",
            None => "empty",
        });
        f.debug_struct("Proposal")
            .field("stamp_ms", &p.stamp_ms)
            .field("commands", &kinds.collect::<Vec<_>>())
            .finish()
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.0.encoded == other.0.encoded
    }
}

impl Eq for Payload {}

// openraft's `serde` feature asks the entry payload to be serde types; our
// log and wire use protobuf, so this only mirrors the proposal.
impl serde::Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.proposal.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Payload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        ipb::Proposal::deserialize(d).map(Payload::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use handlestore_proto::v1 as pb;

    #[test]
    fn a_payload_is_its_proposal_encoded_once_and_decoded_alike() {
        let proposal = ipb::Proposal {
            stamp_ms: 42,
            commands: vec![ipb::Command {
                write_id: Some(pb::WriteId {
                    client_id: 7,
                    seq: 3,
                    first_incomplete_seq: 1,
                }),
                op: None,
                ..Default::default()
            }],
        };
        let p = Payload::new(proposal.clone());
        assert_eq!(p.encoded().as_ref(), proposal.encode_to_vec().as_slice());
        let back = Payload::decode(p.encoded().clone()).expect("decodes");
        assert_eq!(back, p);
        assert_eq!(back.proposal(), &proposal);
        let shared = p.clone();
        assert_eq!(shared.into_proposal(), proposal);
        assert_eq!(p.into_proposal(), proposal);
        assert!(Payload::decode(Bytes::from_static(&[0xff, 0xff])).is_err());
    }

    #[test]
    fn an_entry_prints_its_command_kinds_and_nothing_they_carry() {
        use ipb::command::Op;
        let secret = vec![0xA7u8; 32];
        let digest = vec![0x5Cu8; 32];
        let op = |op| ipb::Command {
            op: Some(op),
            ..Default::default()
        };
        let p = Payload::new(ipb::Proposal {
            stamp_ms: 1,
            commands: vec![
                op(Op::KeyringRotate(ipb::KeyringRotate {
                    namespace: "ns".into(),
                    secret: secret.clone(),
                    create_only: false,
                })),
                op(Op::AuthChange(ipb::AuthChange {
                    change: Some(ipb::auth_change::Change::PutUser(ipb::AuthUser {
                        name: "svc".into(),
                        roles: vec![],
                        token_id: "public-id".into(),
                        token_digest: digest.clone(),
                    })),
                })),
                op(Op::HandleWrite(ipb::HandleWrite {
                    value: b"decrypted-access-token".to_vec(),
                    ..Default::default()
                })),
            ],
        });
        for shown in [format!("{p:?}"), format!("{p:#?}")] {
            assert!(
                shown.contains("keyring_rotate") && shown.contains("auth_change"),
                "{shown}"
            );
            assert!(shown.contains("handle_write"), "{shown}");
            for bytes in [&secret, &digest] {
                for rendering in [format!("{bytes:?}"), format!("{}", bytes[0]), format!("{:x}", bytes[0])] {
                    assert!(!shown.contains(&rendering), "{shown} shows {rendering}");
                }
            }
            for text in ["decrypted-access-token", "public-id", "svc"] {
                assert!(!shown.contains(text), "{shown} shows {text}");
            }
        }
    }
}
