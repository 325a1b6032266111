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

/// Starts logging to stderr with `RUST_LOG`'s filter, or `default`.
pub fn init(default: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}
