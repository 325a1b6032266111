//! What openraft stores on this node: the Raft log in RocksDB and what
//! of it is on disk, the log read whole and checked at start, the room
//! left on the voters' disks, sitting elections out while the log is
//! repaired, and the state machine adapter. It talks to no peer.

pub mod abstain;
pub mod durability;
pub mod log_check;
pub mod log_store;
pub mod room;
pub mod state_machine;
