//! [`RecordRequests`]: a tower layer around rmcp's `StreamableHttpService`
//! that reads the JSON-RPC ids of the requests a POST carries and makes
//! them current while rmcp serves it. rmcp's stateless path asks its
//! session manager for the event store inline, in the request's task,
//! before it spawns the task that stores the stream's events; a
//! [`super::Resumable`] manager answers with a store bound to these ids,
//! so the stream's liveness record names the requests a follower must
//! answer for if the replica dies (docs/dev/resume.md). rmcp gives its
//! event store no other way to learn them.

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

tokio::task_local! {
    static REQUESTS: Vec<Value>;
}

/// The ids of the request being served (`None` outside a POST).
pub(super) fn current() -> Option<Vec<Value>> {
    REQUESTS.try_with(Clone::clone).ok()
}

/// The ids of the requests in a JSON-RPC body (one message or a batch),
/// as sent; notifications, responses and garbage have none.
pub(super) fn ids_of(body: &[u8]) -> Vec<Value> {
    let Ok(message) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let messages = match message {
        Value::Array(batch) => batch,
        one => vec![one],
    };
    messages
        .into_iter()
        .filter(|m| m.get("method").is_some_and(Value::is_string))
        .filter_map(|m| m.get("id").filter(|id| id.is_string() || id.is_number()).cloned())
        .collect()
}

/// The layer; see the module. rmcp reads whole bodies too, up to its
/// `max_request_body_bytes`: give the layer the same limit.
#[derive(Debug, Clone, Copy)]
pub struct RecordRequests {
    limit: usize,
}

impl RecordRequests {
    /// Bodies longer than `limit` bytes are refused (413), as rmcp does.
    pub fn new(limit: usize) -> Self {
        Self { limit }
    }
}

impl<S> tower::Layer<S> for RecordRequests {
    type Service = Recorded<S>;

    fn layer(&self, inner: S) -> Recorded<S> {
        Recorded {
            inner,
            limit: self.limit,
        }
    }
}

/// The rmcp service wrapped by [`RecordRequests`].
#[derive(Debug, Clone)]
pub struct Recorded<S> {
    inner: S,
    limit: usize,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

impl<S, B, RB> tower::Service<Request<B>> for Recorded<S>
where
    S: tower::Service<Request<Full<Bytes>>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Display,
    RB: Default + Send + 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<RB>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // The clone serves later calls; the one made ready serves this one.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let limit = self.limit;
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let body = match collect(body, limit).await {
                Ok(body) => body,
                Err(status) => return Ok(refused(status)),
            };
            let ids = if parts.method == Method::POST {
                ids_of(&body)
            } else {
                Vec::new()
            };
            let req = Request::from_parts(parts, Full::new(body));
            REQUESTS.scope(ids, inner.call(req)).await
        })
    }
}

/// The whole body, at most `limit` bytes (else the status to refuse it
/// with).
async fn collect<B>(body: B, limit: usize) -> Result<Bytes, StatusCode>
where
    B: Body,
    B::Error: Display,
{
    let mut body = std::pin::pin!(body);
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            tracing::debug!(error = %e, "request body not read");
            StatusCode::BAD_REQUEST
        })?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.remaining() > limit {
                return Err(StatusCode::PAYLOAD_TOO_LARGE);
            }
            buf.put(data);
        }
    }
    Ok(buf.freeze())
}

fn refused<RB: Default>(status: StatusCode) -> Response<RB> {
    let mut res = Response::new(RB::default());
    *res.status_mut() = status;
    res
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_ids_of_requests_are_read_as_sent() {
        let one = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#;
        assert_eq!(ids_of(one), [json!(7)]);
        let batch = br#"[{"jsonrpc":"2.0","id":"a","method":"ping"},
            {"jsonrpc":"2.0","method":"notifications/initialized"},
            {"jsonrpc":"2.0","id":3,"result":{}}]"#;
        assert_eq!(ids_of(batch), [json!("a")]);
        assert!(ids_of(b"not json").is_empty());
        assert!(ids_of(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).is_empty());
    }

    #[tokio::test]
    async fn a_body_past_the_limit_is_refused() {
        let big = Full::new(Bytes::from(vec![b' '; 11]));
        assert_eq!(collect(big, 10).await.err(), Some(StatusCode::PAYLOAD_TOO_LARGE));
        let fits = Full::new(Bytes::from_static(b"0123456789"));
        assert_eq!(collect(fits, 10).await.ok().as_deref(), Some(&b"0123456789"[..]));
    }
}
