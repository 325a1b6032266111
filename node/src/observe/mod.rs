//! The node's instruments: Prometheus metrics and the logs. Every layer
//! writes to them; they read none (what a scrape reads is handed to them
//! by [`server::readings`](crate::server::readings)).

pub mod logs;
pub mod metrics;
