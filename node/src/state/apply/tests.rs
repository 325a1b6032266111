//! Applying: exactly-once answers, their floor and their bounds, alike
//! however entries are batched.

use super::*;
use crate::state::answers::MAX_CLIENT_ANSWERS;
use crate::storage::db::CF_ANSWERS;

/// Client `client`'s write `seq` creating handle `id{seq}`.
fn write_as(client_id: u64, seq: u64, first_incomplete_seq: u64) -> ipb::Command {
    ipb::Command {
        write_id: Some(pb::WriteId {
            client_id,
            seq,
            first_incomplete_seq,
        }),
        op: Some(Op::HandleWrite(ipb::HandleWrite {
            namespace: "ns".into(),
            store: "s".into(),
            id: format!("c{client_id}-id{seq}"),
            value: b"1".to_vec(),
            mode: ipb::WriteMode::Create as i32,
            ..Default::default()
        })),
        ..Default::default()
    }
}

fn write(seq: u64, first_incomplete_seq: u64) -> ipb::Command {
    write_as(7, seq, first_incomplete_seq)
}

fn expire(dedup_before_ms: u64) -> ipb::Command {
    ipb::Command {
        write_id: None,
        op: Some(Op::Expire(ipb::Expire {
            items: Vec::new(),
            dedup_before_ms,
        })),
        ..Default::default()
    }
}

/// Per client: (client id, floor, remembered seqs).
type Remembered = Vec<(u64, u64, Vec<u64>)>;

struct Run {
    _dir: tempfile::TempDir,
    db: std::sync::Arc<DB>,
    remembered: Remembered,
    results: Vec<ipb::CommandResult>,
}

/// Applies one command per entry (entry i stamped 1000 + i),
/// `per_batch` entries per apply call; without `keep_hints` the hints
/// are dropped before every batch (as after a restart).
fn run_with(cmds: &[ipb::Command], per_batch: usize, limits: StateLimits, keep_hints: bool) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = crate::storage::db::open(dir.path(), crate::storage::db::DbConfig::default()).expect("db");
    let hints = Mutex::new(AnswerHints::default());
    let mut auth = Arc::new(AuthView::default());
    let mut index = 0;
    let mut results = Vec::new();
    for chunk in cmds.chunks(per_batch) {
        if !keep_hints {
            *hints.lock().unwrap() = AnswerHints::default();
        }
        let entries: Vec<ApplyEntry> = chunk
            .iter()
            .map(|c| {
                index += 1;
                ApplyEntry {
                    index,
                    proposal: Some(ipb::Proposal {
                        stamp_ms: 1_000 + index,
                        commands: vec![c.clone()],
                    }),
                }
            })
            .collect();
        let last_log_id = ipb::LogId { leader_id: None, index };
        let out = apply(
            &db,
            &limits,
            &hints,
            auth.clone(),
            ApplyBatch {
                entries,
                last_log_id,
                membership: None,
            },
        )
        .expect("apply");
        if let Some(changed) = out.auth {
            auth = Arc::new(AuthView::new(changed));
        }
        results.extend(out.results.into_iter().flat_map(|p| p.expect("a proposal").results));
    }
    let remembered: Remembered = db
        .iterator_cf(crate::storage::db::cf(&db, CF_ANSWERS), IteratorMode::Start)
        .map(|item| {
            let (k, v) = item.expect("read");
            let rec: ipb::ClientAnswers = decode(&v, "answers").expect("decodes");
            let client = u64::from_be_bytes(k.as_ref().try_into().expect("8-byte key"));
            (client, rec.floor, rec.answers.iter().map(|a| a.seq).collect())
        })
        .collect();
    let count = decode_opt_u64(
        db.get_cf(crate::storage::db::cf(&db, CF_SM_META), meta::ANSWER_COUNT)
            .expect("read"),
        "count",
    )
    .expect("a u64");
    let total: usize = remembered.iter().map(|(_, _, seqs)| seqs.len()).sum();
    assert_eq!(count, total as u64, "the answer count matches the table");
    let ages: Vec<(u64, u64)> = db
        .iterator_cf(
            crate::storage::db::cf(&db, crate::storage::db::CF_ANSWERS_AGE),
            IteratorMode::Start,
        )
        .map(|item| keys::split_answer_age_key(&item.expect("read").0).expect("age key"))
        .collect();
    assert_eq!(ages.len(), remembered.len(), "one age key per client record: {ages:?}");
    Run {
        _dir: dir,
        db,
        remembered,
        results,
    }
}

