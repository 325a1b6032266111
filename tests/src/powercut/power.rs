//! The power switch's control: `SIGUSR1` cuts the power (the cache drops
//! every unsynced write, and every call fails with EIO from then on);
//! `SIGUSR2` arms a cut at the next write to a table, manifest or snapshot
//! file (see [`Cache::arm`]). The process keeps serving EIO until it is
//! unmounted.

use std::sync::Arc;

use nix::sys::signal::{SigSet, Signal};

use super::cache::{Cache, Dropped};

/// The line the file system writes on stderr once a cut is done.
pub const CUT_DONE: &str = "powercut_fs: power cut";

/// The line the file system writes on stderr once a cut is armed.
pub const ARMED: &str = "powercut_fs: armed";

/// Blocks `SIGUSR1` and `SIGUSR2` in the calling thread, and so in every
/// thread it starts after this, and starts the one thread that waits for
/// them. Call it before any other thread starts.
pub fn cut_on_signals(cache: Arc<Cache>) -> std::io::Result<()> {
    let mut set = SigSet::empty();
    set.add(Signal::SIGUSR1);
    set.add(Signal::SIGUSR2);
    set.thread_block()?;
    std::thread::Builder::new().name("powercut".into()).spawn(move || {
        loop {
            match set.wait() {
                Ok(Signal::SIGUSR1) => say_cut(&cache.cut(), "on command"),
                Ok(Signal::SIGUSR2) => {
                    cache.arm();
                    eprintln!("{ARMED}: the next write to a table, manifest or snapshot file cuts the power");
                }
                _ => {}
            }
        }
    })?;
    Ok(())
}

/// Says on stderr that the power was cut (`how`), and what was lost.
pub fn say_cut(dropped: &Dropped, how: &str) {
    eprintln!(
        "{CUT_DONE} {how}: dropped {} unsynced bytes of {} files {:?} and undid {} directory changes not synced; every call fails with EIO from now on",
        dropped.bytes,
        dropped.files.len(),
        dropped.files,
        dropped.names
    );
}
