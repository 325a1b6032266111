//! Tier "security": TLS and authentication on real nodes.
//! `cargo test --release -p handlestore-tests --test security`;
//! tests/README.md lists the tiers.

mod auth;
mod tls;
