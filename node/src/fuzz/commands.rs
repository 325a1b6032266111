//! Log commands built field by field (structure-aware), where the damaged
//! bytes of the target in `mod.rs` mostly fail to decode: every kind of
//! command, with names, ids and keys drawn from small pools so that
//! commands meet on the same entries (creates, overwrites, revision checks,
//! deletes, expiries, prefix deletes, auth and quotas), and with any value
//! in the fields that carry numbers. Applied in sequence to two stores,
//! each command must end as a result (done or refused), never a panic or a
//! storage error, and both stores must hold the same records and give the
//! same answers: the state machine is deterministic, or replicas diverge.

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use ipb::command::Op;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use super::{Store, config};
use crate::state::keys;

const IDS: [&str; 3] = [
    "AAAAAAAAAAAAAAAAAAAAAAAAAA",
    "cart-BBBBBBBBBBBBBBBBBBBBBBBBBB",
    "ZZZZZZZZZZZZZZZZZZZZZZZZZ2",
];

fn namespace() -> impl Strategy<Value = String> {
    prop_oneof![4 => Just("ns".to_string()), 2 => Just("other".to_string()), 1 => ".{0,12}"]
}

fn store_name() -> impl Strategy<Value = String> {
    prop_oneof![4 => Just("cart".to_string()), 1 => Just("jobs".to_string()), 1 => ".{0,12}"]
}

fn handle_id() -> impl Strategy<Value = String> {
    prop_oneof![6 => proptest::sample::select(IDS.to_vec()).prop_map(String::from), 1 => ".{0,40}"]
}

fn state_key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => proptest::sample::select(vec!["a", "a/b", "a/c", "a/b/c", "z"]).prop_map(String::from),
        1 => ".{0,20}",
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"{\"items\":[]}".to_vec()),
        vec(any::<u8>(), 0..64),
        (0usize..4).prop_map(|n| vec![b'x'; n << 14]),
    ]
}

/// Small numbers, the edges, and anything.
fn number() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..50, 1 => Just(u64::MAX), 1 => any::<u64>()]
}

fn handle_write() -> impl Strategy<Value = Op> {
    let names = (namespace(), store_name(), handle_id());
    let fields = (
        value(),
        prop_oneof![0..2i32, any::<i32>()],
        number(),
        any::<bool>(),
        option::of(number()),
    );
    (names, fields).prop_map(
        |((namespace, store, id), (value, mode, ttl_ms, keep_ttl, expected_revision))| {
            Op::HandleWrite(ipb::HandleWrite {
                namespace,
                store,
                id,
                value,
                mode,
                ttl_ms,
                keep_ttl,
                expected_revision,
            })
        },
    )
}

fn handle_delete() -> impl Strategy<Value = Op> {
    (namespace(), store_name(), handle_id(), option::of(number())).prop_map(
        |(namespace, store, id, expected_revision)| {
            Op::HandleDelete(ipb::HandleDelete {
                namespace,
                store,
                id,
                expected_revision,
            })
        },
    )
}

fn state_write() -> impl Strategy<Value = ipb::StateWrite> {
    let fields = (value(), any::<bool>(), number(), any::<bool>(), option::of(number()));
    (namespace(), state_key(), fields).prop_map(
        |(namespace, key, (value, json, ttl_ms, keep_ttl, expected_revision))| ipb::StateWrite {
            namespace,
            key,
            value,
            json,
            ttl_ms,
            keep_ttl,
            expected_revision,
        },
    )
}

fn state_ops() -> impl Strategy<Value = Op> {
    prop_oneof![
        state_write().prop_map(Op::StateWrite),
        (namespace(), state_key(), option::of(number())).prop_map(|(namespace, key, expected_revision)| {
            Op::StateDelete(ipb::StateDelete {
                namespace,
                key,
                expected_revision,
            })
        }),
        (namespace(), state_key(), prop_oneof![0u32..4, any::<u32>()]).prop_map(|(namespace, prefix, limit)| {
            Op::StateDeletePrefix(ipb::StateDeletePrefix {
                namespace,
                prefix,
                limit,
            })
        }),
        vec(state_write(), 0..4).prop_map(|writes| Op::StateBatch(ipb::StateBatch { writes })),
    ]
}

/// Expiries of entries that exist (their real keys) or of any bytes.
fn expire() -> impl Strategy<Value = Op> {
    let key = prop_oneof![
        (namespace(), store_name(), handle_id()).prop_map(|(n, s, i)| keys::handle_key(&n, &s, &i)),
        (namespace(), state_key()).prop_map(|(n, k)| keys::state_key(&n, &k)),
        vec(any::<u8>(), 0..40),
    ];
    let items = vec(
        (key, number()).prop_map(|(key, expires_at_ms)| ipb::ExpireItem { key, expires_at_ms }),
        0..4,
    );
    (items, number()).prop_map(|(items, dedup_before_ms)| Op::Expire(ipb::Expire { items, dedup_before_ms }))
}

