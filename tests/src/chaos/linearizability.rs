//! A linearizability checker for one register (a handle or a state key):
//! the Wing & Gong search with Lowe's memoization, as in Porcupine.
//!
//! Each operation has an invoke time and, if it completed, a complete time.
//! An operation whose outcome is unknown (a write that timed out) is pending
//! forever: it may take effect at any point after its invocation, or never.
//! The history is linearizable if the operations can be put in one order that
//! respects real time (an operation that completed before another was invoked
//! comes first) in which every read sees the latest write.

use std::collections::HashSet;

use serde_json::Value;

/// What one operation did to, or saw of, the register.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RegOp {
    /// Set the value (None = delete).
    Write(Option<Value>),
    /// Observed this value (None = absent).
    Read(Option<Value>),
}

/// One operation of the history.
#[derive(Debug, Clone)]
pub struct RegEvent {
    pub client: usize,
    pub invoke: u64,
    /// None: the outcome is unknown (writes only; failed reads are dropped).
    pub complete: Option<u64>,
    pub op: RegOp,
}

/// The result of a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Linearizable,
    /// No valid order exists.
    Violation,
    /// The search gave up (too many states); neither proven nor refuted.
    Inconclusive,
}

struct Entry {
    op: usize,
    call: bool,
    time: u64,
}

/// Hashable set of linearized operations.
#[derive(Clone, PartialEq, Eq, Hash)]
struct BitSet(Vec<u64>);

