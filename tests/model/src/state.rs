//! The model's state: the meta group's route, the two data groups' logs
//! and applied state, the clients, the mover's volatile progress, the
//! messages in flight and the faults left to spend.

use crate::seq::Seq;

/// A write id: `(client_id, seq)` in the real system.
pub type Wid = u8;
/// A namespace's data: the applied write ids in apply order, so that a
/// write applied twice shows.
pub type Data = Seq<Wid, 8>;
/// A route epoch: the source serves at [`SOURCE_EPOCH`], the target at
/// [`TARGET_EPOCH`] once the move completes.
pub type Epoch = u8;

/// The epoch of the namespace's route before the move.
pub const SOURCE_EPOCH: Epoch = 1;
/// The epoch the move gives the route at its decision point.
pub const TARGET_EPOCH: Epoch = 2;

/// A data group: the source the namespace moves from, or the target it
/// moves to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupId {
    S,
    T,
}

impl GroupId {
    pub const ALL: [GroupId; 2] = [GroupId::S, GroupId::T];

    pub const fn index(self) -> usize {
        match self {
            GroupId::S => 0,
            GroupId::T => 1,
        }
    }
}

/// A set of write ids, as bits (ids 1 to 8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WidSet(u8);

impl WidSet {
    pub fn contains(self, wid: Wid) -> bool {
        self.0 & Self::bit(wid) != 0
    }

    pub fn insert(&mut self, wid: Wid) {
        self.0 |= Self::bit(wid);
    }

    pub fn is_subset_of(self, data: &Data) -> bool {
        (1..=8)
            .filter(|&w| self.contains(w))
            .all(|w| data.as_slice().contains(&w))
    }

    fn bit(wid: Wid) -> u8 {
        1 << (wid - 1)
    }
}

/// The meta group's phase for the namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Active,
    Moving { to: GroupId },
}

/// The meta group's route for the namespace: linearizable and durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Route {
    pub group: GroupId,
    pub epoch: Epoch,
    pub phase: Phase,
}

impl Route {
    pub const fn active(group: GroupId, epoch: Epoch) -> Route {
        Route {
            group,
            epoch,
            phase: Phase::Active,
        }
    }
}

/// A data group's role for the namespace, in its applied state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Absent,
    Importing,
    Serving(Epoch),
    Frozen(Epoch),
    Released { to: GroupId, epoch: Epoch },
}

/// Who a group answers: a client's RPC. A client's timeout abandons its
/// RPC and starts the next attempt; it ignores replies to older ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Caller {
    pub client: u8,
    pub attempt: u8,
}

/// An entry of a data group's log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Entry {
    Write {
        caller: Caller,
        epoch: Epoch,
        wid: Wid,
    },
    /// The target prepares to import (role Importing).
    Prepare,
    Freeze,
    /// The source's data and dedup table as of a point of its log: the
    /// snapshot or the tail, which the target takes in place of its copy.
    Import {
        data: Data,
        dedup: WidSet,
    },
    Activate(Epoch),
    Release {
        to: GroupId,
        epoch: Epoch,
    },
    Unfreeze,
    Drop,
}

/// The filler of a log's unused slots.
impl Default for Entry {
    fn default() -> Self {
        Entry::Drop
    }
}

/// A data group (a Raft group): its committed log not yet applied, and
/// the namespace's applied state. A leader change loses what is in flight
/// to and from it; a proposal it had not committed is modelled as the
/// request still in flight, so it is lost with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Group {
    pub role: Role,
    pub data: Data,
    /// The exactly-once table: the write ids applied.
    pub dedup: WidSet,
    /// Committed entries not yet applied, oldest first.
    pub pending: Seq<Entry, 12>,
    /// The source applied the aborted move's `Unfreeze`: a `Freeze` of
    /// that move landing later is ignored. (The real entries carry the
    /// move's id; the model has one move.)
    pub move_aborted: bool,
}

impl Group {
    pub fn new(role: Role) -> Group {
        Group {
            role,
            data: Data::new(),
            dedup: WidSet::default(),
            pending: Seq::new(),
            move_aborted: false,
        }
    }

    /// Whether the group's applied state takes a write at this epoch.
    pub fn accepts(&self, epoch: Epoch) -> bool {
        self.role == Role::Serving(epoch)
    }
}

