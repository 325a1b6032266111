//! The power switch's control: `SIGUSR1` cuts the power (the cache drops
//! every unsynced write, and every call fails with EIO from then on). The
//! process keeps serving EIO until it is unmounted.

use std::sync::Arc;

use nix::sys::signal::{SigSet, Signal};

use super::cache::Cache;

/// The line the file system writes on stderr once a cut is done.
pub const CUT_DONE: &str = "powercut_fs: power cut";

/// Blocks `SIGUSR1` in the calling thread, and so in every thread it
/// starts after this, and starts the one thread that waits for it. Call it
/// before any other thread starts.
pub fn cut_on_sigusr1(cache: Arc<Cache>) -> std::io::Result<()> {
    let mut set = SigSet::empty();
    set.add(Signal::SIGUSR1);
    set.thread_block()?;
    std::thread::Builder::new().name("powercut".into()).spawn(move || {
        loop {
            if set.wait() == Ok(Signal::SIGUSR1) {
                let dropped = cache.cut();
                eprintln!(
                    "{CUT_DONE}: dropped {} unsynced bytes of {} files {:?}; every call fails with EIO from now on",
                    dropped.bytes,
                    dropped.files.len(),
                    dropped.files
                );
            }
        }
    })?;
    Ok(())
}