fn run(cmds: &[ipb::Command], per_batch: usize) -> Run {
    run_with(cmds, per_batch, StateLimits::default(), true)
}

/// Runs `cmds` at each of `batchings` entries per apply call, keeping
/// and dropping the hints; asserts every run remembered the same answers
/// and answered alike, and returns what was remembered.
fn remembered_alike(cmds: &[ipb::Command], batchings: [usize; 4], limits: StateLimits) -> Remembered {
    let mut runs = Vec::new();
    for per_batch in batchings {
        for keep_hints in [true, false] {
            runs.push(run_with(cmds, per_batch, limits.clone(), keep_hints));
        }
    }
    for r in &runs[1..] {
        assert_eq!(
            r.remembered, runs[0].remembered,
            "batching or the hints changed what was kept"
        );
        assert_eq!(r.results, runs[0].results, "batching or the hints changed an answer");
    }
    runs.swap_remove(0).remembered
}

fn has_handle(db: &DB, id: &str) -> bool {
    db.get_cf(crate::storage::db::cf(db, CF_KV), keys::handle_key("ns", "s", id))
        .expect("read")
        .is_some()
}

#[test]
fn answers_below_the_first_incomplete_write_are_forgotten() {
    let cmds: Vec<_> = (1..=600).map(|s| write(s, s)).collect();
    assert_eq!(run(&cmds, 1).remembered, vec![(7, 600, vec![600])]);
    // A client with writes in flight keeps their answers.
    let cmds: Vec<_> = (1..=20).map(|s| write(s, s.saturating_sub(4).max(1))).collect();
    assert_eq!(run(&cmds, 3).remembered, vec![(7, 16, (16..=20).collect())]);
}

#[test]
fn a_retry_gets_the_first_answer_even_within_one_batch() {
    // Write 2 creates a handle; applied again it would fail with
    // ALREADY_EXISTS. Its retry comes two entries later.
    let cmds = vec![write(1, 1), write(2, 1), write(3, 1), write(2, 1)];
    for per_batch in [1, 4] {
        let r = run(&cmds, per_batch);
        assert_eq!(r.results[3], r.results[1], "per_batch {per_batch}");
        assert_eq!(r.results[3].code, ipb::ResultCode::ResultOk as i32);
        assert_eq!(r.results[3].revision, 2, "the revision of the first application");
    }
}

#[test]
fn a_late_copy_below_the_floor_is_refused_and_changes_nothing() {
    // Writes 1..=10, each reporting itself as the first incomplete one;
    // then a copy of write 3 arrives late, after the client moved on.
    let mut cmds: Vec<_> = (1..=10).map(|s| write(s, s)).collect();
    let mut late = write(3, 3);
    if let Some(Op::HandleWrite(w)) = &mut late.op {
        w.id = "late".into();
    }
    cmds.push(late);
    cmds.push(write(11, 11));
    for per_batch in [1, 5, cmds.len()] {
        let r = run(&cmds, per_batch);
        assert_eq!(
            r.results[10].code,
            ipb::ResultCode::ResultStaleWrite as i32,
            "{per_batch}"
        );
        assert!(
            r.results[10].message.contains("not applied again"),
            "{}",
            r.results[10].message
        );
        assert!(!has_handle(&r.db, "late"), "the stale copy wrote nothing");
        assert_eq!(r.remembered, vec![(7, 11, vec![11])]);
    }
}

