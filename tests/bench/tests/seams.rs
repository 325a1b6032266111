//! The MCP seams run (`--bin seams`) works end to end: every system
//! starts, every listener hears every write exactly as many times as
//! there were writes, and every store operation runs, in each of two
//! rounds; each target has one ratio per round. Short cells: this checks
//! the harness, not the speed.

use serde_json::Value;

#[test]
fn the_seams_run_delivers_every_write_to_every_listener() {
    let bin = env!("CARGO_BIN_EXE_seams");
    let out = tempfile::tempdir().expect("tempdir");
    let status = std::process::Command::new(bin)
        .args([
            "--listeners",
            "1,3",
            "--writers",
            "2",
            "--duration",
            "500ms",
            "--rounds",
            "2",
            "--out",
        ])
        .arg(out.path())
        .status()
        .expect("run seams");
    assert!(status.success(), "seams failed: {status}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).expect("results.json"))
            .expect("json");
    let cells = results["cells"].as_array().expect("cells");
    let systems = ["handlestore", "redis-pubsub", "redis-streams", "nats"];
    let fan_out: Vec<&Value> = cells.iter().filter(|c| c["op"] == "fan_out").collect();
    assert_eq!(fan_out.len(), systems.len() * 2 * 2, "{cells:#?}");
    for round in [1, 2] {
        assert_eq!(fan_out.iter().filter(|c| c["round"] == round).count(), 8, "{cells:#?}");
    }
    for c in &fan_out {
        assert!(c["writes"].as_u64() > Some(0), "{c}");
        assert_eq!(c["deliveries"], c["expected"], "every listener heard every write: {c}");
    }
    let ops: Vec<&Value> = cells.iter().filter(|c| c["op"] != "fan_out").collect();
    assert_eq!(
        ops.len(),
        12,
        "three store operations on handlestore and on Redis, in each round: {cells:#?}"
    );
    assert!(ops.iter().all(|c| c["writes"].as_u64() > Some(0)), "{ops:#?}");
    let targets = results["targets"].as_array().expect("targets");
    assert_eq!(targets.len(), 5, "{targets:#?}");
    for t in targets {
        let per_round = t["per_round"].as_array().expect("per_round");
        assert_eq!(per_round.len(), 2, "a ratio per round: {t}");
        assert!(per_round.iter().all(|x| x.as_f64() > Some(0.0)), "{t}");
        assert!(t["median"].as_f64() > Some(0.0), "{t}");
    }
    assert!(out.path().join("results.md").exists());
}
