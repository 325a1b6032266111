//! One call at the client port, as the log sees it: a `request` span with
//! its method, then its namespace and caller once authorization names them
//! (`caller`), and its outcome code at the end; and how long it spent in
//! each stage (`stage`: auth, read index, waiting to apply, commit, the
//! state read). A call whose answer took longer than
//! `--slow-request-threshold` is logged at warn with its stages, every
//! other at debug (`RUST_LOG=handlestore_node=debug` shows each call).
//! Never a key, a value or a credential: the principal is the user's name.
//!
//! The record travels with the call's task (a task-local), so the code
//! that authorizes or commits notes what it did without being handed it.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::field::Empty;
use tracing::{Instrument, Span};

tokio::task_local! {
    static CURRENT: Arc<Record>;
}

/// Stages kept per call (a write retried after an auth change passes
/// auth and commit again; past this the rest are left out).
const MAX_STAGES: usize = 16;

/// Longest namespace written to the log (a refused call's may be
/// anything the client sent).
const MAX_NAMESPACE_CHARS: usize = 128;

/// What a call noted as it went.
struct Record {
    span: Span,
    noted: Mutex<Noted>,
}

#[derive(Default)]
struct Noted {
    /// The namespace and the caller are each recorded once (a span's
    /// field, recorded again, would be written twice).
    namespace_named: bool,
    principal_named: bool,
    stages: Vec<(&'static str, Duration)>,
}

/// A call in flight.
pub struct Request {
    record: Arc<Record>,
}

impl Request {
    /// A call of `method` ("handlestore.v1.Handles/Mint", or "unknown").
    pub fn start(method: &str) -> Self {
        let span = tracing::info_span!(
            "request",
            method = %method,
            namespace = Empty,
            principal = Empty,
            code = Empty
        );
        Self {
            record: Arc::new(Record {
                span,
                noted: Mutex::default(),
            }),
        }
    }

    /// Runs the call's handler as this call: in its span, with its
    /// record current for `caller` and `stage`.
    pub fn serve<F: Future>(&self, handler: F) -> impl Future<Output = F::Output> {
        CURRENT.scope(self.record.clone(), handler.instrument(self.record.span.clone()))
    }

    /// The call's span (entered while its answer streams).
    pub fn span(&self) -> &Span {
        &self.record.span
    }

    /// The call ended with `code` (as the metrics name it); its answer
    /// took `answered` (a stream: until it began). Logged at warn when
    /// `answered` reached `slow`, else at debug.
    pub fn finish(self, code: &str, answered: Duration, slow: Option<Duration>) {
        let span = &self.record.span;
        span.record("code", code);
        let stages = Stages(std::mem::take(&mut lock(&self.record.noted).stages));
        let elapsed_ms = millis(answered);
        span.in_scope(|| {
            if slow.is_some_and(|s| answered >= s) {
                tracing::warn!(elapsed_ms, stages = %stages, "slow request");
            } else {
                tracing::debug!(elapsed_ms, stages = %stages, "request");
            }
        });
    }
}

fn lock(noted: &Mutex<Noted>) -> std::sync::MutexGuard<'_, Noted> {
    noted.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Names the current call's namespace and caller (the user; none while
/// auth is off or when the credentials name nobody). The first of each
/// stays (a batch of writes is logged with its first namespace). Outside a
/// call it does nothing.
pub fn caller(namespace: Option<&str>, principal: Option<&str>) {
    let _ = CURRENT.try_with(|r| {
        let mut noted = lock(&r.noted);
        if let Some(ns) = namespace.filter(|_| !noted.namespace_named) {
            noted.namespace_named = true;
            r.span.record("namespace", bounded(ns));
        }
        if let Some(p) = principal.filter(|_| !noted.principal_named) {
            noted.principal_named = true;
            r.span.record("principal", p);
        }
    });
}

/// At most `MAX_NAMESPACE_CHARS` of `s`.
fn bounded(s: &str) -> &str {
    match s.char_indices().nth(MAX_NAMESPACE_CHARS) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

/// Awaits `work` as the current call's stage `name`.
pub async fn stage<T>(name: &'static str, work: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let out = work.await;
    note(name, started.elapsed());
    out
}

/// Runs `work` as the current call's stage `name`.
pub fn stage_now<T>(name: &'static str, work: impl FnOnce() -> T) -> T {
    let started = Instant::now();
    let out = work();
    note(name, started.elapsed());
    out
}

fn note(name: &'static str, took: Duration) {
    let _ = CURRENT.try_with(|r| {
        let mut noted = lock(&r.noted);
        if noted.stages.len() < MAX_STAGES {
            noted.stages.push((name, took));
        }
    });
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Stages as "auth=0.012ms read_index=0.8ms", in the order they ran.
struct Stages(Vec<(&'static str, Duration)>);

impl fmt::Display for Stages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, took)) in self.0.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            write!(f, "{sep}{name}={}ms", millis(*took))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_read_in_order_in_milliseconds() {
        let s = Stages(vec![
            ("auth", Duration::from_micros(12)),
            ("commit", Duration::from_micros(1_500)),
        ]);
        assert_eq!(s.to_string(), "auth=0.012ms commit=1.5ms");
        assert_eq!(Stages(vec![]).to_string(), "");
    }

    #[test]
    fn a_long_namespace_is_cut_on_a_character() {
        let long = "é".repeat(MAX_NAMESPACE_CHARS + 5);
        assert_eq!(bounded(&long).chars().count(), MAX_NAMESPACE_CHARS);
        assert_eq!(bounded("a"), "a");
    }

    #[tokio::test]
    async fn stages_are_noted_only_inside_a_call() {
        assert_eq!(stage_now("auth", || 1), 1);
        let req = Request::start("x.Y/Z");
        req.serve(async {
            stage_now("auth", || ());
            stage("commit", async {}).await;
            caller(Some("a"), Some("alice"));
        })
        .await;
        let noted = lock(&req.record.noted);
        let names: Vec<_> = noted.stages.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["auth", "commit"]);
        assert!(noted.namespace_named && noted.principal_named);
    }
}
