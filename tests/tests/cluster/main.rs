//! Tier "cluster": a node's life in a cluster with real processes: crashes
//! (kills, power cuts, and a crash at every failpoint of the write path),
//! founding, clocks, stored formats, snapshots, the peer port, full and
//! slow disks, metrics, leader transfer, backup and restore.
//! `tests/tier.sh cluster`; tests/README.md
//! lists the tiers.

mod backup;
mod clock;
mod crash_points;
mod disk;
mod failover;
mod format;
mod founding;
mod metrics;
mod peer_port;
mod processes;
mod slowsync;
mod snapshot;
mod transfer;
