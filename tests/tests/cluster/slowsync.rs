//! tests/tools/slowsync.c, the shim behind tests/sync-sweep.sh: built as the
//! script builds it and preloaded into `dd`, it slows exactly the syncs of
//! the process it names, and its histogram counts what each one really took.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BUCKETS: usize = 16384;

fn build_shim(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/slowsync.c");
    let so = dir.join("slowsync.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-O2", "-Wall", "-Werror", "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .status()
        .unwrap_or_else(|e| panic!("running {cc}: {e}"));
    assert!(status.success(), "{cc} failed to build {}", src.display());
    so
}

/// One `dd` that writes a block and syncs it once (`conv=fdatasync`), with
/// the shim preloaded; returns how long it ran.
fn dd(so: &Path, out: &Path, comm: &str, us: u64, stats: &Path) -> Duration {
    let start = Instant::now();
    let status = Command::new("dd")
        .args(["if=/dev/zero", "bs=512", "count=1", "conv=fdatasync", "status=none"])
        .arg(format!("of={}", out.display()))
        .env("LD_PRELOAD", so)
        .env("SLOWSYNC_COMM", comm)
        .env("SLOWSYNC_US", us.to_string())
        .env("SLOWSYNC_STATS", stats)
        .status()
        .expect("running dd");
    assert!(status.success(), "dd failed");
    start.elapsed()
}

/// Every histogram in `dir`: (file name, [(µs, count)] of its non-zero buckets).
fn histograms(dir: &Path) -> Vec<(String, Vec<(usize, u64)>)> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read stats dir") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read histogram");
        assert_eq!(bytes.len(), BUCKETS * 8, "{}", path.display());
        let buckets = bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .enumerate()
            .filter(|&(_, n)| n > 0)
            .collect();
        all.push((path.file_name().unwrap().to_string_lossy().into_owned(), buckets));
    }
    all
}

#[test]
fn the_shim_slows_and_counts_the_syncs_of_the_process_it_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let so = build_shim(dir.path());
    let stats = dir.path().join("stats");
    std::fs::create_dir(&stats).expect("stats dir");
    let out = dir.path().join("block");

    // Named: its one fdatasync lasts at least 5 ms and is counted once, in
    // the bucket of what it really took (from 5,000 µs up).
    let took = dd(&so, &out, "dd", 5000, &stats);
    assert!(took >= Duration::from_millis(5), "dd took {took:?}");
    let found = histograms(&stats);
    assert_eq!(found.len(), 1, "one histogram, dd's: {found:?}");
    let (name, buckets) = &found[0];
    assert!(name.ends_with(".syncs"), "{name}");
    assert_eq!(buckets.len(), 1, "{buckets:?}");
    let (us, count) = buckets[0];
    assert_eq!(count, 1, "dd syncs once: {buckets:?}");
    assert!((5000..BUCKETS).contains(&us), "a 5 ms sync counted at {us} µs");
    assert!(
        Duration::from_micros(us as u64) <= took,
        "counted {us} µs, but dd ran only {took:?}"
    );

    // Not named: the real call only, nothing counted. The delay is long
    // enough that a slowed sync could not go unseen on a busy machine.
    std::fs::remove_dir_all(&stats).expect("clear");
    std::fs::create_dir(&stats).expect("stats dir");
    let took = dd(&so, &out, "handlestore", 2_000_000, &stats);
    assert!(took < Duration::from_secs(2), "dd was slowed: {took:?}");
    assert!(histograms(&stats).is_empty(), "nothing is counted for dd");
}
