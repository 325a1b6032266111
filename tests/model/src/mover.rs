//! The mover: a coordinator with volatile progress. Its steps on M are
//! compare-and-set commits, taken atomically; its steps on a data group
//! are proposals, which the group commits at once, or which stall in
//! flight and land late, after the mover gave up on them or crashed.
//! Every step is idempotent and re-derivable from M's route after a
//! crash.

use crate::actions::MoveModel;
use crate::state::{Entry, GroupId, Mover, Msg, Outcome, Phase, Role, Route, SOURCE_EPOCH, State, Step, TARGET_EPOCH};
use crate::variant::Variant;

/// Whether the step is a proposal to a data group (not a commit on M).
fn proposes(step: Step) -> bool {
    !matches!(step, Step::Begin | Step::Decide)
}

/// What the mover may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MoverAction {
    /// Takes the step its progress names; a proposal to a group lands at
    /// once (committed, and acknowledged).
    Step(Step),
    /// Sends the step's proposal, which stalls in flight; the mover gives
    /// up on it (its progress stays at the step, to retry, abort or crash)
    /// and the proposal may land at any later time: a zombie. (One that
    /// lands while the mover still waits is the plain step.)
    Stall(Step),
    /// Before the decision point: M commits `(S, e, Active)` again; the
    /// mover goes on to unfreeze S and drop T's copy.
    Abort,
    /// Loses its volatile progress.
    Crash,
    /// Restarts, resuming from M's route.
    Resume,
}

impl MoveModel {
    pub(crate) fn mover_actions(&self, state: &State, actions: &mut Vec<MoverAction>) {
        let started = match state.mover {
            Mover::At(step) => {
                if self.step_enabled(state, step) {
                    actions.push(MoverAction::Step(step));
                    if proposes(step) && state.budget.stalls > 0 {
                        actions.push(MoverAction::Stall(step));
                    }
                }
                step != Step::Begin
            }
            Mover::Crashed => {
                actions.push(MoverAction::Resume);
                false
            }
            Mover::Done(_) => false,
        };
        if started && matches!(state.route.phase, Phase::Moving { .. }) {
            actions.push(MoverAction::Abort);
        }
        if started && state.budget.mover_crashes > 0 {
            actions.push(MoverAction::Crash);
        }
    }

    /// A step's guard: the tail waits for S to have applied its freeze.
    fn step_enabled(&self, state: &State, step: Step) -> bool {
        match step {
            Step::Begin => state.route == Route::active(GroupId::S, SOURCE_EPOCH),
            Step::Tail if self.variant != Variant::NoFreeze => {
                state.group(GroupId::S).role == Role::Frozen(SOURCE_EPOCH)
            }
            _ => true,
        }
    }

    pub(crate) fn mover_next(&self, state: &mut State, action: MoverAction) {
        match action {
            MoverAction::Step(step) => self.take_step(state, step),
            MoverAction::Stall(step) => {
                let (to, entry) = self.proposal(state, step);
                state.budget.stalls -= 1;
                state.send(Msg::Propose { to, entry });
            }
            MoverAction::Abort => {
                state.route = Route::active(GroupId::S, SOURCE_EPOCH);
                state.mover = Mover::At(Step::Unfreeze);
            }
            MoverAction::Crash => {
                state.budget.mover_crashes -= 1;
                state.mover = Mover::Crashed;
            }
            MoverAction::Resume => state.mover = self.resume(state.route),
        }
    }

    /// Where a restarted mover picks up, from M's route alone: before the
    /// decision it redoes the move from the start (every step idempotent);
    /// after it, it goes forward. Back at the source, active, the move was
    /// aborted (the mover crashes only after its first step), and the
    /// abort's clean-up is redone: M cannot tell whether S was unfrozen.
    fn resume(&self, route: Route) -> Mover {
        match (route.phase, route.group) {
            (Phase::Moving { .. }, _) => Mover::At(Step::Prepare),
            (Phase::Active, GroupId::T) => Mover::At(Step::Activate),
            (Phase::Active, GroupId::S) if self.variant == Variant::NoAbortCleanupOnResume => {
                Mover::Done(Outcome::Aborted)
            }
            (Phase::Active, GroupId::S) => Mover::At(Step::Unfreeze),
        }
    }

    /// Takes a step: a commit on M, or a proposal a group commits.
    fn take_step(&self, state: &mut State, step: Step) {
        match step {
            Step::Begin => {
                state.route.phase = Phase::Moving { to: GroupId::T };
                state.mover = Mover::At(Step::Prepare);
            }
            Step::Decide => {
                state.route = Route::active(GroupId::T, TARGET_EPOCH);
                state.mover = Mover::At(Step::Activate);
            }
            _ => {
                let (to, entry) = self.proposal(state, step);
                state.group_mut(to).pending.push(entry);
                state.mover = self.after(step);
            }
        }
    }

    /// The entry a step proposes, and to which group.
    fn proposal(&self, state: &State, step: Step) -> (GroupId, Entry) {
        match step {
            Step::Prepare => (GroupId::T, Entry::Prepare),
            Step::Snapshot | Step::Tail => (GroupId::T, self.copy_of_source(state)),
            Step::Freeze => (GroupId::S, Entry::Freeze),
            Step::Activate => (GroupId::T, Entry::Activate(TARGET_EPOCH)),
            Step::Release => (
                GroupId::S,
                Entry::Release {
                    to: GroupId::T,
                    epoch: TARGET_EPOCH,
                },
            ),
            Step::Unfreeze => (GroupId::S, Entry::Unfreeze),
            Step::Drop => (GroupId::T, Entry::Drop),
            Step::Begin | Step::Decide => unreachable!("{step:?} commits on M"),
        }
    }

    /// The state of S's namespace as an import into T; without its dedup
    /// table in [`Variant::NoDedupCopy`].
    fn copy_of_source(&self, state: &State) -> Entry {
        let source = state.group(GroupId::S);
        let dedup = if self.variant == Variant::NoDedupCopy {
            Default::default()
        } else {
            source.dedup
        };
        Entry::Import {
            data: source.data,
            dedup,
        }
    }

    /// The mover's progress once a step's proposal is committed.
    fn after(&self, step: Step) -> Mover {
        match step {
            Step::Begin | Step::Prepare => Mover::At(Step::Snapshot),
            Step::Snapshot if self.variant == Variant::NoFreeze => Mover::At(Step::Tail),
            Step::Snapshot => Mover::At(Step::Freeze),
            Step::Freeze => Mover::At(Step::Tail),
            Step::Tail => Mover::At(Step::Decide),
            Step::Decide => Mover::At(Step::Activate),
            Step::Activate => Mover::At(Step::Release),
            Step::Release => Mover::Done(Outcome::Completed),
            Step::Unfreeze => Mover::At(Step::Drop),
            Step::Drop => Mover::Done(Outcome::Aborted),
        }
    }
}
