//! Exactly-once answers: what the state machine remembers so that a retried
//! write is answered with its first answer instead of being applied again.
//!
//! One record per client (`CF_ANSWERS`: client id -> `ClientAnswers`) holds
//! the answers of that client's writes that may still be retried, and a
//! floor: every write numbered below it was reported complete by the client
//! (answered, or abandoned at its deadline), so a copy of one that arrives
//! late is refused, not applied. An age index (`CF_ANSWERS_AGE`: stamp of
//! the client's last answer ++ client id) finds the clients to forget.
//!
//! Why one record per client rather than one key per answer: a client with
//! several writes in flight lands many of them in one Raft entry, and the
//! record is read and written once per client per applied batch. One key per
//! answer cost every write, on every node, a lookup of a key that is not
//! there, two puts (answer and age index), a scan for answers to prune and
//! two deletes: more memtable work than the write itself.
//!
//! What is forgotten, and when, depends only on the replicated commands (the
//! leader's clock stamped in each entry, the client's reported first
//! incomplete write, the sweeper's `Expire` commands), never on how a node
//! groups entries into batches, so every replica keeps the same answers:
//!
//! - a write reporting `first_incomplete_seq = f` forgets its client's
//!   answers below `min(f, seq)` and raises the floor there;
//! - an `Expire` with `dedup_before_ms = t` forgets every client whose last
//!   answer is older than `t`, and the least recently active clients while
//!   more than the bound are remembered; it also sets the horizon: a
//!   client's answers older than `t` are dropped when its record is next
//!   written;
//! - a client keeps at most `MAX_CLIENT_ANSWERS`; past it the lowest go.
//!
//! Answers that age out or exceed a bound do not raise the floor (the seqs
//! below them may never have arrived): a retry after that is applied again,
//! which is why the window is long (10 minutes by default).

use std::collections::{HashMap, HashSet};

use handlestore_proto::internal::v1 as ipb;
use handlestore_proto::v1 as pb;
use prost::Message;
use rocksdb::{DB, IteratorMode, ReadOptions, WriteBatch};

use super::{Result, decode, decode_opt_u64, keys, meta};
use crate::storage::db::{self, CF_ANSWERS, CF_ANSWERS_AGE, CF_SM_META};

/// Most answers remembered per client. A client reporting its first
/// incomplete write holds about as many as it has writes in flight.
pub const MAX_CLIENT_ANSWERS: usize = 1024;
/// Most clients one `Expire` command forgets, so a single entry never turns
/// into an unbounded amount of work.
const MAX_EVICTIONS_PER_COMMAND: usize = 10_000;

/// What the state machine knows of a write id.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// Never applied: apply it.
    New,
    /// Applied before; this was its answer.
    Answered(ipb::CommandResult),
    /// Below the client's floor: answered or abandoned before, refused.
    Stale { floor: u64 },
}

/// What this node knows about its age index that saves reading tombstones
/// again. A pure hint: the clients forgotten are the same with or without
/// it. Dropped when the state is replaced or an apply fails.
#[derive(Debug, Default)]
pub struct AnswerHints {
    /// No age key in the database is stamped below this.
    age_floor: u64,
}

/// One client's record as this batch sees it.
struct Loaded {
    /// None: no record (never remembered, or forgotten in this batch).
    rec: Option<ipb::ClientAnswers>,
    /// The stamp of the record as stored, so its age key can be replaced.
    stored_stamp: Option<u64>,
    dirty: bool,
}

/// The answers as one apply batch sees them: the database, overlaid with
/// the records read and changed in the batch.
pub struct Answers<'a> {
    db: &'a DB,
    clients: HashMap<u64, Loaded>,
    /// Answers remembered over all clients.
    count: u64,
    /// Answers stamped below this are dropped when their record is written.
    horizon: u64,
    hints: AnswerHints,
}

