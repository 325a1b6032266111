//! Fuzz targets: every decoder that takes bytes from outside the process
//! (another node, the disk, a backup an operator points at, a client),
//! driven by proptest on the stable toolchain. Each target is fed
//! arbitrary bytes and a valid encoding damaged (cut short, bytes
//! flipped, bytes inserted), and must answer a value or an error: never
//! panic, never hang, never allocate past its own limit.
//!
//! The test command runs each for `CASES` cases (the unit tier); for
//! longer, by hand: `PROPTEST_CASES=100000 tests/tier.sh unit fuzz::`. A
//! failure proptest finds is kept as a test of its own below, with its
//! bytes.

use std::sync::Arc;

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::testkit::damaged;
use openraft::raft::{AppendEntriesRequest, VoteRequest};
use openraft::{EntryPayload, LeaderId};
use proptest::prelude::*;
use prost::Message;

use crate::raft::codec;
use crate::raft::payload::Payload;
use crate::raft::peer_wire::codec::{frame, read_frame};
use crate::raft::{Entry, LogId, Vote};
use crate::state::{ApplyBatch, ApplyEntry, StateStore};

mod commands;

/// Cases per target in the test command (proptest's `PROPTEST_CASES`
/// overrides it).
const CASES: u32 = 256;

/// The largest frame the wire target reads (the node's is 1 GiB).
const MAX_FRAME: usize = 1 << 20;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok());
    ProptestConfig {
        cases: cases.unwrap_or(CASES),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn proposal() -> ipb::Proposal {
    ipb::Proposal {
        stamp_ms: 1_000,
        commands: vec![ipb::Command {
            op: Some(ipb::command::Op::HandleWrite(ipb::HandleWrite {
                namespace: "ns".into(),
                store: "cart".into(),
                id: "AAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
                value: b"{\"items\":[]}".to_vec(),
                mode: ipb::WriteMode::Create as i32,
                ..Default::default()
            })),
            ..Default::default()
        }],
    }
}

fn entry(index: u64) -> Entry {
    Entry {
        log_id: LogId::new(LeaderId::new(2, 1), index),
        payload: EntryPayload::Normal(Payload::new(proposal())),
    }
}

/// A frame of the Raft wire carrying an AppendEntries with two entries.
fn wire_seed() -> Vec<u8> {
    let req = AppendEntriesRequest {
        vote: Vote::new_committed(2, 1),
        prev_log_id: Some(LogId::new(LeaderId::new(2, 1), 6)),
        entries: vec![entry(7), entry(8)],
        leader_commit: Some(LogId::new(LeaderId::new(2, 1), 6)),
    };
    frame(1, &codec::append_request_to_pb(&req).encode_to_vec()).expect("a frame")
}

/// Reads frames from `bytes` until it ends or one is refused, decoding
/// each as the wire's server does.
fn read_wire(rt: &tokio::runtime::Runtime, bytes: &[u8]) {
    let mut r = bytes;
    while let Ok(Some((_, body))) = rt.block_on(read_frame(&mut r, MAX_FRAME)) {
        assert!(body.len() <= MAX_FRAME, "a frame past the limit was read");
        if let Ok(req) = ipb::AppendEntriesRequest::decode(body.as_slice()) {
            let _ = codec::append_request_from_pb(req);
        }
    }
}

/// A store with what a cluster's first writes leave, for applying and
/// snapshotting.
struct Store {
    _dir: tempfile::TempDir,
    state: Arc<StateStore>,
    snapshots: crate::state::snapshot::SnapshotDir,
    next_index: std::cell::Cell<u64>,
}

impl Store {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::storage::db::open(&dir.path().join("db"), Default::default()).expect("db");
        let state = StateStore::open(db, Default::default()).expect("state");
        let snapshots = crate::state::snapshot::SnapshotDir::new(dir.path().join("snaps")).expect("snaps");
        let s = Self {
            _dir: dir,
            state,
            snapshots,
            next_index: std::cell::Cell::new(1),
        };
        let _ = s.apply(Some(proposal()));
        s
    }

    /// Applies one entry, and gives its answers; a command the state
    /// machine refuses is a result, not an error.
    fn apply(&self, proposal: Option<ipb::Proposal>) -> Vec<Option<ipb::ProposalResult>> {
        let index = self.next_index.get();
        self.next_index.set(index + 1);
        let batch = ApplyBatch {
            entries: vec![ApplyEntry { index, proposal }],
            last_log_id: ipb::LogId { leader_id: None, index },
            membership: None,
        };
        self.state.apply(batch).expect("applying a decoded command")
    }

    /// Every record of the state, as a snapshot holds them.
    fn records(&self) -> Vec<(usize, Vec<u8>, Vec<u8>)> {
        let mut records = Vec::new();
        crate::state::snapshot::for_each_record_in(&mut self.snapshot_bytes().as_slice(), |cf, k, v| {
            records.push((cf, k, v));
            Ok(())
        })
        .expect("a snapshot of our own reads back");
        records
    }

    fn snapshot_bytes(&self) -> Vec<u8> {
        let (path, _) = self.snapshots.export(&self.state).expect("export");
        let bytes = std::fs::read(&path).expect("read");
        std::fs::remove_file(path).expect("remove");
        bytes
    }

    fn backup_bytes(&self) -> Vec<u8> {
        let (path, _) = self.snapshots.export(&self.state).expect("export");
        let mut pieces = crate::state::backup::Pieces::open(&path).expect("pieces");
        let mut out = Vec::new();
        while let Some(p) = pieces.next_piece().expect("piece") {
            out.extend_from_slice(&p);
        }
        out
    }
}