#[test]
fn what_is_kept_is_the_same_however_entries_are_batched() {
    // Entry i is stamped 1000 + i. Clients 7 and 8 interleave (client 7
    // at odd entries 2s-1, client 8 at even entries 2s): client 7 holds
    // write 1 in flight, client 8 prunes as it goes.
    let mut cmds = Vec::new();
    for s in 1..=30 {
        cmds.push(write(s, 1));
        cmds.push(write_as(8, s, s.saturating_sub(2).max(1)));
    }
    cmds.push(write_as(8, 29, 27)); // entry 61: a retry, answered from the table
    cmds.push(write_as(8, 10, 8)); // entry 62: a late copy below floor 28, refused
    cmds.push(write(31, 20)); // entry 63: client 7 jumps, floor 20: keeps 20..=31
    cmds.push(expire(1_000 + 45)); // entry 64: nobody idle, 15 answers; horizon 1045
    cmds.push(write(32, 20)); // entry 65: answers stamped < 1045 (seq < 23) go
    cmds.extend((1..=10).map(|s| write_as(9, s, 1))); // entries 66..=75: 23 answers
    cmds.push(expire(0)); // entry 76: over the limit of 20: client 8 (last 1060) goes
    cmds.extend((33..=41).map(|s| write(s, 33))); // entries 77..=85: floor 33
    let limits = StateLimits {
        dedup_max_entries: 20,
        ..Default::default()
    };
    let kept = remembered_alike(&cmds, [1, 3, 64, cmds.len()], limits.clone());
    assert_eq!(kept, vec![(7, 33, (33..=41).collect()), (9, 1, (1..=10).collect())]);
    let r = run_with(&cmds, 7, limits, true);
    assert_eq!(r.results[60], r.results[57], "the retry got write 29's answer");
    assert_eq!(r.results[61].code, ipb::ResultCode::ResultStaleWrite as i32);
}

#[test]
fn ageing_forgets_idle_clients_and_old_answers() {
    // Entry i is stamped 1000 + i. Client 7 keeps every answer (write 1
    // in flight): writes 1..=100 are entries 1..=100.
    let mut cmds: Vec<_> = (1..=100).map(|s| write(s, 1)).collect();
    cmds.push(write_as(8, 1, 1)); // entry 101
    cmds.push(expire(1_000 + 50)); // entry 102: nobody idle yet; horizon 1050
    cmds.push(write(101, 1)); // entry 103: client 7's answers before 1050 go
    let kept = remembered_alike(&cmds, [1, 3, 64, cmds.len()], StateLimits::default());
    assert_eq!(kept, vec![(7, 1, (50..=101).collect()), (8, 1, vec![1])]);
    cmds.push(expire(1_000 + 102)); // entry 104: client 8 (last at 1101) idle
    let kept = remembered_alike(&cmds, [1, 3, 64, cmds.len()], StateLimits::default());
    assert_eq!(kept, vec![(7, 1, (50..=101).collect())]);
}

#[test]
fn a_client_keeps_at_most_its_newest_answers() {
    let n = MAX_CLIENT_ANSWERS as u64 + 76;
    let cmds: Vec<_> = (1..=n).map(|s| write(s, 1)).collect();
    assert_eq!(run(&cmds, 64).remembered, vec![(7, 1, (77..=n).collect())]);
}

fn auth_change(change: ipb::auth_change::Change, at: u64) -> ipb::Command {
    ipb::Command {
        write_id: None,
        op: Some(Op::AuthChange(ipb::AuthChange { change: Some(change) })),
        auth_revision: Some(at),
        ..Default::default()
    }
}

fn at_auth(mut cmd: ipb::Command, at: u64) -> ipb::Command {
    cmd.auth_revision = Some(at);
    cmd
}

