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
//! of only a sync of the directory changed (POSIX).

use handlestore_tests::powercut::Names;

fn main() {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let names = match args.first().and_then(|a| a.to_str()) {
        Some("--journaled-names") => {
            args.remove(0);
            Names::Journaled
        }
        _ => Names::Posix,
    };
    let args: Vec<std::path::PathBuf> = args.into_iter().map(Into::into).collect();
    let [backing, mountpoint] = &args[..] else {
        eprintln!("usage: powercut_fs [--journaled-names] BACKING_DIR MOUNTPOINT");
        std::process::exit(2);
    };
    if let Err(e) = handlestore_tests::powercut::serve(backing, mountpoint, names) {
        eprintln!("powercut_fs: {e}");
        std::process::exit(1);
    }
}
