//! Tier "system": the chaos suite's short runs, power loss on every node's
//! disk (powercut_fs), the Docker Compose cluster and the rolling upgrade
//! from the previous release, each sized for the whole machine. Built only
//! with the `system` feature: `tests/tier.sh system`; tests/README.md lists
//! the tiers.

mod chaos;
mod docker;
mod links;
mod partition;
mod powerloss;
mod side_by_side;
mod upgrade;

/// One of this tier's runs at a time: each is sized for the whole machine,
/// and two at once would measure the machine's overload instead of the
/// cluster.
static WHOLE_MACHINE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
