//! Tier "api": the store's API on real three-node clusters (one test binary,
//! a module per area). `tests/tier.sh api`;
//! tests/README.md lists the tiers.

mod bad_input;
mod cli_json;
mod contract;
mod error_details;
mod fuzz;
mod handle_admin;
mod overload;
mod reads;
mod replication;
mod state;
mod ttl;
mod update;
mod watch;
mod writes;
