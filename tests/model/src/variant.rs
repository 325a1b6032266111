//! Which protocol the model runs (the correct one, or one with a step
//! taken out) and how far it explores (the bounds).

/// The protocol the mover and the groups follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The protocol as specified, with the three fixes the checker called
    /// for: the restarted mover redoes an abort's clean-up, the abort's
    /// `Unfreeze` fences a late `Freeze`, and an `Import` older than the
    /// target's copy is ignored.
    Correct,
    /// The mover skips the freeze: the tail is copied while the source
    /// still serves.
    NoFreeze,
    /// A group checks the namespace's role and epoch only when it
    /// proposes a write (against its applied state, which may lag its
    /// log), not again when the write is applied.
    NoApplyTimeEpochCheck,
    /// An import copies the namespace's data but not its dedup table.
    NoDedupCopy,
    /// A restarted mover trusts the meta group alone: finding the route
    /// back at the source, active, it believes there is nothing to do,
    /// although it may have crashed between committing the abort and
    /// unfreezing the source.
    NoAbortCleanupOnResume,
    /// The source's `Unfreeze` does not fence the aborted move: a
    /// `Freeze` proposal still in flight lands after it and freezes the
    /// source again.
    NoUnfreezeFence,
    /// The target takes every `Import` in place of its copy, a late one
    /// older than its copy too (a crashed mover's snapshot landing after
    /// its successor's tail).
    UnversionedImport,
}

/// How far the checker explores: the clients and the faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    /// Clients, each writing its own writes one at a time.
    pub clients: u8,
    /// Writes each client submits, each with its own write id.
    pub writes_per_client: u8,
    /// Messages the network may lose, one at a time.
    pub losses: u8,
    /// Leader changes of a data group: every message to or from it lost
    /// at once.
    pub group_crashes: u8,
    /// Crashes of the mover, which loses its volatile progress.
    pub mover_crashes: u8,
    /// Client timeouts: a write sent again (same write id) although its
    /// request or reply may still be in flight, or its entry in a log.
    pub timeouts: u8,
    /// Mover proposals that stall in flight, to land at any later time.
    pub stalls: u8,
}

impl Bounds {
    /// One client with two writes, and one of each fault but a stalled
    /// proposal: a lost message, a leader change, a mover crash, a client
    /// timeout.
    pub const TWO_WRITES: Bounds = Bounds {
        clients: 1,
        writes_per_client: 2,
        losses: 1,
        group_crashes: 1,
        mover_crashes: 1,
        timeouts: 1,
        stalls: 0,
    };

    /// One client with one write, one of each fault, and a stalled mover
    /// proposal (two writes with a stalled proposal is 4.4 million states,
    /// too many for the unit tier).
    pub const STALLED_PROPOSAL: Bounds = Bounds {
        clients: 1,
        writes_per_client: 1,
        losses: 1,
        group_crashes: 1,
        mover_crashes: 1,
        timeouts: 1,
        stalls: 1,
    };

    /// The write ids of one client, in the order it submits them: ids
    /// start at 1 and are unique across clients.
    pub fn write_id(&self, client: u8, index: u8) -> u8 {
        client * self.writes_per_client + index + 1
    }

    /// The number of write ids in the run.
    pub fn write_count(&self) -> u8 {
        self.clients * self.writes_per_client
    }
}
