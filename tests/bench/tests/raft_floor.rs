//! The openraft floor tool (`--bin raft_floor`) runs and reports what it
//! measured. Few writes: this checks the tool, not the speed.

use std::process::Command;

use serde_json::Value;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_raft_floor"))
        .args(args)
        .output()
        .expect("raft_floor runs")
}

#[test]
fn reports_every_measurement_and_leaves_the_directory_clean() {
    let sync_dir = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let done = run(&[
        "--writes",
        "50",
        "--dir",
        sync_dir.path().to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let doc: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("results.json")).expect("results.json")).expect("json");
    for name in ["fdatasync alone", "write (synced)", "read-index round"] {
        let r = &doc["results"][name];
        assert_eq!(r["samples"], 50, "{name}: {doc:#}");
        let (p50, p90, p99) = (r["p50_us"].as_u64(), r["p90_us"].as_u64(), r["p99_us"].as_u64());
        assert!(p50 <= p90 && p90 <= p99 && p99.is_some(), "{name}: {doc:#}");
        assert!(stdout.contains(name), "{stdout}");
    }
    let left: Vec<_> = std::fs::read_dir(sync_dir.path()).expect("dir").collect();
    assert!(left.is_empty(), "sync files left behind: {left:?}");

    // Without --dir the log stays in memory and nothing is synced.
    let done = run(&["--writes", "20", "--out", out.path().to_str().unwrap()]);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let doc: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("results.json")).expect("results.json")).expect("json");
    assert_eq!(doc["results"]["write (in memory)"]["samples"], 20, "{doc:#}");
    assert!(doc["results"].get("fdatasync alone").is_none(), "{doc:#}");
}

#[test]
fn refuses_zero_writes_and_a_missing_directory() {
    let zero = run(&["--writes", "0"]);
    assert!(!zero.status.success());
    assert!(String::from_utf8_lossy(&zero.stderr).contains("--writes"));
    let missing = run(&["--writes", "5", "--dir", "/nonexistent/raft-floor"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/raft-floor"),
        "{}",
        String::from_utf8_lossy(&missing.stderr)
    );
}
