//! The namespace move checked exhaustively: the correct protocol keeps
//! every invariant, and each broken variant is caught by the property it
//! breaks (single-threaded BFS, stopped at the property's first
//! counterexample, so the one printed is short).

use std::sync::OnceLock;
use std::time::Instant;

use handlestore_model::properties::{
    ABORTED_MOVE_LEAVES_SOURCE_SERVING, NO_ACKED_WRITE_LOST, NO_DOUBLE_APPLY, SINGLE_WRITER,
};
use handlestore_model::{Bounds, MoveModel, Variant};
use stateright::{Checker, HasDiscoveries, Model};

/// The unique states of the correct model at each bound set, measured
/// (258,798 and 1,207,052); a model that collapsed would fall below.
const TWO_WRITES_FLOOR: usize = 250_000;
const STALLED_PROPOSAL_FLOOR: usize = 1_150_000;

/// Checks the correct model exhaustively at one bound set, on two
/// threads, and asserts its properties; returns its unique states.
fn check_correct(bounds: Bounds) -> usize {
    let start = Instant::now();
    let checker = MoveModel::new(Variant::Correct, bounds)
        .checker()
        .threads(2)
        .spawn_bfs()
        .join();
    let unique = checker.unique_state_count();
    println!(
        "Correct at {bounds:?}: {unique} unique states, depth {}, {:?}",
        checker.max_depth(),
        start.elapsed()
    );
    checker.assert_properties();
    unique
}

/// Both exhaustive runs, once for the tests that read them.
fn correct_runs() -> (usize, usize) {
    static RUNS: OnceLock<(usize, usize)> = OnceLock::new();
    *RUNS.get_or_init(|| {
        (
            check_correct(Bounds::TWO_WRITES),
            check_correct(Bounds::STALLED_PROPOSAL),
        )
    })
}

#[test]
fn correct_protocol_holds_every_invariant() {
    correct_runs();
}

#[test]
fn correct_model_explores_its_state_space() {
    let (two_writes, stalled) = correct_runs();
    assert!(two_writes >= TWO_WRITES_FLOOR, "{two_writes} states with two writes");
    assert!(
        stalled >= STALLED_PROPOSAL_FLOOR,
        "{stalled} states with a stalled proposal"
    );
}

/// Checks a broken variant until the property has a counterexample (the
/// checker stops at the first; it may still overwrite it with another
/// found in the same batch of states, so the path is short, not always
/// the shortest), asserts there is one, and prints it.
fn assert_caught(variant: Variant, bounds: Bounds, property: &'static str) {
    let start = Instant::now();
    let until = HasDiscoveries::AnyOf([property].into_iter().collect());
    let checker = MoveModel::new(variant, bounds)
        .checker()
        .finish_when(until)
        .spawn_bfs()
        .join();
    let path = checker
        .discovery(property)
        .unwrap_or_else(|| panic!("{variant:?} keeps \"{property}\""));
    let (unique, elapsed) = (checker.unique_state_count(), start.elapsed());
    println!("{variant:?} at {bounds:?}: {unique} unique states, {elapsed:?}");
    println!(
        "\"{property}\" violated after {} steps: {path}",
        path.clone().into_actions().len()
    );
}

#[test]
fn dropping_the_freeze_loses_an_acknowledged_write() {
    assert_caught(Variant::NoFreeze, Bounds::TWO_WRITES, NO_ACKED_WRITE_LOST);
    assert_caught(Variant::NoFreeze, Bounds::TWO_WRITES, SINGLE_WRITER);
}

#[test]
fn dropping_the_apply_time_epoch_check_is_caught() {
    assert_caught(Variant::NoApplyTimeEpochCheck, Bounds::TWO_WRITES, NO_ACKED_WRITE_LOST);
}

#[test]
fn not_copying_the_dedup_table_applies_a_retry_twice() {
    assert_caught(Variant::NoDedupCopy, Bounds::TWO_WRITES, NO_DOUBLE_APPLY);
}

#[test]
fn resuming_from_the_meta_group_alone_leaves_an_aborted_source_frozen() {
    assert_caught(
        Variant::NoAbortCleanupOnResume,
        Bounds::TWO_WRITES,
        ABORTED_MOVE_LEAVES_SOURCE_SERVING,
    );
}

#[test]
fn a_late_freeze_without_the_unfreeze_fence_refreezes_an_aborted_source() {
    assert_caught(
        Variant::NoUnfreezeFence,
        Bounds::STALLED_PROPOSAL,
        ABORTED_MOVE_LEAVES_SOURCE_SERVING,
    );
}

#[test]
fn a_late_unversioned_import_loses_an_acknowledged_write() {
    assert_caught(
        Variant::UnversionedImport,
        Bounds::STALLED_PROPOSAL,
        NO_ACKED_WRITE_LOST,
    );
}
