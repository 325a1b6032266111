//! gRPC calls on the client port, counted as they finish by service,
//! method and code (`grpc_server_handled_total`, grpc-prometheus' names)
//! and timed from start to end (a stream's whole life): a middleware
//! around the port's routes. The code is the `grpc-status` of the answer's
//! headers (an error answered at once) or trailers (everything else); a
//! call whose client left before its end counts as `Canceled`. Labels are
//! bounded: a path outside the known services, or a method the service
//! does not have (answered `Unimplemented`), is counted as "unknown".

use std::collections::{BTreeSet, HashMap};
use std::pin::Pin;
use std::sync::{Arc, LazyLock, OnceLock, RwLock};
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderMap;
use http_body::Frame;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use tonic::Code;

use super::recorders::{GrpcCall, GrpcMethod, recorders};

/// The gRPC services a port serves, by full name ("handlestore.v1.Handles").
pub type Services = Arc<BTreeSet<&'static str>>;

const UNKNOWN: &str = "unknown";

/// The middleware: counts and times every gRPC call; anything else
/// (the health endpoints, `/metrics`) passes untouched.
pub async fn count_calls(State(services): State<Services>, req: Request, next: Next) -> Response {
    let grpc = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if !grpc {
        return next.run(req).await;
    }
    let stats = stats_of(req.uri().path(), &services);
    let started = Instant::now();
    let resp = next.run(req).await;
    let call = Call {
        stats,
        started,
        code: code_in(resp.headers()),
    };
    resp.map(|inner| {
        Body::new(Observed {
            inner,
            call: Some(call),
        })
    })
}

/// `/pkg.Service/Method` as (service, method), or "unknown" for a
/// service this port does not serve.
fn split<'p>(path: &'p str, services: &BTreeSet<&'static str>) -> (&'static str, &'p str) {
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    let service = parts.next().unwrap_or_default();
    let method = parts.next().unwrap_or_default();
    match services.get(service) {
        Some(s) if !method.is_empty() && !method.contains('/') => (s, method),
        _ => (UNKNOWN, UNKNOWN),
    }
}

fn code_in(headers: &HeaderMap) -> Option<Code> {
    headers.get("grpc-status").map(|v| Code::from_bytes(v.as_bytes()))
}

/// A code as grpc-prometheus (and so etcd's dashboards) names it.
fn code_name(code: Code) -> String {
    match code {
        Code::Ok => "OK".into(),
        Code::Cancelled => "Canceled".into(),
        other => format!("{other:?}"),
    }
}

/// A method's recorders, taken from the families once and kept: a call
/// then costs one lookup by its path, not label strings built and hashed
/// twice (the metrics cost linearizable gets at 64 clients 9.5% that way,
/// 6.5% this way: docs/dev/performance-notes.md, "What the metrics cost on
/// the read and write paths").
struct MethodStats {
    service: &'static str,
    method: String,
    seconds: Histogram,
    /// By gRPC code (0..=16).
    handled: [OnceLock<Counter>; 17],
}

impl MethodStats {
    fn new(service: &'static str, method: &str) -> Self {
        let seconds = recorders().grpc_seconds.get_or_create_owned(&GrpcMethod {
            grpc_service: service.into(),
            grpc_method: method.into(),
        });
        Self {
            service,
            method: method.into(),
            seconds,
            handled: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    fn handled(&self, code: Code) -> &Counter {
        self.handled[(code as usize).min(16)].get_or_init(|| {
            recorders().grpc_handled.get_or_create_owned(&GrpcCall {
                grpc_service: self.service.into(),
                grpc_method: self.method.clone(),
                grpc_code: code_name(code),
            })
        })
    }
}

/// Recorders by "service/method" (bounded: only the methods served, and
/// "unknown").
type Methods = RwLock<HashMap<String, Arc<MethodStats>>>;

static METHODS: LazyLock<Methods> = LazyLock::new(Methods::default);

/// The recorders of `service`'s `method`, found under `key` (no
/// allocation once they exist).
fn stats(key: &str, service: &'static str, method: &str) -> Arc<MethodStats> {
    if let Some(s) = METHODS.read().ok().and_then(|m| m.get(key).cloned()) {
        return s;
    }
    let mut methods = METHODS.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    methods
        .entry(key.to_string())
        .or_insert_with(|| Arc::new(MethodStats::new(service, method)))
        .clone()
}

/// The recorders of the call to `path`.
fn stats_of(path: &str, services: &BTreeSet<&'static str>) -> Arc<MethodStats> {
    match split(path, services) {
        (UNKNOWN, _) => stats(UNKNOWN, UNKNOWN, UNKNOWN),
        (service, method) => stats(path.trim_start_matches('/'), service, method),
    }
}

/// One call in flight.
struct Call {
    stats: Arc<MethodStats>,
    started: Instant,
    code: Option<Code>,
}

impl Call {
    fn finish(self, code: Code) {
        // A method the service does not have is "unknown", so a client
        // cannot make up labels.
        let stats = if code == Code::Unimplemented {
            let service = self.stats.service;
            stats(&format!("{service}/{UNKNOWN}"), service, UNKNOWN)
        } else {
            self.stats
        };
        stats.seconds.observe(self.started.elapsed().as_secs_f64());
        stats.handled(code).inc();
    }
}

/// The answer's body, watched for its end.
struct Observed {
    inner: Body,
    call: Option<Call>,
}

impl Observed {
    fn finish(&mut self, trailers: Option<&HeaderMap>, fallback: Code) {
        if let Some(call) = self.call.take() {
            let code = trailers.and_then(code_in).or(call.code).unwrap_or(fallback);
            call.finish(code);
        }
    }
}

impl http_body::Body for Observed {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) if frame.is_trailers() => this.finish(frame.trailers_ref(), Code::Ok),
            Poll::Ready(Some(Err(_))) => this.finish(None, Code::Unknown),
            Poll::Ready(None) => this.finish(None, Code::Ok),
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        // Dropped before its end: the client went away (or the node is
        // stopping).
        self.finish(None, Code::Cancelled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_known_services_are_unknown() {
        let services: BTreeSet<&'static str> = ["handlestore.v1.Handles"].into();
        assert_eq!(
            split("/handlestore.v1.Handles/Mint", &services),
            ("handlestore.v1.Handles", "Mint")
        );
        for path in [
            "/x.Y/Mint",
            "/handlestore.v1.Handles",
            "/handlestore.v1.Handles/a/b",
            "/",
            "",
        ] {
            assert_eq!(split(path, &services), (UNKNOWN, UNKNOWN), "{path}");
        }
    }

    #[test]
    fn codes_are_named_as_grpc_prometheus_names_them() {
        assert_eq!(code_name(Code::Ok), "OK");
        assert_eq!(code_name(Code::Cancelled), "Canceled");
        assert_eq!(code_name(Code::FailedPrecondition), "FailedPrecondition");
    }
}
