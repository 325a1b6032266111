//! What the checker checks: the invariants (`always`), and reachability
//! checks (`sometimes`) that keep the model from passing vacuously.

use stateright::Property;

use crate::actions::MoveModel;
use crate::state::{GroupId, Mover, Outcome, Phase, Role, Route, SOURCE_EPOCH, State, TARGET_EPOCH};

pub const SINGLE_WRITER: &str = "single writer";
pub const NO_ACKED_WRITE_LOST: &str = "no acked write lost";
pub const NO_DOUBLE_APPLY: &str = "no double apply";
pub const ABORTED_MOVE_LEAVES_SOURCE_SERVING: &str = "aborted move leaves source serving";
pub const MOVE_COMPLETES_WITH_A_WRITE_AFTER_IT: &str = "move completes with a write acked after it";
pub const ABORT_COMPLETES: &str = "abort completes";
pub const RETRY_DEDUPLICATED: &str = "retried write deduplicated";

/// The invariants and the reachability checks, in that order.
pub fn all() -> Vec<Property<MoveModel>> {
    vec![
        Property::always(SINGLE_WRITER, |_, s| single_writer(s)),
        Property::always(NO_ACKED_WRITE_LOST, |_, s| no_acked_write_lost(s)),
        Property::always(NO_DOUBLE_APPLY, |_, s| no_double_apply(s)),
        Property::always(ABORTED_MOVE_LEAVES_SOURCE_SERVING, |_, s| {
            aborted_move_leaves_source_serving(s)
        }),
        Property::sometimes(MOVE_COMPLETES_WITH_A_WRITE_AFTER_IT, |_, s| {
            move_completes_with_a_write_after_it(s)
        }),
        Property::sometimes(ABORT_COMPLETES, |_, s| abort_completes(s)),
        Property::sometimes(RETRY_DEDUPLICATED, |_, s: &State| s.deduplicated),
    ]
}

/// At most one group's applied state takes writes for the namespace.
pub fn single_writer(s: &State) -> bool {
    s.groups.iter().filter(|g| matches!(g.role, Role::Serving(_))).count() <= 1
}

/// The group whose data must hold every acknowledged write: M's route
/// group once it is active there and that group serves at the route's
/// epoch; otherwise the source. Before the decision point only S takes
/// writes; between the decision and T's `Activate` applied, T's copy may
/// still be in its log, and S (frozen) holds it all. Once T serves, T's
/// applied data must hold every write acknowledged by anyone.
pub fn authoritative(s: &State) -> GroupId {
    let route = s.route;
    if route.phase == Phase::Active && s.group(route.group).accepts(route.epoch) {
        route.group
    } else {
        GroupId::S
    }
}

pub fn no_acked_write_lost(s: &State) -> bool {
    s.acked().is_subset_of(&s.group(authoritative(s)).data)
}

pub fn no_double_apply(s: &State) -> bool {
    s.groups.iter().all(|g| {
        g.data
            .iter()
            .enumerate()
            .all(|(i, w)| !g.data.as_slice()[..i].contains(w))
    })
}

/// Once the mover says it finished an abort and M routes the namespace to
/// S at its old epoch, S, its log applied, serves at that epoch.
pub fn aborted_move_leaves_source_serving(s: &State) -> bool {
    let source = s.group(GroupId::S);
    let finished = s.mover == Mover::Done(Outcome::Aborted) && s.route == Route::active(GroupId::S, SOURCE_EPOCH);
    !finished || !source.pending.is_empty() || source.role == Role::Serving(SOURCE_EPOCH)
}

/// The move completed, T serves, and T applied an acknowledged write the
/// source never had.
fn move_completes_with_a_write_after_it(s: &State) -> bool {
    let (source, target) = (s.group(GroupId::S), s.group(GroupId::T));
    s.mover == Mover::Done(Outcome::Completed)
        && target.role == Role::Serving(TARGET_EPOCH)
        && target
            .data
            .iter()
            .any(|&w| s.acked().contains(w) && !source.data.as_slice().contains(&w))
}

/// The abort finished: S serves at the old epoch, T's copy is dropped.
fn abort_completes(s: &State) -> bool {
    s.mover == Mover::Done(Outcome::Aborted)
        && s.route == Route::active(GroupId::S, SOURCE_EPOCH)
        && s.group(GroupId::S).role == Role::Serving(SOURCE_EPOCH)
        && s.group(GroupId::T).role == Role::Absent
        && s.groups.iter().all(|g| g.pending.is_empty())
}
