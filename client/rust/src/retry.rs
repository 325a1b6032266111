//! The one retry rule (`proto/vectors/retry.json`, which every client
//! runs): what the client does with a failed call, a failed write or read
//! inside a `Submit`, and a watch that failed while opening or streaming.
//!
//! 1. A reason this build knows (`proto/reasons.txt`) decides, whatever the
//!    message: the node's own message may quote a peer's TLS error, which
//!    is not this client's certificate problem.
//! 2. A reason it does not know (a newer node's) leaves it to the code.
//! 3. No reason: the status is the gRPC library's or a proxy's. A message
//!    with one of `wire::TLS_REFUSED_MARKERS` is TLS refusing the
//!    connection (a certificate, an alert, TLS to a plain port), which
//!    retrying cannot heal; else a broken connection or stream is retried.
//!
//! The caller's own deadline or cancel never reaches the rule: the call's
//! future is dropped.

use handlestore_proto::reason::{Reason, Retry, detail};
use handlestore_proto::wire::TLS_REFUSED_MARKERS;
use tonic::Code;

use crate::error::Error;

/// What to do with one failed status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decision {
    /// A call is tried again (elsewhere, after a backoff; a write with the
    /// same write id).
    pub retry: bool,
    /// A watch resumes from its position (on another node).
    pub resume: bool,
    /// TLS refused the connection: the caller gets `Unauthenticated`.
    pub tls_refused: bool,
}

/// The rule, as a function of the status alone.
pub(crate) fn decide(s: &tonic::Status) -> Decision {
    let reason = detail(s).reason;
    if let Some(known) = Reason::from_name(&reason) {
        let retry = known.retry() == Retry::Yes;
        return Decision {
            retry,
            resume: retry || known.retry() == Retry::Resume,
            tls_refused: false,
        };
    }
    let broken = matches!(
        s.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::Aborted | Code::Cancelled
    );
    let tls_refused = reason.is_empty() && tls_refused(s.message());
    // A reasonless Unknown/Internal is a stream that broke (a reset, no
    // status); with a reason it is a node's verdict.
    let broken_stream = reason.is_empty() && matches!(s.code(), Code::Unknown | Code::Internal);
    let again = !tls_refused && (broken || broken_stream);
    Decision {
        retry: again,
        resume: again,
        tls_refused,
    }
}

/// Worth trying the call again (elsewhere): the node could not serve it now.
pub(crate) fn retryable(s: &tonic::Status) -> bool {
    decide(s).retry
}

/// Worth resuming a watch from its position on another node.
pub(crate) fn resumable(s: &tonic::Status) -> bool {
    decide(s).resume
}

/// Whether a message says TLS refused the connection.
pub(crate) fn tls_refused(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    TLS_REFUSED_MARKERS.iter().any(|m| message.contains(m))
}

/// The error the caller gets for a status the client gives up on: a TLS
/// refusal says so, whatever code the gRPC library gave it.
pub(crate) fn give_up(s: tonic::Status) -> Error {
    if decide(&s).tls_refused && s.code() != Code::Unauthenticated {
        return Error::Unauthenticated(format!("TLS: {}", s.message()));
    }
    Error::from(s)
}

#[cfg(test)]
mod vectors {
    use handlestore_proto::status_details;
    use handlestore_proto::v1 as pb;
    use serde_json::Value;

    use super::*;

    /// `INVALID_ARGUMENT` → the code.
    fn code(name: &str) -> Code {
        (0..=16)
            .map(Code::from_i32)
            .find(|c| format!("{c:?}").to_ascii_uppercase() == name.replace('_', ""))
            .unwrap_or_else(|| panic!("no gRPC code {name}"))
    }

    /// The status as the node (with a reason) or a gRPC library (without)
    /// hands it over.
    fn status(case: &Value) -> tonic::Status {
        let code = code(case["code"].as_str().expect("code"));
        let message = case["message"].as_str().expect("message");
        match case["reason"].as_str() {
            None => tonic::Status::new(code, message),
            Some(reason) => {
                let detail = pb::ErrorDetail {
                    reason: reason.into(),
                    ..Default::default()
                };
                let details = status_details::encode(code, message, &detail);
                tonic::Status::with_details(code, message, details.into())
            }
        }
    }

    /// The code of the error the caller gets.
    fn error_code(e: &Error) -> &'static str {
        match e {
            Error::Unauthenticated(_) => "UNAUTHENTICATED",
            Error::Unavailable { .. } => "UNAVAILABLE",
            _ => "OTHER",
        }
    }

    /// The shared retry vectors: every case decides as the contract says,
    /// for a call and for a watch, and a TLS refusal reaches the caller as
    /// `Unauthenticated`.
    #[test]
    fn the_retry_vectors() {
        let all: Value = serde_json::from_str(include_str!("../../../proto/vectors/retry.json")).expect("vectors");
        let cases = all["cases"].as_array().expect("cases");
        assert!(cases.len() >= 40, "too few cases");
        for case in cases {
            let s = status(case);
            let d = decide(&s);
            let said = |b: bool, yes: &'static str| if b { yes } else { "give_up" };
            let name = format!("{} {:?} {:?}", case["code"], case["reason"], case["message"]);
            assert_eq!(said(d.retry, "retry"), case["call"], "call: {name}");
            assert_eq!(said(d.resume, "resume"), case["watch"], "watch: {name}");
            if let Some(want) = case["error_code"].as_str() {
                assert!(!d.retry, "{name}");
                assert_eq!(error_code(&give_up(s)), want, "error: {name}");
            }
        }
    }
}
