//! The groups tool (`--bin groups`) measures every cell it plans and
//! reports them. Short cells: this checks the tool and what it must show
//! (quiesced groups go silent, writes are acknowledged), not the speed.

use std::process::Command;

use serde_json::Value;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_groups"))
        .args(args)
        .output()
        .expect("groups runs")
}

fn cells_of(doc: &Value, kind: &str) -> Vec<Value> {
    doc["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| c["spec"]["kind"] == kind)
        .cloned()
        .collect()
}

#[test]
fn measures_every_cell_and_quiesced_groups_go_silent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let (d, o) = (dir.path().to_str().unwrap(), out.path().to_str().unwrap());
    let done = run(&[
        "--groups",
        "1,4",
        "--rounds",
        "1",
        "--clients",
        "8",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--dir",
        d,
        "--out",
        o,
    ]);
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let doc: Value =
        serde_json::from_slice(&std::fs::read(out.path().join("results.json")).expect("results.json")).expect("json");
    // Spread at 1 and 4 groups, 4 with a writer per group, hot at 4.
    let writes: Vec<Value> = ["spread", "hot"].iter().flat_map(|k| cells_of(&doc, k)).collect();
    assert_eq!(writes.len(), 4, "{doc:#}");
    for c in &writes {
        let w = &c["writes"];
        assert!(w["writes"].as_u64() > Some(0) && w["errors"] == 0, "{c:#}");
        assert!(w["p50_us"].as_u64() <= w["p99_us"].as_u64(), "{c:#}");
        assert!(w["syncs_per_s"].as_f64() > Some(0.0), "{c:#}");
        let led: u64 = c["led"].as_array().unwrap().iter().filter_map(Value::as_u64).sum();
        assert_eq!(
            led,
            c["spec"]["groups"].as_u64().unwrap(),
            "every group has a leader: {c:#}"
        );
    }
    let idle = cells_of(&doc, "idle");
    assert_eq!(idle.len(), 2, "{doc:#}");
    for c in &idle {
        let (awake, quiet) = (
            c["awake"]["frames_per_s"].as_f64().unwrap(),
            c["quiesced"]["frames_per_s"].as_f64().unwrap(),
        );
        // Awake, every follower of every group hears ten heartbeats a second.
        assert!(awake >= 10.0 * c["spec"]["groups"].as_f64().unwrap(), "{c:#}");
        assert!(quiet < awake / 10.0, "quiesced groups still talk: {c:#}");
    }
    for table in ["Writes spread evenly", "Every write on group 0", "No writes"] {
        assert!(stdout.contains(table), "{stdout}");
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert!(left.is_empty(), "databases left behind: {left:?}");
}

#[test]
fn refuses_no_groups_no_clients_and_a_missing_directory() {
    for (args, says) in [
        (&["--groups", "0"][..], "--groups"),
        (&["--clients", "0"][..], "--clients"),
        (
            &["--groups", "1", "--rounds", "1", "--dir", "/nonexistent/groups"][..],
            "/nonexistent/groups",
        ),
    ] {
        let done = run(args);
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert!(!done.status.success() && stderr.contains(says), "{args:?}: {stderr}");
    }
}