/// A command authorized before the latest auth change is refused while
/// auth is on, and not remembered: the same write id, authorized again,
/// then applies. Auth changes always need the current revision.
#[test]
fn a_decision_made_at_an_outdated_auth_revision_is_refused_and_not_remembered() {
    use ipb::auth_change::Change;
    let root = ipb::AuthUser {
        name: "root".into(),
        roles: vec!["root".into()],
        ..Default::default()
    };
    let cmds = vec![
        // Auth off: a write at any revision applies.
        at_auth(write(1, 1), 0),
        // Index 2: root; index 3: enable (both at the revision they read).
        auth_change(Change::PutUser(root), 0),
        auth_change(Change::SetEnabled(true), 2),
        // Index 4: made at revision 2 (before the enable): refused.
        at_auth(write(2, 2), 2),
        // Index 5: the same write id at revision 3: applies.
        at_auth(write(2, 2), 3),
        // Index 6: an auth change read at revision 2: refused.
        auth_change(Change::SetEnabled(false), 2),
        // Internal commands are never checked.
        expire(0),
    ];
    for per_batch in [1, 3, 7] {
        let r = run(&cmds, per_batch);
        let codes: Vec<i32> = r.results.iter().map(|x| x.code).collect();
        let (ok, stale) = (
            ipb::ResultCode::ResultOk as i32,
            ipb::ResultCode::ResultAuthStale as i32,
        );
        assert_eq!(codes, vec![ok, ok, ok, stale, ok, stale, ok], "{per_batch} per batch");
        assert_eq!(
            r.results[3].current_revision, 3,
            "the refusal names the current revision"
        );
        assert!(has_handle(&r.db, "c7-id2"), "the retried write applied");
        let auth = crate::state::auth::load(&r.db).expect("auth state");
        assert!(auth.enabled, "the outdated disable changed nothing");
        assert_eq!(auth.revision, 3);
    }
}

fn state_write(key: &str, ttl_ms: u64) -> ipb::Command {
    ipb::Command {
        op: Some(Op::StateWrite(ipb::StateWrite {
            namespace: "ns".into(),
            key: key.into(),
            value: b"1".to_vec(),
            ttl_ms,
            ..Default::default()
        })),
        ..Default::default()
    }
}

fn history_of(db: &DB) -> Vec<(u64, EventKind, Vec<u8>)> {
    match history::read(db, history::floor(db).expect("floor"), u64::MAX, usize::MAX).expect("read") {
        history::Page::Events { events, .. } => events.into_iter().map(|e| (e.revision, e.kind, e.key)).collect(),
        history::Page::Compacted { floor } => panic!("compacted at {floor}"),
    }
}

#[test]
fn the_history_records_puts_deletes_and_expiries_of_data_only() {
    let key = keys::state_key("ns", "k");
    let ring = ipb::Command {
        op: Some(Op::KeyringRotate(ipb::KeyringRotate {
            namespace: "ns".into(),
            secret: vec![7; 32],
            create_only: false,
        })),
        ..Default::default()
    };
    let delete = ipb::Command {
        op: Some(Op::StateDelete(ipb::StateDelete {
            namespace: "ns".into(),
            key: "k".into(),
            expected_revision: None,
        })),
        ..Default::default()
    };
    // Entry 1 writes k for 1 ms; by entry 3 (stamped 2 ms later) it has
    // expired, so the write there first records the expiry.
    let cmds = [state_write("k", 1), ring, state_write("k", 0), delete];
    let r = run(&cmds, 2);
    assert_eq!(
        history_of(&r.db),
        vec![
            (1, EventKind::Put, key.clone()),
            (3, EventKind::Expire, key.clone()),
            (3, EventKind::Put, key.clone()),
            (4, EventKind::Delete, key),
        ]
    );
}

#[test]
fn the_history_keeps_the_revisions_it_is_told_and_reports_older_ones_compacted() {
    let cmds: Vec<ipb::Command> = (0..40).map(|i| state_write(&format!("k{i}"), 0)).collect();
    let limits = StateLimits {
        history_revisions: 8,
        ..Default::default()
    };
    let r = run_with(&cmds, 3, limits, true);
    let kept = history_of(&r.db);
    let floor = history::floor(&r.db).expect("floor");
    assert!(
        (31..=33).contains(&floor),
        "at least 8 of 40 kept, in steps: floor {floor}"
    );
    assert_eq!(kept.first().map(|e| e.0), Some(floor));
    assert_eq!(kept.last().map(|e| e.0), Some(40));
    assert!(matches!(
        history::read(&r.db, floor - 1, 40, usize::MAX).expect("read"),
        history::Page::Compacted { .. }
    ));
}
