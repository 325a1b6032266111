//! Protocol limits: what a node accepts at most, and the defaults both
//! sides assume. A node may be configured tighter (`node::config::Limits`);
//! a client keeps its requests within these.

use std::time::Duration;

/// The namespace of a request that names none.
pub const DEFAULT_NAMESPACE: &str = "default";
/// Longest namespace, store name or handle id prefix.
pub const MAX_NAME_LEN: usize = 64;
/// Longest state key or prefix, in bytes (the node's default).
pub const MAX_KEY_BYTES: usize = 1024;
/// Largest value, in bytes (the node's default, `--max-value-bytes`).
pub const MAX_VALUE_BYTES: usize = 1 << 20;
/// Longest TTL: far beyond any session, short enough never to overflow
/// unix milliseconds.
pub const MAX_TTL: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Most items in one batch store or batch retrieve.
pub const MAX_BATCH_ITEMS: usize = 1000;
/// Most value bytes in one batch store.
pub const MAX_BATCH_BYTES: usize = 4 << 20;

/// Most writes in one `Writes.Submit` call.
pub const MAX_SUBMIT_WRITES: usize = 1000;
/// Most reads in one `Reads.Submit` call.
pub const MAX_SUBMIT_READS: usize = 1000;
/// Most bytes of answers one `Reads.Submit` response carries, unless a
/// node's single answer may be larger (`--max-value-bytes`): a read whose
/// answer would pass it is not served in that call (`batch_full`).
pub const MAX_READS_RESPONSE_BYTES: usize = 4 << 20;

/// Most keys one prefix delete removes, and how many when none is asked.
pub const MAX_PREFIX_DELETE: u32 = 10_000;
pub const DEFAULT_PREFIX_DELETE: u32 = 1000;

/// Most keys in one list page, how many when none is asked, and the value
/// bytes after which a page ends early.
pub const MAX_PAGE: u32 = 1000;
pub const DEFAULT_PAGE: u32 = 100;
pub const MAX_PAGE_BYTES: usize = 4 << 20;

/// How often a node tells an idle watch that asked for progress the
/// revision it reached; a client that hears nothing for a few of these
/// takes the node for lost and resumes elsewhere.
pub const WATCH_PROGRESS_EVERY: Duration = Duration::from_secs(2);