impl<'a> Answers<'a> {
    pub fn new(db: &'a DB, hints: AnswerHints) -> Result<Self> {
        let meta_cf = db::cf(db, CF_SM_META);
        let read = |k: &[u8]| -> Result<u64> { decode_opt_u64(db.get_cf(meta_cf, k)?, "answer meta") };
        Ok(Self {
            db,
            clients: HashMap::new(),
            count: read(meta::ANSWER_COUNT)?,
            horizon: read(meta::ANSWER_HORIZON)?,
            hints,
        })
    }

    fn load(&mut self, client_id: u64) -> Result<&mut Loaded> {
        if !self.clients.contains_key(&client_id) {
            let rec: Option<ipb::ClientAnswers> = self
                .db
                .get_pinned_cf(db::cf(self.db, CF_ANSWERS), client_id.to_be_bytes())?
                .map(|raw| decode(&raw, "answers"))
                .transpose()?;
            let stored_stamp = rec.as_ref().map(|r| r.stamp_ms);
            self.clients.insert(
                client_id,
                Loaded {
                    rec,
                    stored_stamp,
                    dirty: false,
                },
            );
        }
        Ok(self.clients.get_mut(&client_id).expect("inserted above"))
    }

    /// Whether `w` was applied before, and with what answer.
    pub fn seen(&mut self, w: &pb::WriteId) -> Result<Seen> {
        let Some(rec) = &self.load(w.client_id)?.rec else {
            return Ok(Seen::New);
        };
        if w.seq < rec.floor {
            return Ok(Seen::Stale { floor: rec.floor });
        }
        Ok(match rec.answers.binary_search_by_key(&w.seq, |a| a.seq) {
            Ok(i) => Seen::Answered(rec.answers[i].result.clone().unwrap_or_default()),
            Err(_) => Seen::New,
        })
    }

    /// Remembers the answer to `w` (which `seen` called new), stamped
    /// `clock`, and forgets what the client no longer needs.
    pub fn remember(&mut self, w: &pb::WriteId, result: &ipb::CommandResult, clock: u64) -> Result<()> {
        let horizon = self.horizon;
        let loaded = self.load(w.client_id)?;
        loaded.dirty = true;
        let rec = loaded.rec.get_or_insert_with(Default::default);
        let before = rec.answers.len() as u64;
        let answer = ipb::Answer {
            seq: w.seq,
            stamp_ms: clock,
            result: Some(result.clone()),
        };
        match rec.answers.binary_search_by_key(&w.seq, |a| a.seq) {
            Ok(i) => rec.answers[i] = answer,
            Err(i) => rec.answers.insert(i, answer),
        }
        rec.stamp_ms = rec.stamp_ms.max(clock);
        if w.first_incomplete_seq > 0 {
            let below = w.first_incomplete_seq.min(w.seq);
            rec.floor = rec.floor.max(below);
        }
        let floor = rec.floor;
        rec.answers.retain(|a| a.seq >= floor && a.stamp_ms >= horizon);
        let over = rec.answers.len().saturating_sub(MAX_CLIENT_ANSWERS);
        rec.answers.drain(..over);
        let after = rec.answers.len() as u64;
        self.count = (self.count + after).saturating_sub(before);
        Ok(())
    }