proptest! {
    #![proptest_config(config())]

    /// The Raft wire: frames, then AppendEntries inside them.
    #[test]
    fn raft_wire_frames(bytes in damaged(wire_seed())) {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        read_wire(&rt, &bytes);
    }

    /// Log entries as stored, read back from disk.
    #[test]
    fn stored_log_entries(bytes in damaged(codec::entry_to_wire(&entry(3)).encode_to_vec())) {
        let _ = crate::raft::decode_entry(&bytes);
    }

    /// Votes, and snapshot metas as a peer sends them with a snapshot.
    #[test]
    fn votes_and_snapshot_metas(bytes in damaged(codec::vote_request_to_pb(&VoteRequest {
        vote: Vote::new(3, 2),
        last_log_id: Some(LogId::new(LeaderId::new(2, 1), 9)),
    }).encode_to_vec())) {
        if let Ok(v) = ipb::VoteRequest::decode(bytes.as_slice()) {
            let _ = codec::vote_request_from_pb(v);
        }
        if let Ok(m) = ipb::SnapshotMeta::decode(bytes.as_slice()) {
            let _ = codec::snapshot_meta_from_pb(&m);
        }
    }

    /// Page tokens and bearer tokens, from clients.
    #[test]
    fn tokens(s in prop_oneof![any::<String>(), "hs1_[A-Z2-7]{0,20}_[A-Z2-7]{0,60}", "[A-Za-z0-9_-]{0,40}"]) {
        let _ = handlestore_proto::key::parse_page_token(&s);
        let _ = crate::api::auth::token::parse(&s);
    }

    /// Client certificates' DER (their common name names the user).
    #[test]
    fn certificates(bytes in damaged(rcgen_seed())) {
        let der = rustls::pki_types::CertificateDer::from(bytes);
        let _ = crate::tls::names::common_name(&der);
    }
}

/// A real certificate's DER, the seed of the certificate target.
fn rcgen_seed() -> Vec<u8> {
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["node-1".to_string()]).expect("params");
    params.self_signed(&key).expect("cert").der().to_vec()
}

/// A proposal with one command of every kind (their fields mostly
/// defaults): damaged, it is still mostly commands.
fn every_command() -> ipb::Proposal {
    use ipb::command::Op;
    let ops = [
        Op::HandleDelete(ipb::HandleDelete {
            namespace: "ns".into(),
            store: "cart".into(),
            id: "AAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
            ..Default::default()
        }),
        Op::Expire(ipb::Expire::default()),
        Op::StateWrite(ipb::StateWrite {
            namespace: "ns".into(),
            key: "a/b".into(),
            ..Default::default()
        }),
        Op::StateDelete(ipb::StateDelete::default()),
        Op::StateDeletePrefix(ipb::StateDeletePrefix::default()),
        Op::StateBatch(ipb::StateBatch::default()),
        Op::KeyringRotate(ipb::KeyringRotate::default()),
        Op::KeyringRetire(ipb::KeyringRetire::default()),
        Op::AuthChange(ipb::AuthChange::default()),
        Op::ClusterIdentity(ipb::ClusterIdentity::default()),
    ];
    let mut p = proposal();
    p.commands.extend(ops.into_iter().map(|op| ipb::Command {
        op: Some(op),
        ..Default::default()
    }));
    p
}

/// Commands decoded from a log entry, applied to a store: each ends as
/// a result (refused or done), never a panic or a storage error.
#[test]
fn commands_from_the_log_apply_or_are_refused() {
    let store = Store::new();
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let seed = every_command().encode_to_vec();
    runner
        .run(&damaged(seed), |bytes| {
            if let Ok(p) = Payload::decode(bytes::Bytes::from(bytes)) {
                let _ = store.apply(Some(p.into_proposal()));
            }
            Ok(())
        })
        .expect("no failure");
}

/// Snapshot files (received from a leader or left on disk) and backup
/// files (given to `snapshot status` and `restore`): any change to one is
/// refused (bytes after a snapshot's checksum are not read, so not
/// checked).
#[test]
fn snapshots_and_backups_are_checked_or_refused() {
    let store = Store::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("b.hsbak");
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let snapshot = store.snapshot_bytes();
    runner
        .run(&damaged(snapshot.clone()), |bytes| {
            let read = crate::state::snapshot::for_each_record_in(&mut bytes.as_slice(), |_, _, _| Ok(()));
            let changed = !bytes.starts_with(&snapshot);
            proptest::prop_assert!(read.is_err() || !changed, "a damaged snapshot was read whole");
            Ok(())
        })
        .expect("every damaged snapshot refused");
    let backup = store.backup_bytes();
    runner
        .run(&damaged(backup.clone()), |bytes| {
            std::fs::write(&file, &bytes).expect("write");
            let read = crate::state::backup::verify(&file);
            proptest::prop_assert!(read.is_err() || bytes == backup, "a damaged backup was read whole");
            Ok(())
        })
        .expect("every damaged backup refused");
}
