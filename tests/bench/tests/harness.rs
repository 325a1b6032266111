//! The benchmark harness itself works end to end: every system starts, every
//! operation runs without errors, and the report (rows, targets, plot) is
//! complete. Short cells: this checks the harness, not the speed.

use std::time::Duration;

use handlestore_bench::{self as bench, BenchConfig, Length};

/// One round of 500 ms cells of every operation of `systems`.
fn every_op(systems: &[&str], concurrency: &[usize], dir: &std::path::Path) -> BenchConfig {
    BenchConfig {
        systems: systems.iter().map(|s| s.to_string()).collect(),
        concurrency: concurrency.to_vec(),
        length: Length::For(Duration::from_millis(500)),
        data_dir: dir.to_path_buf(),
        ops: Vec::new(),
        rounds: 1,
        b_build: None,
        java_warmup: Duration::ZERO,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn harness_runs_every_system() {
    let dir = tempfile::tempdir().expect("tempdir");
    let systems = [&bench::SYSTEMS[..], &bench::HISTORY_SYSTEMS[..]].concat();
    let cfg = every_op(&systems, &[1, 64], dir.path());
    let rows = bench::run(&cfg).await.expect("bench run");
    // fsync once; handlestore 6 ops, secured handlestore 2, each of the
    // three etcds 6, each NATS 4, each Redis 3, carts in memory and over
    // each Redis 1; at 2 levels.
    assert_eq!(
        rows.len(),
        1 + (6 + 2 + 6 + 6 + 6 + 4 + 4 + 3 + 3 + 1 + 1 + 1) * 2,
        "{rows:#?}"
    );
    for r in &rows {
        assert!(r.ops > 0, "{r:?}");
        assert_eq!(r.errors, 0, "{r:?}");
        assert!(r.p50_us <= r.p99_us && r.p99_us <= r.p999_us, "{r:?}");
        // CPU per operation: every system with server processes has it
        // (read from /proc while they ran); the fsync floor has none.
        assert_eq!(r.server_cpu_us.is_some(), r.system != "fsync", "{r:?}");
        assert!(r.client_cpu_us.is_some(), "{r:?}");
        // And each server process's peak memory during the cell.
        assert_eq!(r.server_peak_rss_mib.is_empty(), r.system == "fsync", "{r:?}");
        assert!(r.server_peak_rss_mib.iter().all(|m| *m >= 1.0), "{r:?}");
    }
    // Every target but the FastMCP, TypeScript and Java ones (their
    // systems need Python, Node.js or Java; the tests below run them).
    let targets = bench::targets(&rows);
    assert!(
        targets.iter().all(|t| t.value.is_some()
            || t.name.starts_with("FastMCP")
            || t.name.starts_with("TypeScript")
            || t.name.starts_with("Java")),
        "{targets:#?}"
    );
    let svg = dir.path().join("plot.svg");
    bench::plot::svg(&rows, "test", &svg).expect("plot");
    let text = std::fs::read_to_string(&svg).expect("svg");
    assert!(
        text.contains("handlestore mint") && text.contains("etcd put"),
        "legend in the plot"
    );
}

/// `--ops` measures only the named operations of each system.
#[tokio::test(flavor = "multi_thread")]
async fn ops_filter_keeps_only_named_operations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = BenchConfig {
        systems: vec!["fsync".into(), "redis".into()],
        concurrency: vec![1, 4],
        length: Length::For(Duration::from_millis(200)),
        data_dir: dir.path().to_path_buf(),
        ops: vec!["get".into()],
        rounds: 1,
        b_build: None,
        java_warmup: Duration::ZERO,
    };
    let unknown = BenchConfig {
        ops: vec!["get".into(), "gte".into()],
        ..cfg.clone()
    };
    let err = bench::run(&unknown).await.expect_err("an unknown operation is refused");
    assert!(err.to_string().contains("\"gte\""), "{err}");
    let rows = bench::run(&cfg).await.expect("bench run");
    let names: Vec<(String, String, usize)> = rows
        .iter()
        .map(|r| (r.system.clone(), r.op.clone(), r.concurrency))
        .collect();
    assert_eq!(
        names,
        vec![("redis".into(), "get".into(), 1), ("redis".into(), "get".into(), 4)],
        "{rows:#?}"
    );
}

/// `--data-dir` holds handlestore's nodes too, not only the other systems'
/// data: measuring on another file system (tmpfs, another disk) must move
/// every system there.
#[tokio::test(flavor = "multi_thread")]
async fn handlestore_nodes_keep_their_data_under_the_data_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = BenchConfig {
        systems: vec!["handlestore".into()],
        concurrency: vec![1],
        length: Length::For(Duration::from_millis(300)),
        data_dir: dir.path().to_path_buf(),
        ops: vec!["mint".into()],
        rounds: 1,
        b_build: None,
        java_warmup: Duration::ZERO,
    };
    // The cluster's directory is removed when the run ends: look while it runs.
    let root = dir.path().join("handlestore");
    let watch = tokio::spawn(async move {
        loop {
            let found = std::fs::read_dir(&root).into_iter().flatten().flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with("handlestore-test-") && e.path().join("n1").is_dir()
            });
            if found {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let rows = bench::run(&cfg).await.expect("bench run");
    assert_eq!(rows.len(), 1, "{rows:#?}");
    tokio::time::timeout(Duration::from_secs(1), watch)
        .await
        .expect("node 1's data never appeared under --data-dir/handlestore")
        .expect("watcher");
}

/// `--count`: each cell runs exactly that many operations, shared by its
/// clients, however many clients there are.
#[tokio::test(flavor = "multi_thread")]
async fn a_counted_cell_runs_exactly_that_many_operations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = BenchConfig {
        systems: vec!["fsync".into(), "redis".into()],
        concurrency: vec![1, 7, 256],
        // Not a multiple of 7, and fewer than 256 clients.
        length: Length::Ops(101),
        data_dir: dir.path().to_path_buf(),
        ops: vec!["fdatasync".into(), "set_ex".into()],
        rounds: 1,
        b_build: None,
        java_warmup: Duration::ZERO,
    };
    let rows = bench::run(&cfg).await.expect("bench run");
    let cells: Vec<(&str, usize)> = rows.iter().map(|r| (r.system.as_str(), r.concurrency)).collect();
    assert_eq!(
        cells,
        vec![("fsync", 1), ("redis", 1), ("redis", 7), ("redis", 256)],
        "{rows:#?}"
    );
    for r in &rows {
        assert_eq!((r.ops, r.errors), (101, 0), "{r:?}");
        assert!(r.seconds > 0.0 && r.throughput > 0.0, "{r:?}");
    }
}

/// `--rounds`: the whole run again, every system started afresh, the
/// systems in reverse order every other round; the report's rows say
/// their round, and the medians give one row per cell.
#[tokio::test(flavor = "multi_thread")]
async fn rounds_repeat_the_run_in_alternating_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = BenchConfig {
        systems: vec!["fsync".into(), "redis".into()],
        concurrency: vec![1, 4],
        length: Length::Ops(50),
        data_dir: dir.path().to_path_buf(),
        ops: vec!["fdatasync".into(), "set_ex".into()],
        rounds: 3,
        b_build: None,
        java_warmup: Duration::ZERO,
    };
    let rows = bench::run(&cfg).await.expect("bench run");
    let cells: Vec<(Option<usize>, &str, usize)> = rows
        .iter()
        .map(|r| (r.round, r.system.as_str(), r.concurrency))
        .collect();
    assert_eq!(
        cells,
        vec![
            (Some(1), "fsync", 1),
            (Some(1), "redis", 1),
            (Some(1), "redis", 4),
            (Some(2), "redis", 1),
            (Some(2), "redis", 4),
            (Some(2), "fsync", 1),
            (Some(3), "fsync", 1),
            (Some(3), "redis", 1),
            (Some(3), "redis", 4),
        ],
        "{rows:#?}"
    );
    for r in &rows {
        assert_eq!((r.ops, r.errors), (50, 0), "{r:?}");
    }
    let medians = bench::medians(&rows);
    assert_eq!(medians.len(), 3, "{medians:#?}");
    assert!(
        medians.iter().all(|r| r.round.is_none() && r.ops == 150),
        "{medians:#?}"
    );
    // Each round's systems were stopped and their data removed before
    // the next: nothing is left under the data directory.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("data dir")
        .flatten()
        .flat_map(|round| std::fs::read_dir(round.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let zero = BenchConfig { rounds: 0, ..cfg };
    assert!(bench::run(&zero).await.is_err(), "zero rounds is refused");
}

/// Runs the `bench` binary's shortest measurement (20 `fdatasync`s) with its
/// data in `data`: its stderr and results.json.
fn bench_fsync_in(data: &std::path::Path) -> (String, serde_json::Value) {
    let out = tempfile::tempdir().expect("tempdir");
    let done = std::process::Command::new(env!("CARGO_BIN_EXE_bench"))
        .args("--systems fsync --ops fdatasync --concurrency 1 --count 20".split(' '))
        .arg("--data-dir")
        .arg(data)
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("bench runs");
    let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
    assert!(
        done.status.success(),
        "{}\n{stderr}",
        String::from_utf8_lossy(&done.stdout)
    );
    let json = std::fs::read_to_string(out.path().join("results.json")).expect("results.json");
    (stderr, serde_json::from_str(&json).expect("json"))
}

/// The `bench` binary creates a `--data-dir` that does not exist yet, and
/// leaves nothing in it.
#[test]
fn the_bench_binary_creates_a_missing_data_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("not").join("there");
    let (stderr, report) = bench_fsync_in(&data);
    let left: Vec<_> = std::fs::read_dir(&data)
        .expect("the data dir was created")
        .flatten()
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // What the data was on is recorded, and a warning printed only if it
    // was memory.
    let fs = bench::fs::type_of(&data).expect("file system of the data dir");
    assert_eq!(report["machine"]["data_fs"], fs.as_str(), "{report:#}");
    assert_eq!(
        stderr.contains("where a sync costs nothing"),
        bench::fs::is_memory(&fs),
        "{stderr}"
    );
}

/// Data on tmpfs, where a sync costs nothing, is measured but called out.
#[test]
fn the_bench_binary_warns_when_the_data_is_on_tmpfs() {
    let shm = std::path::Path::new("/dev/shm");
    if bench::fs::type_of(shm).as_deref() != Some("tmpfs") {
        eprintln!("skipped: /dev/shm is not a tmpfs mount on this machine");
        return;
    }
    let dir = tempfile::tempdir_in(shm).expect("tempdir in /dev/shm");
    let (stderr, report) = bench_fsync_in(dir.path());
    assert!(stderr.contains("is on tmpfs, where a sync costs nothing"), "{stderr}");
    assert_eq!(report["machine"]["data_fs"], "tmpfs", "{report:#}");
}

/// The overload systems: a fleet of clients, each with its own
/// connections, against three nodes as shipped and with admission off;
/// each row gives every node's peak memory.
#[tokio::test(flavor = "multi_thread")]
async fn overload_systems_run_and_give_each_nodes_peak_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = every_op(&bench::OVERLOAD_SYSTEMS, &[256], dir.path());
    let rows = bench::run(&cfg).await.expect("bench run");
    assert_eq!(rows.len(), 2 * 2, "{rows:#?}");
    for r in &rows {
        assert!(r.ops > 0 && r.errors == 0, "{r:?}");
        assert_eq!(r.server_peak_rss_mib.len(), 3, "one per node: {r:?}");
        assert!(r.server_peak_rss_mib.iter().all(|m| *m >= 1.0), "{r:?}");
    }
}

