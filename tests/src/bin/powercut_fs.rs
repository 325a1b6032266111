//! The power-loss tests' FUSE file system (`handlestore_tests::powercut`):
//!
//! ```sh
//! target/release/powercut_fs BACKING_DIR MOUNTPOINT   # as root; serves until unmounted
//! kill -USR1 <pid>                                    # the power cut
//! umount -l MOUNTPOINT                                # then mount again to start over
//! ```

fn main() {
    let args: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    let [backing, mountpoint] = &args[..] else {
        eprintln!("usage: powercut_fs BACKING_DIR MOUNTPOINT");
        std::process::exit(2);
    };
    if let Err(e) = handlestore_tests::powercut::serve(backing, mountpoint) {
        eprintln!("powercut_fs: {e}");
        std::process::exit(1);
    }
}
