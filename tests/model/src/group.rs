//! A data group's behaviour: proposing a delivered write, and applying its
//! log's next committed entry, in order.

use crate::state::{Answer, Caller, Entry, Epoch, Group, GroupId, Msg, Role, State, Wid, WidSet};
use crate::variant::Variant;

/// What a group answers a write its role does not take.
fn refusal(role: Role) -> Answer {
    match role {
        Role::Frozen(_) | Role::Importing => Answer::Moving,
        Role::Released { to, epoch } => Answer::WrongGroup(Some((to, epoch))),
        Role::Absent | Role::Serving(_) => Answer::WrongGroup(None),
    }
}

impl State {
    /// A write request reaches the group's leader. The propose-time check
    /// is against its applied state, which may lag its log: it refuses
    /// early, or appends the write (committed: a proposal a leader change
    /// would drop is modelled as the request lost).
    pub fn propose(&mut self, id: GroupId, caller: Caller, epoch: Epoch, wid: Wid) {
        let group = self.group_mut(id);
        if group.accepts(epoch) {
            group.pending.push(Entry::Write { caller, epoch, wid });
        } else {
            let answer = refusal(group.role);
            self.send(Msg::Reply {
                caller,
                from: id,
                wid,
                answer,
            });
        }
    }

    /// Applies the group's next committed entry, as the variant does.
    pub fn apply_next(&mut self, id: GroupId, variant: Variant) {
        let group = self.group_mut(id);
        let entry = group.pending.remove(0);
        match entry {
            Entry::Write { caller, epoch, wid } => {
                let check_at_apply = variant != Variant::NoApplyTimeEpochCheck;
                let answer = self.apply_write(id, epoch, wid, check_at_apply);
                self.send(Msg::Reply {
                    caller,
                    from: id,
                    wid,
                    answer,
                });
            }
            other => apply_control(&mut self.groups[id.index()], other, variant),
        }
    }

    fn apply_write(&mut self, id: GroupId, epoch: Epoch, wid: Wid, check_at_apply: bool) -> Answer {
        let group = self.group_mut(id);
        if check_at_apply && !group.accepts(epoch) {
            return refusal(group.role);
        }
        if group.dedup.contains(wid) {
            self.deduplicated = true;
            return Answer::Ok;
        }
        group.data.push(wid);
        group.dedup.insert(wid);
        Answer::Ok
    }
}

/// Applies an entry of the move protocol; each is idempotent, a no-op
/// where the role is not the one it moves from. An import is taken only
/// if it is newer than the target's copy (its version: the source's
/// writes, append-only during a move); a freeze only if the move was not
/// aborted.
fn apply_control(group: &mut Group, entry: Entry, variant: Variant) {
    let versioned = variant != Variant::UnversionedImport;
    let fenced = variant != Variant::NoUnfreezeFence && group.move_aborted;
    match (entry, group.role) {
        (Entry::Prepare, Role::Absent) => group.role = Role::Importing,
        (Entry::Import { data, dedup }, Role::Importing) if !versioned || data.len() > group.data.len() => {
            group.data = data;
            group.dedup = dedup;
        }
        (Entry::Activate(epoch), Role::Importing) => group.role = Role::Serving(epoch),
        (Entry::Freeze, Role::Serving(epoch)) if !fenced => group.role = Role::Frozen(epoch),
        (Entry::Unfreeze, role) => {
            group.move_aborted = true;
            if let Role::Frozen(epoch) = role {
                group.role = Role::Serving(epoch);
            }
        }
        (Entry::Release { to, epoch }, Role::Serving(_) | Role::Frozen(_)) => {
            group.role = Role::Released { to, epoch };
        }
        (Entry::Drop, _) => {
            group.role = Role::Absent;
            group.data.clear();
            group.dedup = WidSet::default();
        }
        _ => {}
    }
}
