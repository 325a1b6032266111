//! Tier "security": TLS and authentication on real nodes, and what the
//! log tells of callers.
//! `tests/tier.sh security`;
//! tests/README.md lists the tiers.

mod auth;
mod logs;
mod root_token;
mod tls;