/// The FastMCP systems, where the tests' Python environment exists: each
/// starts its servers and runs the cart flow without errors, and the
/// FastMCP targets have their values.
#[tokio::test(flavor = "multi_thread")]
async fn python_systems_run_the_cart_flow() {
    if let Err(why) = handlestore_tests::python::interpreter() {
        println!("SKIPPED: the FastMCP systems need the tests' Python environment: {why}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = every_op(&bench::PYTHON_SYSTEMS, &[1, 64], dir.path());
    let rows = bench::run(&cfg).await.expect("bench run");
    assert_eq!(rows.len(), bench::PYTHON_SYSTEMS.len() * 2, "{rows:#?}");
    for r in &rows {
        assert!(r.ops > 0 && r.errors == 0, "{r:?}");
    }
    let targets = bench::targets(&rows);
    let fastmcp: Vec<_> = targets.iter().filter(|t| t.name.starts_with("FastMCP")).collect();
    assert_eq!(fastmcp.len(), 3, "{targets:#?}");
    assert!(fastmcp.iter().all(|t| t.value.is_some()), "{fastmcp:#?}");
}

/// The TypeScript cart systems, where Node.js and client/ts's node_modules
/// exist: each starts its servers and runs the cart flow without errors, and
/// the TypeScript targets have their values.
#[tokio::test(flavor = "multi_thread")]
async fn typescript_systems_run_the_cart_flow() {
    if let Err(why) = bench::typescript::Node::find() {
        println!("SKIPPED: the TypeScript cart systems: {why:#}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = every_op(&bench::TS_SYSTEMS, &[1, 64], dir.path());
    let rows = bench::run(&cfg).await.expect("bench run");
    assert_eq!(rows.len(), bench::TS_SYSTEMS.len() * 2, "{rows:#?}");
    for r in &rows {
        assert!(r.ops > 0 && r.errors == 0, "{r:?}");
    }
    let targets = bench::targets(&rows);
    let ts: Vec<_> = targets.iter().filter(|t| t.name.starts_with("TypeScript")).collect();
    assert_eq!(ts.len(), 2, "{targets:#?}");
    assert!(ts.iter().all(|t| t.value.is_some()), "{ts:#?}");
}

/// The Java cart systems, where Java 17 and Maven exist: the jar is built
/// once, each system starts its JVMs and runs the cart flow without errors
/// after a short warm-up (every row says how long), and the Java targets
/// have their values.
#[tokio::test(flavor = "multi_thread")]
async fn java_systems_run_the_cart_flow() {
    if let Err(why) = bench::java::cart_jar().await {
        println!("SKIPPED: the Java cart systems: {why:#}");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = BenchConfig {
        java_warmup: Duration::from_secs(1),
        ..every_op(&bench::JAVA_SYSTEMS, &[1, 64], dir.path())
    };
    let rows = bench::run(&cfg).await.expect("bench run");
    assert_eq!(rows.len(), bench::JAVA_SYSTEMS.len() * 2, "{rows:#?}");
    for r in &rows {
        assert!(r.ops > 0 && r.errors == 0, "{r:?}");
        assert!(r.warmup_s.is_some_and(|s| s > 0.0), "{r:?}");
    }
    let targets = bench::targets(&rows);
    let java: Vec<_> = targets.iter().filter(|t| t.name.starts_with("Java")).collect();
    assert_eq!(java.len(), 2, "{targets:#?}");
    assert!(java.iter().all(|t| t.value.is_some()), "{java:#?}");
}

/// `--ab`: each system of ours runs again on the other build, right after
/// this build's (the order reversed in even rounds), and each of its cells
/// gets its ratios; the B systems really run the other build's binaries.
#[tokio::test(flavor = "multi_thread")]
async fn ab_runs_each_system_of_ours_on_both_builds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let release = handlestore_tests::handlestore_bin()
        .parent()
        .expect("release dir")
        .to_path_buf();
    // The other build: this one's node, and a cart_server that leaves a
    // mark when it starts.
    let b = dir.path().join("b");
    std::fs::create_dir_all(b.join("examples")).expect("mkdir");
    std::os::unix::fs::symlink(release.join("handlestore"), b.join("handlestore")).expect("symlink");
    let wrapper = b.join("examples/cart_server");
    let real = release.join("examples/cart_server");
    let script = format!(
        "#!/bin/sh\ntouch '{}'\nexec '{}' \"$@\"\n",
        b.join("used").display(),
        real.display()
    );
    std::fs::write(&wrapper, script).expect("wrapper");
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let cfg = BenchConfig {
        systems: vec!["fsync".into(), "cart-memory".into()],
        concurrency: vec![1],
        length: Length::For(Duration::from_millis(300)),
        data_dir: dir.path().join("data"),
        ops: Vec::new(),
        rounds: 2,
        b_build: Some(b.clone()),
        java_warmup: Duration::ZERO,
    };
    let rows = bench::run(&cfg).await.expect("bench run");
    let order: Vec<(&str, Option<usize>)> = rows.iter().map(|r| (r.system.as_str(), r.round)).collect();
    assert_eq!(
        order,
        [
            ("fsync", Some(1)),
            ("cart-memory", Some(1)),
            ("cart-memory@b", Some(1)),
            ("cart-memory@b", Some(2)),
            ("cart-memory", Some(2)),
            ("fsync", Some(2)),
        ]
    );
    assert!(b.join("used").exists(), "the B system ran B's cart_server");
    let ab = bench::ab::ratios(&rows);
    assert_eq!(ab.len(), 2, "{ab:#?}");
    assert!(
        ab.iter().all(|t| t.per_round.len() == 2 && t.value.is_some()),
        "{ab:#?}"
    );
    // A directory without the other build is refused before anything runs.
    let missing = BenchConfig {
        b_build: Some(dir.path().join("nothing")),
        java_warmup: Duration::ZERO,
        ..cfg
    };
    assert!(bench::run(&missing).await.is_err());
}
