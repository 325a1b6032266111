//! gRPC calls on the client port, counted as they finish by service,
//! method and code (`grpc_server_handled_total`, grpc-prometheus' names)
//! and timed from start to end (a stream's whole life). [`server::calls`](crate::server::calls)
//! watches each call and reports it here. Labels are bounded: a path that
//! is not a method of the protos (`handlestore_proto::methods`) is counted
//! as "unknown", so a client cannot make up labels.

use std::collections::HashMap;
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use tonic::Code;

use super::recorders::{GrpcCall, GrpcMethod, recorders};

const UNKNOWN: &str = "unknown";

/// A method's recorders, made when first used and kept: a call then
/// costs one lookup by its path, not label strings built and hashed
/// (the metrics cost linearizable gets at 64 clients 9.5% that way, 6.5%
/// this way: docs/dev/performance-notes.md, "What the metrics cost on the
/// read and write paths").
pub struct MethodStats {
    service: &'static str,
    method: &'static str,
    /// "service/method", or "unknown".
    path: &'static str,
    seconds: OnceLock<Histogram>,
    /// By gRPC code (0..=16).
    handled: [OnceLock<Counter>; 17],
}

impl MethodStats {
    fn new(path: &'static str) -> Self {
        let (service, method) = path.split_once('/').unwrap_or((UNKNOWN, UNKNOWN));
        Self {
            service,
            method,
            path,
            seconds: OnceLock::new(),
            handled: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The method's path ("handlestore.v1.Handles/Mint"), or "unknown".
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// Counts a call that ended with `code` after `took`.
    pub fn finish(&self, code: Code, took: Duration) {
        self.seconds().observe(took.as_secs_f64());
        self.handled(code).inc();
    }

    fn seconds(&self) -> &Histogram {
        self.seconds.get_or_init(|| {
            recorders().grpc_seconds.get_or_create_owned(&GrpcMethod {
                grpc_service: self.service.into(),
                grpc_method: self.method.into(),
            })
        })
    }

    fn handled(&self, code: Code) -> &Counter {
        self.handled[(code as usize).min(16)].get_or_init(|| {
            recorders().grpc_handled.get_or_create_owned(&GrpcCall {
                grpc_service: self.service.into(),
                grpc_method: self.method.into(),
                grpc_code: code_name(code).into(),
            })
        })
    }
}

/// The recorders of every method, by path; and of "unknown".
static METHODS: LazyLock<(HashMap<&'static str, MethodStats>, MethodStats)> = LazyLock::new(|| {
    let known = handlestore_proto::methods::METHODS
        .iter()
        .map(|p| (*p, MethodStats::new(p)))
        .collect();
    (known, MethodStats::new(UNKNOWN))
});

/// The recorders of the call to `path` ("/pkg.Service/Method").
pub fn method_stats(path: &str) -> &'static MethodStats {
    let (known, unknown) = &*METHODS;
    known.get(path.strip_prefix('/').unwrap_or(path)).unwrap_or(unknown)
}

/// A code as grpc-prometheus (and so etcd's dashboards) names it.
pub fn code_name(code: Code) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "Canceled",
        "Unknown",
        "InvalidArgument",
        "DeadlineExceeded",
        "NotFound",
        "AlreadyExists",
        "PermissionDenied",
        "ResourceExhausted",
        "FailedPrecondition",
        "Aborted",
        "OutOfRange",
        "Unimplemented",
        "Internal",
        "Unavailable",
        "DataLoss",
        "Unauthenticated",
    ];
    NAMES.get(code as usize).copied().unwrap_or("Unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_are_no_method_are_unknown() {
        assert_eq!(
            method_stats("/handlestore.v1.Handles/Mint").path(),
            "handlestore.v1.Handles/Mint"
        );
        for path in [
            "/x.Y/Mint",
            "/handlestore.v1.Handles/MadeUp",
            "/handlestore.v1.Handles",
            "/handlestore.v1.Handles/Mint/b",
            "/",
            "",
        ] {
            assert_eq!(method_stats(path).path(), UNKNOWN, "{path}");
        }
    }

    #[test]
    fn codes_are_named_as_grpc_prometheus_names_them() {
        assert_eq!(code_name(Code::Ok), "OK");
        assert_eq!(code_name(Code::Cancelled), "Canceled");
        assert_eq!(code_name(Code::FailedPrecondition), "FailedPrecondition");
        assert_eq!(code_name(Code::Unauthenticated), "Unauthenticated");
        for c in 1..17 {
            assert_eq!(
                code_name(Code::from(c)),
                format!("{:?}", Code::from(c)).replace("Cancelled", "Canceled")
            );
        }
    }
}
