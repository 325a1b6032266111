//! The correct model at bounds given in the environment, for runs too
//! long for the unit tier:
//!
//! ```text
//! MODEL_BOUNDS=clients=2,writes=1,losses=1,group_crashes=1,mover_crashes=1,timeouts=1,stalls=1 \
//!   cargo test --release -p handlestore-model --test explore -- --ignored --nocapture
//! ```

use std::time::Instant;

use handlestore_model::{Bounds, MoveModel, Variant};
use stateright::{Checker, Model};

/// `Bounds::TWO_WRITES` with the fields `MODEL_BOUNDS` names replaced.
fn bounds_from_env() -> Bounds {
    let mut bounds = Bounds::TWO_WRITES;
    for pair in std::env::var("MODEL_BOUNDS")
        .unwrap_or_default()
        .split(',')
        .filter(|p| !p.is_empty())
    {
        let (name, value) = pair.split_once('=').expect("MODEL_BOUNDS: name=value,...");
        let value: u8 = value.parse().expect("MODEL_BOUNDS: a bound is a small number");
        let field = match name {
            "clients" => &mut bounds.clients,
            "writes" => &mut bounds.writes_per_client,
            "losses" => &mut bounds.losses,
            "group_crashes" => &mut bounds.group_crashes,
            "mover_crashes" => &mut bounds.mover_crashes,
            "timeouts" => &mut bounds.timeouts,
            "stalls" => &mut bounds.stalls,
            other => panic!("MODEL_BOUNDS: no bound {other}"),
        };
        *field = value;
    }
    bounds
}

#[test]
#[ignore = "minutes at larger bounds: run by hand"]
fn correct_protocol_at_bounds_from_the_environment() {
    let bounds = bounds_from_env();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let start = Instant::now();
    let checker = MoveModel::new(Variant::Correct, bounds)
        .checker()
        .threads(threads)
        .spawn_bfs()
        .join();
    let (unique, depth) = (checker.unique_state_count(), checker.max_depth());
    println!(
        "Correct at {bounds:?}: {unique} unique states, depth {depth}, {:?}",
        start.elapsed()
    );
    checker.assert_properties();
}
