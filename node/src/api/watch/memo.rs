//! Responses built and encoded once for all the watchers of one target: a
//! change heard by many listeners of one prefix is then turned into a
//! response once per node, not once per listener (each still gets its own
//! gRPC message). Only for live batches ([`state::recent`](crate::state::recent)), whose changes
//! are the same for every watcher, and only for watchers that may see
//! every change their target matches (`Watcher::shares`).
//!
//! The memo keeps the responses of the last few batches and targets, at
//! most [`MAX_BYTES`] together: the watchers of one batch are woken
//! together and come by within moments of each other; a response too
//! large to keep is built by each watcher as before.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use handlestore_proto::watch_out::WatchOut;

/// Bytes of encoded responses kept at most.
pub const MAX_BYTES: usize = 4 << 20;
/// Responses kept at most (one per batch and target).
const MAX_ENTRIES: usize = 32;

/// What makes two watchers' responses to one batch the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// The recent changes' generation and the batch's revision.
    pub generation: u64,
    pub through: u64,
    /// The target: its kind, its data key, and whether it is that key
    /// alone.
    pub kind: u8,
    pub data_key: Vec<u8>,
    pub exact: bool,
    pub keys_only: bool,
}

/// A batch's responses for one target, and the changes they carry.
#[derive(Debug, Clone)]
pub struct Responses {
    pub responses: Arc<[WatchOut]>,
    pub events: usize,
}

struct Entry {
    key: Key,
    value: Responses,
    bytes: usize,
}

/// See the module docs.
#[derive(Default)]
pub struct Memo {
    entries: Mutex<VecDeque<Entry>>,
}

impl Memo {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The responses for `key`, built by `build` (with no lock held) if no
    /// watcher built them yet.
    pub fn get_or_build(&self, key: Key, build: impl FnOnce() -> Responses) -> Responses {
        if let Some(e) = self.lock().iter().find(|e| e.key == key) {
            return e.value.clone();
        }
        let value = build();
        let bytes: usize = value
            .responses
            .iter()
            .map(|r| prost::Message::encoded_len(r) + key.data_key.len())
            .sum();
        if bytes <= MAX_BYTES / 4 {
            self.keep(Entry {
                key,
                value: value.clone(),
                bytes,
            });
        }
        value
    }

    /// Keeps an entry, dropping the oldest beyond the bounds (another
    /// watcher may have kept the same key meanwhile: the first found wins).
    fn keep(&self, entry: Entry) {
        let mut entries = self.lock();
        entries.push_back(entry);
        let mut bytes: usize = entries.iter().map(|e| e.bytes).sum();
        while bytes > MAX_BYTES || entries.len() > MAX_ENTRIES {
            let Some(old) = entries.pop_front() else {
                break;
            };
            bytes -= old.bytes;
        }
    }

    /// Bytes kept now.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.lock().iter().map(|e| e.bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use handlestore_proto::v1 as pb;

    use super::*;

    fn key(through: u64) -> Key {
        Key {
            generation: 0,
            through,
            kind: 0,
            data_key: b"k".to_vec(),
            exact: false,
            keys_only: false,
        }
    }

    fn responses(value_len: usize) -> Responses {
        let r = pb::WatchResponse {
            events: vec![pb::WatchEvent {
                value: Some(pb::StateValue {
                    kind: Some(pb::state_value::Kind::Bytes(vec![0; value_len])),
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
        Responses {
            responses: vec![WatchOut::encoded(&r)].into(),
            events: 1,
        }
    }

    #[test]
    fn built_once_per_batch_and_target() {
        let memo = Memo::default();
        let mut builds = 0;
        for _ in 0..3 {
            memo.get_or_build(key(5), || {
                builds += 1;
                responses(10)
            });
        }
        assert_eq!(builds, 1);
        let other = Key {
            keys_only: true,
            ..key(5)
        };
        memo.get_or_build(other, || {
            builds += 1;
            responses(10)
        });
        assert_eq!(builds, 2, "another target's responses are its own");
    }

    #[test]
    fn bounded_in_entries_and_bytes() {
        let memo = Memo::default();
        for through in 0..100 {
            memo.get_or_build(key(through), || responses(MAX_BYTES / 8));
        }
        assert!(memo.bytes() <= MAX_BYTES, "{}", memo.bytes());
        assert!(memo.lock().len() <= MAX_ENTRIES);
        let mut built = false;
        memo.get_or_build(key(1000), || responses(MAX_BYTES));
        memo.get_or_build(key(1000), || {
            built = true;
            responses(MAX_BYTES)
        });
        assert!(built, "too large to keep: built again");
    }
}
