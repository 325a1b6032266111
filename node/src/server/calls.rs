//! Every gRPC call at the client port, watched from its start to its
//! end: a middleware around the port's routes that reports each call to
//! the metrics (`metrics::method_stats`: counted by code, timed) and to the
//! log (`logs::request`: a span, the stages, a line at the end). The code
//! is the `grpc-status` of the answer's headers (an error answered at
//! once) or trailers (everything else); a call whose client left before
//! its end ends `Canceled`. Anything that is not gRPC (the health
//! endpoints, `/metrics`) passes untouched.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderMap;
use http_body::Frame;
use tonic::Code;

use crate::observe::logs::request::Request as Logged;
use crate::observe::metrics::{MethodStats, code_name, method_stats};

/// What the middleware needs to know.
#[derive(Clone, Copy, Debug)]
pub struct CallsConfig {
    /// A call whose answer takes this long is logged at warn (None:
    /// never).
    pub slow: Option<Duration>,
}

/// The middleware.
pub async fn watch_calls(State(cfg): State<CallsConfig>, req: Request, next: Next) -> Response {
    let grpc = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if !grpc {
        return next.run(req).await;
    }
    let stats = method_stats(req.uri().path());
    let logged = Logged::start(stats.path());
    let started = Instant::now();
    let resp = logged.serve(next.run(req)).await;
    let call = Call {
        stats,
        logged,
        started,
        answered: started.elapsed(),
        slow: cfg.slow,
        code: code_in(resp.headers()),
    };
    resp.map(|inner| {
        Body::new(Observed {
            inner,
            call: Some(call),
        })
    })
}

fn code_in(headers: &HeaderMap) -> Option<Code> {
    headers.get("grpc-status").map(|v| Code::from_bytes(v.as_bytes()))
}

/// One call in flight.
struct Call {
    stats: &'static MethodStats,
    logged: Logged,
    started: Instant,
    /// How long the handler took to answer (a stream: to begin).
    answered: Duration,
    slow: Option<Duration>,
    /// The code of an answer that was an error at once.
    code: Option<Code>,
}

impl Call {
    fn finish(self, code: Code) {
        self.stats.finish(code, self.started.elapsed());
        self.logged.finish(code_name(code), self.answered, self.slow);
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
        // A stream's messages are made as the body is read: in the call's
        // span.
        let Observed { inner, call } = &mut *this;
        let polled = match call {
            Some(c) => c.logged.span().in_scope(|| Pin::new(inner).poll_frame(cx)),
            None => Pin::new(inner).poll_frame(cx),
        };
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
