//! The power-loss tests' FUSE file system (`handlestore_tests::powercut`):
//!
//! ```sh
//! target/release/powercut_fs BACKING_DIR MOUNTPOINT   # as root; serves until unmounted
//! kill -USR1 <pid>                                    # the power cut
//! umount -l MOUNTPOINT                                # then mount again to start over
//! ```
//!
//! With `--journaled-names` first, a sync of any file or directory makes
//! every name change before it durable (ext4's and XFS' journal), instead
//! of only a sync of the directory changed (POSIX). With `--no-size`,
//! `statfs` reports no size at all (every count 0), as LazyFS does.

use handlestore_tests::powercut::{Names, Size};

fn main() {
    let mut names = Names::Posix;
    let mut size = Size::Backing;
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    while let Some(flag) = args.first().and_then(|a| a.to_str()).filter(|a| a.starts_with("--")) {
        match flag {
            "--journaled-names" => names = Names::Journaled,
            "--no-size" => size = Size::Unknown,
            _ => usage(),
        }
        args.remove(0);
    }
    let args: Vec<std::path::PathBuf> = args.into_iter().map(Into::into).collect();
    let [backing, mountpoint] = &args[..] else { usage() };
    if let Err(e) = handlestore_tests::powercut::serve(backing, mountpoint, names, size) {
        eprintln!("powercut_fs: {e}");
        std::process::exit(1);
    }
}

fn usage() -> ! {
    eprintln!("usage: powercut_fs [--journaled-names] [--no-size] BACKING_DIR MOUNTPOINT");
    std::process::exit(2);
}
