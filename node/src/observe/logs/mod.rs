//! The process's log: lines on stderr, as text for people or one JSON
//! object per line for a log pipeline (`--log-format`), filtered by
//! `RUST_LOG`. Requests at the client port each run in a span of their own
//! (`request`), which the lines logged while serving them carry.

pub mod request;

/// How log lines are written.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One line of text per event, with its spans' fields.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `message`, the
    /// event's fields, and `span` (the innermost span's name and fields).
    Json,
}

/// Starts logging to stderr with `RUST_LOG`'s filter, or `default`;
/// openraft's lines about calls to peers are left out either way
/// ([`peer_call_noise`]).
pub fn init(default: &str, format: LogFormat) {
    use tracing_subscriber::prelude::*;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Both filters global (layers of their own, not per-layer filters of
    // the fmt layer): the callsites they disable are then never evaluated
    // again, and the level hint keeps openraft's debug spans free. As
    // per-layer filters they cost single-client writes and reads about a
    // third of their throughput (measured, bench --ab).
    let quiet = tracing_subscriber::filter::filter_fn(|m| !peer_call_noise(m));
    let layer = tracing_subscriber::fmt::layer()
        .with_target(false)
        .with_writer(std::io::stderr);
    let registry = tracing_subscriber::registry().with(filter).with(quiet);
    let _ = match format {
        LogFormat::Text => registry
            .with(layer.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())))
            .try_init(),
        LogFormat::Json => registry
            .with(
                layer
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false),
            )
            .try_init(),
    };
}

/// openraft's lines that a node says better itself: a warning and an
/// error for every call to a peer that failed (ten a second per peer that
/// is down; `raft::net::reach` says it once, then every 30 s, then when the
/// peer is back), and its warnings about messages that arrived after the
/// vote or membership they were sent under changed, which elections and
/// membership changes cause as a matter of course. Its other errors (a
/// storage error, the core stopping) stay.
pub fn peer_call_noise(m: &tracing::Metadata<'_>) -> bool {
    let target = m.target();
    if !m.is_event() || !target.starts_with("openraft") {
        return false;
    }
    let warn = *m.level() == tracing::Level::WARN;
    let names_peer = m.fields().field("target").is_some();
    target.starts_with("openraft::replication")
        || (target == "openraft::engine::handler::replication_handler" && warn)
        || (target == "openraft::core::raft_core" && (warn || names_peer))
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::prelude::*;

    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn openraft_lines_about_peer_calls_are_left_out_and_its_other_errors_kept() {
        let lines = Lines::default();
        let out = lines.clone();
        let layer = tracing_subscriber::fmt::layer()
            .with_writer(move || out.clone())
            .with_filter(tracing_subscriber::filter::filter_fn(|m| !super::peer_call_noise(m)));
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), || {
            tracing::error!(target: "openraft::replication", err = "unreachable", "RPCError");
            tracing::warn!(target: "openraft::replication", "backoff mode");
            tracing::warn!(target: "openraft::engine::handler::replication_handler", "heartbeat error");
            tracing::error!(target: "openraft::core::raft_core", target = 2, error = "timeout", "while requesting vote");
            tracing::warn!(target: "openraft::core::raft_core", "A message will be ignored because vote changed");
            tracing::error!(target: "openraft::core::raft_core", error = "io", "quit RaftCore::main on error");
            tracing::error!(target: "openraft::engine::handler::replication_handler", "update_matching");
            tracing::warn!(target: "handlestore_node::raft::net::reach", "peer 2 does not answer");
        });
        let text = String::from_utf8(lines.0.lock().expect("lock").clone()).expect("utf-8");
        let kept: Vec<&str> = text.lines().collect();
        assert_eq!(kept.len(), 3, "{text}");
        assert!(text.contains("quit RaftCore::main on error"), "{text}");
        assert!(text.contains("update_matching"), "{text}");
        assert!(text.contains("peer 2 does not answer"), "{text}");
    }
}
