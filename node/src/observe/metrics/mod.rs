//! Prometheus metrics, served as `/metrics` in Prometheus' text format on
//! the client port and on `--metrics-listen`. What the node records as it
//! works is in `recorders` (one process-wide set, updated on the hot
//! paths), what is read at each scrape in `scrape` (through a function the
//! node assembles, so this module reads no other), the gRPC calls counted
//! at the port in `grpc`. Every name is listed in docs/metrics.md, and a
//! test scrapes a node and compares. No key, value or token is ever a
//! label or a value.

mod grpc;
mod recorders;
mod scrape;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::registry::Registry;

pub use grpc::{MethodStats, code_name, method_stats};
pub use recorders::{FailedBecause, Recorders, recorders};
pub use scrape::{CertificateReading, NamespaceReading, PeerClockReading, RaftReadings, Readings, ReadingsFn};

/// A node's metrics: the recorders and its readings.
#[derive(Clone)]
pub struct Metrics {
    readings: ReadingsFn,
}

impl Metrics {
    pub fn new(readings: ReadingsFn) -> Self {
        Self { readings }
    }

    /// Every metric, in Prometheus' text format (reads the database and
    /// files: call it off the async threads).
    pub fn render(&self) -> Result<String, std::fmt::Error> {
        let mut registry = Registry::default();
        recorders().register(&mut registry);
        registry.register_collector(Box::new(scrape::Scrape((self.readings)())));
        let mut out = String::new();
        prometheus_text::encode(&mut out, &registry)?;
        Ok(out)
    }

    /// The `/metrics` route's answer.
    pub async fn answer(self) -> axum::response::Response {
        match tokio::task::spawn_blocking(move || self.render()).await {
            Ok(Ok(text)) => ([(header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE)], text).into_response(),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "metrics could not be written\n").into_response(),
        }
    }

    /// Adds `/metrics` to `router`.
    pub fn add_route(&self, router: &mut axum::Router) {
        let me = self.clone();
        let r = std::mem::take(router).route("/metrics", axum::routing::get(move || me.clone().answer()));
        *router = r;
    }
}

/// Serves `/metrics` alone, in plain HTTP, on `listener`, until `shutdown`.
pub async fn serve(
    metrics: Metrics,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut router = axum::Router::new();
    metrics.add_route(&mut router);
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}
