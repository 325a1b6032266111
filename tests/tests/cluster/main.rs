//! Tier "cluster": a node's life in a cluster with real processes: crashes
//! (kills, power cuts, a crash at every failpoint of the write path, and
//! a Raft log damaged on disk),
//! founding, clocks, stored formats, snapshots, the peer port, full and
//! slow disks, metrics, leader transfer, reads on the leader's lease,
//! backup and restore, members known by DNS names, scaling and rolling
//! restarts as a StatefulSet does them.
//! `tests/tier.sh cluster`; tests/README.md
//! lists the tiers.

mod backup;
mod clock;
mod crash_points;
mod disk;
mod failover;
mod format;
mod founding;
mod lease;
mod log_damage;
mod metrics;
mod names;
mod peer_port;
mod processes;
mod scale;
mod slowsync;
mod snapshot;
mod transfer;
