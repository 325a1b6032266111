//! Test harness for handlestore: starts real `handlestore` processes on free
//! loopback ports, each with its own temporary data directory, and gives
//! tests handles to kill, pause, restart and inspect them.

pub mod cluster;

pub use cluster::{TestCluster, TestClusterBuilder, free_port, free_port_run, handlestore_bin};
