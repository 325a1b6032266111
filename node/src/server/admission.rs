//! Admission: how many client calls a node serves at once, and how many
//! request bytes they may hold. A call beyond `--max-concurrent-calls` is
//! answered at once, before its request is read or decoded, with
//! `UNAVAILABLE` (reason `overloaded`, retried as every `UNAVAILABLE` is)
//! and a hint of when to try again (`grpc-retry-pushback-ms`, gRPC's own
//! header), instead of queueing until the client's deadline. The clients
//! (Rust and Python) wait at least that long, then try again.
//!
//! A call holds its place until its answer has been sent (a stream, until
//! it ends). Its request's bytes are counted as they arrive, and held as
//! long: one that would take the calls past `--max-request-memory-mb` is
//! refused the same way as it arrives, before it is decoded, so that a
//! flood of the largest writes cannot take the node's memory. Its request
//! must arrive whole within [`BODY_WITHIN`]: a client that sends a call's
//! headers and then nothing (or a trickle) loses the call with
//! `DEADLINE_EXCEEDED`, and its place, then. Watches are not counted: they
//! are long-lived and bounded by `--watch-memory-mb` instead; nor is
//! `Admin.Status`, so an operator can always ask a loaded node how it is.
//! Refused calls are counted with the others, by method and code
//! (`handlestore_grpc_server_handled_total` with `grpc_code="Unavailable"`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use handlestore_proto::reason::Reason;
use http_body::Frame;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The gRPC header that tells a client when to try again.
pub use handlestore_proto::wire::PUSHBACK_HEADER;

/// How long a call's request may take to arrive once its headers have.
pub const BODY_WITHIN: Duration = Duration::from_secs(10);

/// Calls that are never refused for load.
const EXEMPT: &[&str] = &["/handlestore.v1.Watch/Watch", "/handlestore.v1.Admin/Status"];

/// The places calls take, and the request bytes they hold.
#[derive(Clone)]
pub struct Admission {
    places: Arc<Semaphore>,
    limit: usize,
    bytes: Arc<Semaphore>,
    byte_limit: usize,
}

/// The request bytes one call holds, shared by its request's body (which
/// counts them as they arrive) and its answer's (which keeps them until it
/// is sent).
type Charge = Arc<Mutex<Option<OwnedSemaphorePermit>>>;

impl Admission {
    /// `calls` calls at once, holding `bytes` of requests between them.
    pub fn new(calls: usize, bytes: usize) -> Self {
        let byte_limit = bytes.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            places: Arc::new(Semaphore::new(calls)),
            limit: calls,
            bytes: Arc::new(Semaphore::new(byte_limit)),
            byte_limit,
        }
    }

    /// How long a refused client should wait: more the longer the queue
    /// of refusals would be, within 10-200 ms.
    fn pushback_ms(&self) -> u64 {
        (self.limit as u64 / 32).clamp(10, 200)
    }

    /// `overloaded`, saying `why`, with the retry hint.
    fn refusal(&self, why: String) -> tonic::Status {
        let mut status = Reason::Overloaded.status(why);
        if let Ok(v) = self.pushback_ms().to_string().parse() {
            status.metadata_mut().insert(PUSHBACK_HEADER, v);
        }
        status
    }

    fn refuse(&self) -> Response {
        self.refusal(format!(
            "this node serves {} calls already (--max-concurrent-calls): try again shortly",
            self.limit
        ))
        .into_http::<Body>()
    }

    /// Adds `n` bytes to what `charge` holds, or refuses the call.
    fn charge(&self, charge: &Charge, n: usize) -> Result<(), tonic::Status> {
        let taken = u32::try_from(n)
            .ok()
            .and_then(|n| self.bytes.clone().try_acquire_many_owned(n).ok());
        let Some(taken) = taken else {
            return Err(self.refusal(format!(
                "this node holds {} MiB of requests in progress already (--max-request-memory-mb): try again shortly",
                self.byte_limit >> 20
            )));
        };
        let mut held = charge.lock().unwrap_or_else(|p| p.into_inner());
        match held.as_mut() {
            Some(permit) => permit.merge(taken),
            None => *held = Some(taken),
        }
        Ok(())
    }
}

/// The middleware.
pub async fn admit(State(admission): State<Admission>, req: Request, next: Next) -> Response {
    let grpc = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if !grpc || EXEMPT.contains(&req.uri().path()) {
        return next.run(req).await;
    }
    let Ok(place) = admission.places.clone().try_acquire_owned() else {
        return admission.refuse();
    };
    let charge = Charge::default();
    let metered = charge.clone();
    let req = req.map(|body| {
        Body::new(Timely {
            inner: body,
            by: Box::pin(tokio::time::sleep(BODY_WITHIN)),
            admission,
            charge: metered,
        })
    });
    next.run(req).await.map(|inner| {
        Body::new(Holding {
            inner,
            _place: place,
            _charge: charge,
        })
    })
}

/// A request's body that counts its bytes against the node's budget, and
/// fails once that is spent, or once [`BODY_WITHIN`] has passed before its
/// end (tonic answers the call with the error's code).
struct Timely {
    inner: Body,
    by: Pin<Box<tokio::time::Sleep>>,
    admission: Admission,
    charge: Charge,
}

impl http_body::Body for Timely {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            let frame = frame.map(|f| f.map_err(|e| tonic::Status::from_error(e.into())));
            let arrived = match &frame {
                Some(Ok(f)) => f.data_ref().map(bytes::Bytes::len),
                _ => None,
            };
            if let Some(n) = arrived
                && let Err(refused) = self.admission.charge(&self.charge, n)
            {
                return Poll::Ready(Some(Err(refused)));
            }
            return Poll::Ready(frame);
        }
        match self.by.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Some(Err(Reason::SlowRequest.status(format!(
                "the request did not arrive within {BODY_WITHIN:?} of its headers"
            ))))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// An answer's body that keeps its call's place until it is sent or
/// dropped.
struct Holding {
    inner: Body,
    _place: OwnedSemaphorePermit,
    _charge: Charge,
}

impl http_body::Body for Holding {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