fn keyring() -> impl Strategy<Value = Op> {
    prop_oneof![
        (namespace(), vec(any::<u8>(), 0..48), any::<bool>()).prop_map(|(namespace, secret, create_only)| {
            Op::KeyringRotate(ipb::KeyringRotate {
                namespace,
                secret,
                create_only,
            })
        }),
        (namespace(), prop_oneof![Just("1".to_string()), ".{0,12}"])
            .prop_map(|(namespace, key_id)| Op::KeyringRetire(ipb::KeyringRetire { namespace, key_id })),
    ]
}

fn auth_change() -> impl Strategy<Value = Op> {
    use ipb::auth_change::Change;
    let name = || prop_oneof![Just("alice".to_string()), Just("root".to_string()), ".{0,8}"];
    let permission =
        (namespace(), 0..4i32, store_name(), state_key()).prop_map(|(namespace, access, store, key_prefix)| {
            pb::Permission {
                namespace,
                access,
                store,
                key_prefix,
            }
        });
    let change = prop_oneof![
        any::<bool>().prop_map(Change::SetEnabled),
        (name(), vec(name(), 0..3), ".{0,8}", vec(any::<u8>(), 0..40)).prop_map(
            |(name, roles, token_id, token_digest)| {
                Change::PutUser(ipb::AuthUser {
                    name,
                    roles,
                    token_id,
                    token_digest,
                })
            }
        ),
        name().prop_map(Change::RemoveUser),
        (name(), vec(permission, 0..3)).prop_map(|(name, permissions)| Change::PutRole(pb::Role { name, permissions })),
        name().prop_map(Change::RemoveRole),
        (namespace(), number(), number(), vec(store_name(), 0..2)).prop_map(
            |(name, max_entries, max_bytes, owner_bound_stores)| {
                Change::SetNamespace(pb::NamespacePolicy {
                    name,
                    max_entries,
                    max_bytes,
                    owner_bound_stores,
                })
            }
        ),
    ];
    option::of(change).prop_map(|change| Op::AuthChange(ipb::AuthChange { change }))
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => handle_write(),
        3 => handle_delete(),
        4 => state_ops(),
        2 => expire(),
        1 => keyring(),
        1 => auth_change(),
        1 => ".{0,30}".prop_map(|id| Op::ClusterIdentity(ipb::ClusterIdentity { id })),
    ]
}

fn command() -> impl Strategy<Value = ipb::Command> {
    let write_id = option::of(
        (0u64..3, number(), number()).prop_map(|(client_id, seq, first_incomplete_seq)| pb::WriteId {
            client_id,
            seq,
            first_incomplete_seq,
        }),
    );
    let subject = prop_oneof![Just(String::new()), Just("alice".to_string()), ".{0,8}"];
    (option::of(op()), write_id, option::of(number()), subject, any::<bool>()).prop_map(
        |(op, write_id, auth_revision, subject, all_owners)| ipb::Command {
            write_id,
            op,
            auth_revision,
            subject,
            all_owners,
        },
    )
}

/// Entries as a leader proposes them: stamps mostly moving forward,
/// sometimes anything; now and then an entry with no proposal (a blank or
/// a membership change).
fn entries() -> impl Strategy<Value = Vec<Option<ipb::Proposal>>> {
    let stamp = prop_oneof![8 => 1_000u64..1_000_000, 1 => any::<u64>()];
    let proposal = (stamp, vec(command(), 1..4)).prop_map(|(stamp_ms, commands)| ipb::Proposal { stamp_ms, commands });
    vec(option::weighted(0.9, proposal), 1..12)
}

#[test]
fn commands_built_field_by_field_apply_alike_on_two_replicas() {
    let (a, b) = (Store::new(), Store::new());
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let (done, refused) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
    runner
        .run(&entries(), |entries| {
            for proposal in entries {
                let answers = (a.apply(proposal.clone()), b.apply(proposal));
                for r in answers.0.iter().flatten().flat_map(|p| &p.results) {
                    let ok = r.code == ipb::ResultCode::ResultOk as i32;
                    let count = if ok { &done } else { &refused };
                    count.set(count.get() + 1);
                }
                prop_assert_eq!(answers.0, answers.1, "two replicas answered one entry differently");
            }
            prop_assert!(a.records() == b.records(), "two replicas hold different records");
            Ok(())
        })
        .expect("every command applies alike");
    // Not a vacuous run: the commands meet, some done, some refused.
    assert!(
        done.get() > 50 && refused.get() > 50,
        "{} done, {} refused",
        done.get(),
        refused.get()
    );
}