impl BitSet {
    fn new(n: usize) -> Self {
        Self(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
}

/// Checks one register's history, starting from `initial`. `max_states`
/// bounds the memoized search.
pub fn check(events: &[RegEvent], initial: Option<Value>, max_states: usize) -> Verdict {
    // Reads that never completed carry no information.
    let ops: Vec<&RegEvent> = events
        .iter()
        .filter(|e| e.complete.is_some() || matches!(e.op, RegOp::Write(_)))
        .collect();
    let n = ops.len();
    if n == 0 {
        return Verdict::Linearizable;
    }
    let mut entries: Vec<Entry> = Vec::with_capacity(2 * n);
    for (i, e) in ops.iter().enumerate() {
        entries.push(Entry {
            op: i,
            call: true,
            time: e.invoke,
        });
        entries.push(Entry {
            op: i,
            call: false,
            time: e.complete.unwrap_or(u64::MAX),
        });
    }
    // By time; at a tie calls come first (the operations overlap).
    entries.sort_by_key(|e| (e.time, !e.call));

    // A doubly linked list over the entries, with a sentinel at index 0.
    let len = entries.len() + 1;
    let mut next: Vec<usize> = (1..=len).collect();
    let mut prev: Vec<usize> = (0..len).map(|i| i.wrapping_sub(1)).collect();
    next[len - 1] = usize::MAX;
    let mut ret_of = vec![0usize; n]; // list index of each op's return entry
    for (i, e) in entries.iter().enumerate() {
        if !e.call {
            ret_of[e.op] = i + 1;
        }
    }
    let node = |idx: usize| &entries[idx - 1];
    let unlink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, i: usize| {
        let (p, nx) = (prev[i], next[i]);
        next[p] = nx;
        if nx != usize::MAX {
            prev[nx] = p;
        }
    };
    let relink = |next: &mut Vec<usize>, prev: &mut Vec<usize>, i: usize| {
        let (p, nx) = (prev[i], next[i]);
        next[p] = i;
        if nx != usize::MAX {
            prev[nx] = i;
        }
    };

    let mut state = initial;
    let mut linearized = BitSet::new(n);
    let mut cache: HashSet<(BitSet, Option<Value>)> = HashSet::new();
    let mut stack: Vec<(usize, Option<Value>)> = Vec::new();
    let mut cur = next[0];
    while next[0] != usize::MAX {
        if cache.len() > max_states {
            return Verdict::Inconclusive;
        }
        if cur == usize::MAX || !node(cur).call {
            // Nothing more can be linearized at this point (the end, or a
            // return whose call is not linearized yet, so everything before
            // it must be): backtrack.
            let Some((call, old)) = stack.pop() else {
                return Verdict::Violation;
            };
            let op = node(call).op;
            linearized.clear(op);
            state = old;
            relink(&mut next, &mut prev, ret_of[op]);
            relink(&mut next, &mut prev, call);
            cur = next[call];
            continue;
        }
        let e = node(cur);
        let op = &ops[e.op].op;
        let (legal, new_state) = match op {
            RegOp::Write(v) => (true, v.clone()),
            RegOp::Read(seen) => (*seen == state, state.clone()),
        };
        if legal {
            let mut lin = linearized.clone();
            lin.set(e.op);
            if cache.insert((lin.clone(), new_state.clone())) {
                stack.push((cur, std::mem::replace(&mut state, new_state)));
                linearized = lin;
                unlink(&mut next, &mut prev, cur);
                unlink(&mut next, &mut prev, ret_of[e.op]);
                cur = next[0];
                continue;
            }
        }
        cur = next[cur];
    }
    Verdict::Linearizable
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn w(client: usize, invoke: u64, complete: Option<u64>, v: i64) -> RegEvent {
        RegEvent {
            client,
            invoke,
            complete,
            op: RegOp::Write(Some(json!(v))),
        }
    }
    fn r(client: usize, invoke: u64, complete: u64, v: Option<i64>) -> RegEvent {
        RegEvent {
            client,
            invoke,
            complete: Some(complete),
            op: RegOp::Read(v.map(|x| json!(x))),
        }
    }

    #[test]
    fn sequential_histories() {
        let ok = [
            w(0, 0, Some(1), 1),
            r(1, 2, 3, Some(1)),
            w(0, 4, Some(5), 2),
            r(1, 6, 7, Some(2)),
        ];
        assert_eq!(check(&ok, None, 100_000), Verdict::Linearizable);
        let stale = [w(0, 0, Some(1), 1), w(0, 2, Some(3), 2), r(1, 4, 5, Some(1))];
        assert_eq!(check(&stale, None, 100_000), Verdict::Violation, "a stale read");
        let lost = [w(0, 0, Some(1), 1), r(1, 2, 3, None)];
        assert_eq!(
            check(&lost, None, 100_000),
            Verdict::Violation,
            "an acknowledged write vanished"
        );
    }

    #[test]
    fn concurrency_allows_either_order() {
        // The read overlaps the write: it may see the old or the new value.
        for seen in [None, Some(1)] {
            let h = [w(0, 0, Some(10), 1), r(1, 5, 6, seen)];
            assert_eq!(check(&h, None, 100_000), Verdict::Linearizable);
        }
        // Two reads after each other cannot go back in time.
        let h = [w(0, 0, Some(10), 1), r(1, 1, 2, Some(1)), r(2, 3, 4, None)];
        assert_eq!(check(&h, None, 100_000), Verdict::Violation);
    }

    #[test]
    fn unknown_writes_may_or_may_not_happen() {
        let happened = [w(0, 0, None, 1), r(1, 5, 6, Some(1))];
        assert_eq!(check(&happened, None, 100_000), Verdict::Linearizable);
        let never = [w(0, 0, None, 1), r(1, 5, 6, None)];
        assert_eq!(check(&never, None, 100_000), Verdict::Linearizable);
        // But it cannot take effect before it was invoked.
        let before = [r(1, 0, 1, Some(1)), w(0, 5, None, 1)];
        assert_eq!(check(&before, None, 100_000), Verdict::Violation);
        // Nor un-happen once a read saw it.
        let flicker = [w(0, 0, None, 1), r(1, 5, 6, Some(1)), r(1, 7, 8, None)];
        assert_eq!(check(&flicker, None, 100_000), Verdict::Violation);
    }

    #[test]
    fn larger_concurrent_history() {
        // Four clients writing their own values and reading; linearizable by
        // construction (each read returns the last write completed before it,
        // with no overlap).
        let mut h = Vec::new();
        let mut t = 0;
        for round in 0..40 {
            let c = round % 4;
            h.push(w(c, t, Some(t + 2), round as i64));
            h.push(r((c + 1) % 4, t + 3, t + 4, Some(round as i64)));
            t += 5;
        }
        assert_eq!(check(&h, None, 1_000_000), Verdict::Linearizable);
        h.push(r(0, t + 1, t + 2, Some(3)));
        assert_eq!(check(&h, None, 1_000_000), Verdict::Violation);
    }
}