    /// Forgets every client whose last answer is stamped before
    /// `before_ms`, then the least recently active while more than
    /// `max_answers` are remembered (at most `MAX_EVICTIONS_PER_COMMAND`
    /// clients), and makes `before_ms` the horizon for older answers of the
    /// clients that remain.
    ///
    /// Candidates come oldest first from the age index merged with the
    /// records this batch read or changed (whose stored age keys are stale):
    /// the replicated state as of this command, however this node batched
    /// entries. The scan starts at the hinted floor, past the tombstones of
    /// clients forgotten before.
    pub fn age_out(&mut self, before_ms: u64, max_answers: u64) -> Result<()> {
        self.horizon = self.horizon.max(before_ms);
        let mut opts = ReadOptions::default();
        opts.set_iterate_lower_bound(keys::answer_age_key(self.hints.age_floor, 0).to_vec());
        let mut stored = self
            .db
            .iterator_cf_opt(db::cf(self.db, CF_ANSWERS_AGE), opts, IteratorMode::Start);
        let mut in_batch: Vec<(u64, u64)> = self
            .clients
            .iter()
            .filter_map(|(&c, l)| l.rec.as_ref().map(|r| (r.stamp_ms, c)))
            .collect();
        in_batch.sort_unstable();
        let mut in_batch = in_batch.into_iter().peekable();
        let overlaid: HashSet<u64> = self.clients.keys().copied().collect();
        let mut next_stored = move || -> Result<Option<(u64, u64)>> {
            for item in stored.by_ref() {
                let (k, _) = item?;
                match keys::split_answer_age_key(&k) {
                    // This batch's view of an overlaid client decides.
                    Some((_, c)) if overlaid.contains(&c) => continue,
                    Some(parts) => return Ok(Some(parts)),
                    None => continue,
                }
            }
            Ok(None)
        };

        let mut victims = Vec::new();
        let mut db_head = next_stored()?;
        let stopped_at = loop {
            let cand = match (db_head, in_batch.peek().copied()) {
                (None, None) => break None,
                (Some(d), Some(b)) if b < d => {
                    in_batch.next();
                    b
                }
                (Some(d), _) => {
                    db_head = next_stored()?;
                    d
                }
                (None, Some(b)) => {
                    in_batch.next();
                    b
                }
            };
            let (stamp, client) = cand;
            if victims.len() >= MAX_EVICTIONS_PER_COMMAND || (stamp >= before_ms && self.count <= max_answers) {
                break Some(stamp);
            }
            self.forget_client(client)?;
            victims.push(stamp);
        };
        // Nothing older than the stopping point is left once this batch is
        // written; with nothing left, the newest victim bounds what remains
        // (later answers carry the clock, which never goes back).
        let floor = stopped_at.or(victims.last().copied()).unwrap_or(self.hints.age_floor);
        self.hints.age_floor = self.hints.age_floor.max(floor);
        Ok(())
    }

    fn forget_client(&mut self, client_id: u64) -> Result<()> {
        let loaded = self.load(client_id)?;
        let n = loaded.rec.take().map_or(0, |r| r.answers.len() as u64);
        loaded.dirty = true;
        self.count = self.count.saturating_sub(n);
        Ok(())
    }

    /// Adds this batch's changes to `wb`; returns the hints to keep.
    pub fn commit(self, wb: &mut WriteBatch) -> AnswerHints {
        let (answers_cf, age_cf) = (db::cf(self.db, CF_ANSWERS), db::cf(self.db, CF_ANSWERS_AGE));
        for (client, l) in self.clients {
            if !l.dirty {
                continue;
            }
            let stamp = l.rec.as_ref().map(|r| r.stamp_ms);
            if let Some(old) = l.stored_stamp
                && stamp != Some(old)
            {
                wb.delete_cf(age_cf, keys::answer_age_key(old, client));
            }
            match &l.rec {
                Some(rec) => {
                    wb.put_cf(answers_cf, client.to_be_bytes(), rec.encode_to_vec());
                    if l.stored_stamp != stamp {
                        wb.put_cf(age_cf, keys::answer_age_key(rec.stamp_ms, client), []);
                    }
                }
                None => wb.delete_cf(answers_cf, client.to_be_bytes()),
            }
        }
        let meta_cf = db::cf(self.db, CF_SM_META);
        wb.put_cf(meta_cf, meta::ANSWER_COUNT, self.count.to_be_bytes());
        wb.put_cf(meta_cf, meta::ANSWER_HORIZON, self.horizon.to_be_bytes());
        self.hints
    }
}
