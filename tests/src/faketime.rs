//! Shifting one node's wall clock from outside, with libfaketime (Debian's
//! `faketime` package; `tests/run.sh` installs it when it can).
//!
//! Each node's process is started with libfaketime preloaded and an offset
//! file of its own; writing the file moves that node's wall clock while it
//! runs, as an NTP step or a VM resumed from a pause would. Only the wall
//! clock moves (`FAKETIME_DONT_FAKE_MONOTONIC`): a real step leaves the
//! monotonic clock alone. libfaketime reads the file again at most once a
//! second, so a shift takes effect within [`TAKES_EFFECT`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

/// How long after [`set_offset`] the node's clock has surely moved.
pub const TAKES_EFFECT: Duration = Duration::from_millis(1_500);

/// Where Debian's package puts the library (the thread-safe variant).
const CANDIDATES: [&str; 3] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
    "/usr/lib/faketime/libfaketimeMT.so.1",
];

/// The libfaketime library, or why clock faults cannot run here.
pub fn library() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("HANDLESTORE_FAKETIME_LIB") {
        return Ok(PathBuf::from(p));
    }
    CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or_else(|| {
            "libfaketime is not installed (Debian: apt-get install faketime; tests/run.sh installs it when run as \
             root or with sudo)"
                .to_string()
        })
}

/// The environment that runs a process under libfaketime with the offset
/// in `offset_file` (created at zero).
pub fn env(lib: &Path, offset_file: &Path) -> Result<Vec<(String, String)>> {
    set_offset(offset_file, 0)?;
    Ok(vec![
        ("LD_PRELOAD".into(), lib.display().to_string()),
        ("FAKETIME_TIMESTAMP_FILE".into(), offset_file.display().to_string()),
        ("FAKETIME_DONT_FAKE_MONOTONIC".into(), "1".into()),
        ("FAKETIME_CACHE_DURATION".into(), "1".into()),
    ])
}

/// Moves the clock of the process reading `offset_file` to real time plus
/// `offset_ms` (negative: behind).
pub fn set_offset(offset_file: &Path, offset_ms: i64) -> Result<()> {
    let sign = if offset_ms < 0 { '-' } else { '+' };
    let abs = offset_ms.unsigned_abs();
    let text = format!("{sign}{}.{:03}\n", abs / 1000, abs % 1000);
    // Written whole then renamed, so a reader never sees half a line.
    let tmp = offset_file.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, offset_file).with_context(|| format!("renaming to {}", offset_file.display()))?;
    Ok(())
}
