//! Tier "security": TLS and authentication on real nodes.
//! `tests/tier.sh security`;
//! tests/README.md lists the tiers.

mod auth;
mod tls;
