//! The MCP seams run (`--bin seams`) works end to end: every system
//! starts, every listener hears every write exactly as many times as
//! there were writes, and every store operation runs. Short cells: this
//! checks the harness, not the speed.

use serde_json::Value;

#[test]
fn the_seams_run_delivers_every_write_to_every_listener() {
    let bin = env!("CARGO_BIN_EXE_seams");
    let out = tempfile::tempdir().expect("tempdir");
    let status = std::process::Command::new(bin)
        .args(["--listeners", "1,3", "--writers", "2", "--duration", "500ms", "--out"])
        .arg(out.path())
        .status()
        .expect("run seams");
    assert!(status.success(), "seams failed: {status}");
    let cells: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).expect("results.json"))
            .expect("json");
    let systems = ["handlestore", "redis-pubsub", "redis-streams"];
    let fan_out: Vec<&Value> = cells.iter().filter(|c| c["op"] == "fan_out").collect();
    assert_eq!(fan_out.len(), systems.len() * 2, "{cells:#?}");
    for c in &fan_out {
        assert!(c["writes"].as_u64() > Some(0), "{c}");
        assert_eq!(c["deliveries"], c["expected"], "every listener heard every write: {c}");
    }
    let ops: Vec<&Value> = cells.iter().filter(|c| c["op"] != "fan_out").collect();
    assert_eq!(
        ops.len(),
        6,
        "three store operations on handlestore and on Redis: {cells:#?}"
    );
    assert!(ops.iter().all(|c| c["writes"].as_u64() > Some(0)), "{ops:#?}");
    assert!(out.path().join("results.md").exists());
}
