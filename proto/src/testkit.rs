//! For the tests of the crates that decode this wire (the `testkit`
//! feature): hostile bytes to feed their decoders, shared so the node's
//! fuzz targets and the API's fuzz test damage inputs alike.

use std::sync::Arc;

use proptest::prelude::*;

/// Arbitrary bytes (up to 255), or `seed` damaged: cut short, some bytes
/// flipped, or bytes inserted.
pub fn damaged(seed: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    let seed: Arc<[u8]> = seed.into();
    let len = seed.len();
    let (cut, flip, insert) = (seed.clone(), seed.clone(), seed);
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        (0..=len).prop_map(move |at| cut[..at].to_vec()),
        proptest::collection::vec((0..len.max(1), 1..=255u8), 1..6).prop_map(move |flips| {
            let mut b = flip.to_vec();
            for (at, x) in flips {
                if let Some(byte) = b.get_mut(at) {
                    *byte ^= x;
                }
            }
            b
        }),
        (0..=len, proptest::collection::vec(any::<u8>(), 1..16)).prop_map(move |(at, extra)| {
            let mut b = insert[..at].to_vec();
            b.extend_from_slice(&extra);
            b.extend_from_slice(&insert[at..]);
            b
        }),
    ]
}