/// What a group answers a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Answer {
    Ok,
    /// Frozen or importing: retry after refreshing the route.
    Moving,
    /// Released (with where it went) or absent.
    WrongGroup(Option<(GroupId, Epoch)>),
}

/// A message in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    Request {
        caller: Caller,
        to: GroupId,
        epoch: Epoch,
        wid: Wid,
    },
    Reply {
        caller: Caller,
        from: GroupId,
        wid: Wid,
        answer: Answer,
    },
    /// A proposal of the mover's that stalled: it lands whenever, after
    /// the mover gave up on it, retried, aborted or crashed.
    Propose { to: GroupId, entry: Entry },
}

/// The filler of the network's unused slots.
impl Default for Msg {
    fn default() -> Self {
        Msg::Propose {
            to: GroupId::S,
            entry: Entry::Drop,
        }
    }
}

impl Msg {
    /// Whether the model loses the message: a stalled proposal is never
    /// lost, the states where it is still in flight standing for the runs
    /// where it never lands.
    pub fn losable(&self) -> bool {
        !matches!(self, Msg::Propose { .. })
    }

    /// Whether a leader change of this group loses the message.
    pub fn touches(&self, group: GroupId) -> bool {
        match *self {
            Msg::Request { to, .. } => to == group,
            Msg::Reply { from, .. } => from == group,
            Msg::Propose { to, .. } => to == group,
        }
    }
}

/// A client: its cached route, where it is in its writes, and what was
/// acknowledged to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    pub route: (GroupId, Epoch),
    /// The index of its current write among its writes.
    pub next: u8,
    /// Whether the current write was sent at least once.
    pub submitted: bool,
    /// The client's current RPC: its timeouts so far.
    pub attempt: u8,
    pub acked: WidSet,
}

impl Default for Client {
    fn default() -> Self {
        Client {
            route: (GroupId::S, SOURCE_EPOCH),
            next: 0,
            submitted: false,
            attempt: 0,
            acked: WidSet::default(),
        }
    }
}

/// A step of the mover; its progress is the next step it will take.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// M commits `Moving { to: T }`.
    Begin,
    /// T appends `Prepare`.
    Prepare,
    /// T appends the source's current state as an `Import`.
    Snapshot,
    /// S appends `Freeze`.
    Freeze,
    /// Once S applied the freeze, T appends S's state as an `Import`.
    Tail,
    /// The decision point: M commits `(T, e+1, Active)`.
    Decide,
    /// T appends `Activate(e+1)`.
    Activate,
    /// S appends `Release { T, e+1 }`.
    Release,
    /// Abort's second step (after M committed `(S, e, Active)`): S
    /// appends `Unfreeze`.
    Unfreeze,
    /// Abort's last step: T appends `Drop`.
    Drop,
}

/// How a move ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    Completed,
    Aborted,
}

/// The mover's volatile progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mover {
    At(Step),
    /// Crashed; its restart resumes from M's durable route.
    Crashed,
    Done(Outcome),
}

/// The faults and timeouts left to spend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Budget {
    pub losses: u8,
    pub group_crashes: u8,
    pub mover_crashes: u8,
    pub timeouts: u8,
    pub stalls: u8,
}

/// The whole system's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub route: Route,
    pub groups: [Group; 2],
    pub clients: Seq<Client, 2>,
    /// The messages in flight, a bag kept sorted.
    pub network: Seq<Msg, 8>,
    pub mover: Mover,
    pub budget: Budget,
    /// Whether a group ever answered a write from its dedup table.
    pub deduplicated: bool,
}

impl State {
    pub fn group(&self, id: GroupId) -> &Group {
        &self.groups[id.index()]
    }

    pub fn group_mut(&mut self, id: GroupId) -> &mut Group {
        &mut self.groups[id.index()]
    }

    /// Puts a message in flight.
    pub fn send(&mut self, msg: Msg) {
        let at = self.network.as_slice().partition_point(|m| *m < msg);
        self.network.insert(at, msg);
    }

    /// Takes one copy of a message out of flight; false if none was.
    pub fn take(&mut self, msg: &Msg) -> bool {
        match self.network.as_slice().binary_search(msg) {
            Ok(at) => {
                self.network.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Every write id acknowledged to any client.
    pub fn acked(&self) -> WidSet {
        let mut all = WidSet::default();
        for c in &self.clients {
            all.0 |= c.acked.0;
        }
        all
    }
}
