//! Where this node's memory is (for the Admin status), and giving the C
//! heap's free pages back to the OS.

use std::sync::Arc;

use handlestore_proto::v1 as pb;

use crate::api::admin::MemoryProbe;
use crate::raft::LogStore;

/// Reads where this node's memory is, for the Admin status.
pub fn probe(db: Arc<rocksdb::DB>, log: LogStore) -> MemoryProbe {
    Arc::new(move || {
        let rocks = crate::storage::db::memory_use(&db);
        pb::Memory {
            rss: process_rss_bytes().unwrap_or(0),
            memtables: rocks.memtables,
            block_cache: rocks.block_cache,
            block_cache_pinned: rocks.block_cache_pinned,
            table_readers: rocks.table_readers,
            log_cache: log.cache_bytes(),
            ..Default::default()
        }
    })
}

/// This process's resident set size, from /proc (Linux; None elsewhere).
fn process_rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page_size).ok()?)
}

/// Hands the C heap's free pages back to the OS every `interval` (0: never).
///
/// RocksDB allocates through glibc's malloc, whose arenas keep what is
/// freed (flushed memtables, evicted blocks) for reuse: a loaded node's
/// glibc held 173 MiB from the OS with 114 MiB in use. `malloc_trim` gives
/// the free pages back; those reused later are faulted in again, which is
/// the cost of a short interval (docs/operations.md, "Memory"). One thread
/// per process, however many nodes it runs.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn start_malloc_trim(interval: std::time::Duration) {
    static STARTED: std::sync::Once = std::sync::Once::new();
    if interval.is_zero() {
        return;
    }
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new().name("malloc-trim".into()).spawn(move || {
            loop {
                std::thread::sleep(interval);
                let started = std::time::Instant::now();
                // SAFETY: malloc_trim only releases free memory of the
                // allocator's own arenas; glibc makes it safe to call from
                // any thread at any time.
                unsafe {
                    libc::malloc_trim(0);
                }
                crate::raft::warn_if_slow(
                    "returning free memory (malloc_trim)",
                    started,
                    format_args!("it runs every {interval:?} (--malloc-trim-interval)"),
                );
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("not returning free memory periodically: {e}");
        }
    });
}

/// Other C libraries have no `malloc_trim`: nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn start_malloc_trim(_interval: std::time::Duration) {}
