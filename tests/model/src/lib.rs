//! A model, checked exhaustively with [stateright], of the protocol that
//! moves a namespace (a tenant) from one Raft data group, the source S, to
//! another, the target T, under the meta group M.
//!
//! # What is modelled
//!
//! - **M** holds the namespace's route `(group, epoch, phase)`, phase
//!   `Active` or `Moving { to }`; initially `(S, 1, Active)`. It is one
//!   linearizable, durable register: the mover's commits on it are
//!   compare-and-set steps, atomic; clients read it when refreshing.
//! - **S and T** are each a committed log not yet applied plus the
//!   namespace's applied state: its role (`Absent`, `Importing`,
//!   `Serving(epoch)`, `Frozen(epoch)`, `Released { to, epoch }`), its data
//!   (the applied write ids in order, so that a double apply shows) and its
//!   dedup table (the exactly-once table, `(client_id, seq)` in the real
//!   system). A group applies its log in order, whenever: its applied state
//!   may lag its log by any number of entries.
//! - **A write** reaching a group is checked at propose time against the
//!   applied state (a refusal, or the `Write { epoch, wid }` appended) and
//!   checked again at apply time: the namespace must be `Serving` at
//!   exactly the write's epoch; a write id already in the dedup table is
//!   answered Ok without applying again; otherwise it is applied and
//!   answered Ok. A refused write is answered `Moving` (frozen, importing)
//!   or `WrongGroup` (released, absent).
//! - **The client** submits its writes one at a time, each with a fixed
//!   write id, one RPC at a time. On `Moving` or `WrongGroup` it refreshes
//!   its route from M and sends the same write id again; on a timeout it
//!   abandons the RPC (it ignores that attempt's replies from then on) and
//!   sends the same write id to its cached route.
//! - **The network** is a bag of messages: any may be delivered, lost
//!   (bounded), or lost with a leader change of the group it goes to or
//!   comes from (bounded).
//! - **The mover** has volatile progress. Its steps: (1) M commits
//!   `Moving { to: T }`; (2) T appends `Prepare` (role `Importing`); (3) a
//!   snapshot: T appends `Import` of S's applied state; (4) S appends
//!   `Freeze`; (5) once S applied it, the tail: T appends `Import` of S's
//!   state as of the freeze; (6) the decision point: M commits
//!   `(T, 2, Active)`; (7) T appends `Activate(2)`; (8) S appends
//!   `Release { T, 2 }`. Before (6) it may abort: M commits `(S, 1,
//!   Active)` again, S appends `Unfreeze`, T appends `Drop`. It may crash
//!   (bounded) and restart from M's route: moving, it redoes the move from
//!   (2), every step being idempotent (or aborts); at T, it goes on from
//!   (7); back at S, it redoes the abort's clean-up. A proposal to a group
//!   lands at once, or stalls (bounded): the mover gives up on it, to
//!   retry, abort or crash, and the stalled proposal lands at any later
//!   time, a zombie.
//!
//! # What is abstracted
//!
//! - A Raft group is a linearizable log. A proposal is committed as it
//!   reaches the leader: one a leader change would drop is the request
//!   lost. A leader change loses every client message in flight to or
//!   from the group; committed entries survive it.
//! - The snapshot and the deltas after it are `Import` entries carrying
//!   the source's whole namespace state (data and dedup table) as of the
//!   moment the mover read it. Its version is the number of writes in it:
//!   the source's data only grows.
//! - A client's timeout fires only when none of its messages is in flight
//!   (lost, or its write waiting in a log): a request that lands late is
//!   proposed late, and appends nothing an entry waiting in the log would
//!   not.
//! - A stalled mover proposal is never lost: the states where it is still
//!   in flight stand for the runs where it never lands.
//! - One namespace, one move attempt. M's commits are not stalled: they
//!   are compare-and-set on M's revision, not on the route's value (the
//!   abort brings back the value `(S, 1, Active)`, so a late `Begin`
//!   compared on the value alone would succeed again: ABA). This is
//!   assumed, not checked.
//!
//! # Properties
//!
//! Invariants ([`properties`]): **single writer** (at most one group
//! serves the namespace); **no acked write lost** (every acknowledged
//! write id is in the data of the authoritative group: M's route group
//! when the route is active there and that group serves at its epoch,
//! else S, which holds every acknowledged write until T's `Activate`
//! applies, T's copy until then possibly still in its log); **no double
//! apply** (no write id twice in a group's data); **aborted move leaves
//! source serving** (once the mover says it finished an abort, M routes to
//! `(S, 1, Active)` and S applied its log, S serves at epoch 1).
//! Reachability, so that the model cannot pass vacuously: a move completes
//! and T applied an acknowledged write after it; an abort completes; a
//! retried write is answered from the dedup table.
//!
//! # Bounds, state counts, times
//!
//! Measured in release on a 2-core machine with another build running
//! beside it (CPU time of one checker thread; less on an idle machine):
//!
//! | bounds | unique states | exhaustive check |
//! | --- | --- | --- |
//! | [`Bounds::TWO_WRITES`]: 1 client × 2 writes; 1 loss, 1 leader change, 1 mover crash, 1 timeout | 258,798 | 0.7 s |
//! | [`Bounds::STALLED_PROPOSAL`]: 1 client × 1 write; the same faults and 1 stalled proposal | 1,207,052 | 4.7 s |
//!
//! The unit tier checks both exhaustively, and each broken variant until
//! its counterexample (`tests/namespace_move.rs`): the crate's tests take 11 s
//! there, eight tests in parallel. Larger bounds, checked by hand with
//! `tests/explore.rs`, find nothing either: 1 client × 2 writes with a
//! stalled proposal, 4,415,740 states (22 s); 2 clients × 1 write each
//! with every fault and a stalled proposal, 41,327,936 states (5 min,
//! 6 GB); 1 client × 2 writes with 2 losses and 2 timeouts, 1,342,703
//! states (7 s).
//!
//! # How each broken variant is caught
//!
//! ([`Variant`]; each test prints its counterexample.)
//!
//! - [`Variant::NoFreeze`], *no acked write lost* (14 steps): a write waits
//!   in S's log while the snapshot and the tail are copied; S applies it
//!   and acknowledges it; the decision and T's activation leave it behind.
//!   *Single writer* too (10 steps, no client at all): T activates while
//!   S, never frozen, still serves.
//! - [`Variant::NoApplyTimeEpochCheck`], *no acked write lost* (16 steps):
//!   S's `Freeze` is in its log, not applied, when a write arrives; the
//!   propose-time check passes against the lagging applied state and the
//!   write is appended after the freeze; the tail is copied once the
//!   freeze applied; S then applies and acknowledges the write, frozen,
//!   and T serves without it.
//! - [`Variant::NoDedupCopy`], *no double apply* (20 steps): a write waits
//!   in S's log, the client times out and sends it again; S applies the
//!   first copy; the retry, refused by the frozen S, follows the route to
//!   T, whose imported copy has the data but no dedup entry, and T applies
//!   it a second time.
//!
//! # What the checker found in the protocol as first written
//!
//! Three holes, each fixed in [`Variant::Correct`] and kept as a variant
//! whose test shows the counterexample:
//!
//! - [`Variant::NoAbortCleanupOnResume`], *aborted move leaves source
//!   serving* (8 steps): S applies the freeze, the mover commits the abort
//!   on M and crashes before proposing `Unfreeze`; restarted, it finds M at
//!   `(S, 1, Active)`, which is also the state before any move, and does
//!   nothing: S stays frozen, its clients told `Moving` for ever. Fix: a
//!   mover restarting with the route back at the source redoes the abort's
//!   clean-up (`Unfreeze`, `Drop`), idempotent.
//! - [`Variant::NoUnfreezeFence`], *aborted move leaves source serving* (10
//!   steps, no crash): the mover's `Freeze` proposal stalls; the mover
//!   aborts, and S applies its `Unfreeze` and then the stalled `Freeze`:
//!   frozen again under an active route. Fix: the abort's `Unfreeze` fences
//!   the move, and S ignores a `Freeze` of an aborted move (the real
//!   entries carry the move's id).
//! - [`Variant::UnversionedImport`], *no acked write lost* (19 steps, no
//!   crash): the snapshot proposal stalls, carrying S's state before a
//!   write that S then applies and acknowledges; the mover retries the
//!   snapshot, freezes S and copies the tail; the stalled snapshot lands
//!   after the tail, and T takes the older copy in place of the newer one;
//!   T activates without the write. Fix: an import carries the version of
//!   the source's state it copies (its log index in the real system) and T
//!   ignores one older than its copy.
//!
//! [stateright]: https://docs.rs/stateright

mod actions;
mod group;
mod mover;
pub mod properties;
pub mod seq;
pub mod state;
mod variant;

pub use actions::{Action, MoveModel};
pub use mover::MoverAction;
pub use variant::{Bounds, Variant};
