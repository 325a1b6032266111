//! The model's actions and transitions: clients sending, the network
//! delivering or losing, groups applying and crashing, the mover stepping.

use stateright::{Model, Property};

use crate::mover::MoverAction;
use crate::seq::Seq;
use crate::state::{
    Answer, Budget, Caller, Client, Group, GroupId, Mover, Msg, Role, Route, SOURCE_EPOCH, State, Step,
};
use crate::variant::{Bounds, Variant};

/// The namespace move, as a [`Model`] to check.
#[derive(Clone, Debug)]
pub struct MoveModel {
    pub variant: Variant,
    pub bounds: Bounds,
}

/// One step of the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// A client sends its current write for the first time, to its cached
    /// route.
    Submit {
        client: u8,
    },
    /// A client's timeout: it abandons its RPC and sends its current write
    /// again, same write id, to its cached route.
    Timeout {
        client: u8,
    },
    Deliver(Msg),
    Lose(Msg),
    /// A data group's leader changes: what is in flight to or from it is
    /// lost.
    Crash(GroupId),
    /// A data group applies its next committed entry.
    Apply(GroupId),
    Mover(MoverAction),
}

impl MoveModel {
    /// The model of a variant at some bounds: at most 2 clients, and 8
    /// write ids in all.
    pub fn new(variant: Variant, bounds: Bounds) -> MoveModel {
        assert!(
            bounds.clients <= 2 && bounds.write_count() <= 8,
            "bounds past what the state holds: {bounds:?}"
        );
        MoveModel { variant, bounds }
    }

    fn initial_state(&self) -> State {
        State {
            route: Route::active(GroupId::S, SOURCE_EPOCH),
            groups: [Group::new(Role::Serving(SOURCE_EPOCH)), Group::new(Role::Absent)],
            clients: (0..self.bounds.clients).fold(Seq::new(), |mut all, _| {
                all.push(Client::default());
                all
            }),
            network: Seq::new(),
            mover: Mover::At(Step::Begin),
            budget: Budget {
                losses: self.bounds.losses,
                group_crashes: self.bounds.group_crashes,
                mover_crashes: self.bounds.mover_crashes,
                timeouts: self.bounds.timeouts,
                stalls: self.bounds.stalls,
            },
            deduplicated: false,
        }
    }

    fn client_actions(&self, state: &State, actions: &mut Vec<Action>) {
        for (id, c) in (0..).zip(&state.clients) {
            if c.next >= self.bounds.writes_per_client {
                continue;
            }
            if !c.submitted {
                actions.push(Action::Submit { client: id });
            } else if state.budget.timeouts > 0 && !self.in_flight(state, id) {
                actions.push(Action::Timeout { client: id });
            }
        }
    }

    fn network_actions(&self, state: &State, actions: &mut Vec<Action>) {
        let mut last = None;
        for msg in &state.network {
            if last == Some(msg) {
                continue;
            }
            last = Some(msg);
            actions.push(Action::Deliver(*msg));
            if state.budget.losses > 0 && msg.losable() {
                actions.push(Action::Lose(*msg));
            }
        }
        for id in GroupId::ALL {
            if state.budget.group_crashes > 0 && state.network.iter().any(|m| m.losable() && m.touches(id)) {
                actions.push(Action::Crash(id));
            }
        }
    }

    /// Whether a request or a reply of the client is in flight. Its
    /// timeout fires only once they are lost, or while its write waits in
    /// a log: a request that lands late is proposed late, and the entry it
    /// would append is no different from one that waited in the log.
    fn in_flight(&self, state: &State, client: u8) -> bool {
        state.network.iter().any(|m| match *m {
            Msg::Request { caller, .. } | Msg::Reply { caller, .. } => caller.client == client,
            Msg::Propose { .. } => false,
        })
    }

    /// Sends a client's current write to its cached route, as its current
    /// attempt.
    fn send_current(&self, state: &mut State, client: u8) {
        let c = &mut state.clients[usize::from(client)];
        c.submitted = true;
        let wid = self.bounds.write_id(client, c.next);
        let ((to, epoch), caller) = (
            c.route,
            Caller {
                client,
                attempt: c.attempt,
            },
        );
        state.send(Msg::Request { caller, to, epoch, wid });
    }

    /// A reply reaches its client. One to an attempt the client abandoned
    /// is ignored. An Ok acknowledges the write; a refusal refreshes the
    /// route from M (linearizable) and sends the write again, same write
    /// id, same attempt.
    fn receive(&self, state: &mut State, caller: Caller, wid: u8, answer: Answer) {
        let c = &mut state.clients[usize::from(caller.client)];
        let waiting = c.next < self.bounds.writes_per_client && self.bounds.write_id(caller.client, c.next) == wid;
        if !waiting || caller.attempt != c.attempt {
            return;
        }
        if answer == Answer::Ok {
            c.acked.insert(wid);
            c.next += 1;
            c.submitted = false;
        } else {
            c.route = (state.route.group, state.route.epoch);
            self.send_current(state, caller.client);
        }
    }

    fn deliver(&self, state: &mut State, msg: Msg) {
        match msg {
            Msg::Request { caller, to, epoch, wid } => state.propose(to, caller, epoch, wid),
            Msg::Reply {
                caller, wid, answer, ..
            } => self.receive(state, caller, wid, answer),
            Msg::Propose { to, entry } => state.group_mut(to).pending.push(entry),
        }
    }
}

impl Model for MoveModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial_state()]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        self.client_actions(state, actions);
        self.network_actions(state, actions);
        for id in GroupId::ALL {
            if !state.group(id).pending.is_empty() {
                actions.push(Action::Apply(id));
            }
        }
        let mut mover = Vec::new();
        self.mover_actions(state, &mut mover);
        actions.extend(mover.into_iter().map(Action::Mover));
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = *last;
        match action {
            Action::Submit { client } => self.send_current(&mut state, client),
            Action::Timeout { client } => {
                state.budget.timeouts -= 1;
                state.clients[usize::from(client)].attempt += 1;
                self.send_current(&mut state, client);
            }
            Action::Deliver(msg) => {
                state.take(&msg);
                self.deliver(&mut state, msg);
            }
            Action::Lose(msg) => {
                state.budget.losses -= 1;
                state.take(&msg);
            }
            Action::Crash(id) => {
                state.budget.group_crashes -= 1;
                state.network.retain(|m| !(m.losable() && m.touches(id)));
            }
            Action::Apply(id) => state.apply_next(id, self.variant),
            Action::Mover(action) => self.mover_next(&mut state, action),
        }
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::properties::all()
    }
}
