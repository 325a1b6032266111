//! The A/B mode: every system built from this repository runs twice in each
//! round, once with this build (A) and once with another (B, `--ab DIR`),
//! B right after A, so that a change is judged against its parent on the
//! same machine in the same minutes. Each A cell is reported as its ratio
//! to the B cell of the same round (above 1: this build is faster, or its
//! p99 longer), and the median over rounds.

use std::path::{Path, PathBuf};

use super::Row;
use super::analysis::{Target, median};

/// The suffix of a B system's name: `handlestore@b`.
pub const B: &str = "@b";

/// The system a name runs: `handlestore@b` runs `handlestore`.
pub fn base(system: &str) -> &str {
    system.strip_suffix(B).unwrap_or(system)
}

/// Whether the system runs this repository's binaries (the node, or the
/// cart_server example): those are the ones an A/B run doubles. The
/// FastMCP, TypeScript and Java servers over a cluster run B's node under
/// this tree's Python, Node.js or Java cart jar.
fn is_ours(system: &str) -> bool {
    let s = base(system);
    s.starts_with("handlestore")
        || s.starts_with("cart-")
        || matches!(s, "fastmcp" | "fastmcp-handles" | "ts-cart" | "java-cart")
}

/// The systems in run order, each of ours followed by its B twin.
pub fn with_twins(systems: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for s in systems {
        out.push(s.clone());
        if is_ours(s) && !s.ends_with(B) {
            out.push(format!("{s}{B}"));
        }
    }
    out
}

/// The node binary `system` runs: B's for a B system, none (this build's)
/// otherwise.
pub fn bin_for(system: &str, b_dir: Option<&Path>) -> Option<PathBuf> {
    match b_dir {
        Some(dir) if system.ends_with(B) => Some(dir.join("handlestore")),
        _ => None,
    }
}

/// Checks that `dir` holds a B build: the node and the cart_server example.
pub fn check_build(dir: &Path) -> anyhow::Result<()> {
    for bin in [dir.join("handlestore"), dir.join("examples").join("cart_server")] {
        anyhow::ensure!(
            bin.is_file(),
            "--ab {}: {} is missing (give the release directory of the other build)",
            dir.display(),
            bin.display()
        );
    }
    Ok(())
}

/// For each B cell: the A cell's throughput and p99 as ratios to it, in
/// the same round, the median over rounds beside each round's own.
pub fn ratios(rows: &[Row]) -> Vec<Target> {
    let mut out = Vec::new();
    let mut seen: Vec<(&str, &str, usize)> = Vec::new();
    for b in rows.iter().filter(|r| r.system.ends_with(B)) {
        let key = (b.system.as_str(), b.op.as_str(), b.concurrency);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let pairs = pairs(rows, b);
        let name = format!("A/B {} {} x{}", base(&b.system), b.op, b.concurrency);
        out.push(ratio(
            format!("{name} throughput"),
            pairs.iter().map(|(a, b)| a.throughput / b.throughput),
        ));
        out.push(ratio(
            format!("{name} p99"),
            pairs.iter().map(|(a, b)| a.p99_us as f64 / b.p99_us.max(1) as f64),
        ));
    }
    out
}

/// Each round's (A, B) cells of the same operation and concurrency as `b`.
fn pairs<'a>(rows: &'a [Row], b: &Row) -> Vec<(&'a Row, &'a Row)> {
    let same = |r: &&Row, system: &str| r.system == system && r.op == b.op && r.concurrency == b.concurrency;
    rows.iter()
        .filter(|r| same(r, &b.system))
        .filter_map(|bb| {
            rows.iter()
                .filter(|r| same(r, base(&b.system)))
                .find(|a| a.round == bb.round)
                .map(|a| (a, bb))
        })
        .collect()
}

fn ratio(name: String, each: impl Iterator<Item = f64>) -> Target {
    let per_round: Vec<Option<f64>> = each.map(|v| v.is_finite().then_some(v)).collect();
    Target {
        name,
        value: median(per_round.iter().flatten().copied().collect()),
        goal: "reported".into(),
        met: None,
        per_round,
        met_in_rounds: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(round: usize, system: &str, throughput: f64, p99_us: u64) -> Row {
        Row {
            round: Some(round),
            system: system.into(),
            op: "mint".into(),
            concurrency: 64,
            ops: 1,
            errors: 0,
            seconds: 1.0,
            throughput,
            p50_us: 1,
            p99_us,
            p999_us: 1,
            server_cpu_us: None,
            client_cpu_us: None,
            server_peak_rss_mib: Vec::new(),
            warmup_s: None,
            first_error: None,
        }
    }

    #[test]
    fn each_of_our_systems_is_followed_by_its_twin_and_the_others_run_once() {
        let systems: Vec<String> = [
            "fsync",
            "handlestore",
            "etcd",
            "cart-memory",
            "fastmcp",
            "fastmcp-memory",
            "java-cart",
            "java-cart-memory",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            with_twins(&systems),
            [
                "fsync",
                "handlestore",
                "handlestore@b",
                "etcd",
                "cart-memory",
                "cart-memory@b",
                "fastmcp",
                "fastmcp@b",
                "fastmcp-memory",
                "java-cart",
                "java-cart@b",
                "java-cart-memory"
            ]
        );
        assert_eq!(base("cart-memory@b"), "cart-memory");
        let dir = Path::new("/b");
        assert_eq!(bin_for("handlestore@b", Some(dir)), Some(dir.join("handlestore")));
        assert_eq!(bin_for("handlestore", Some(dir)), None);
        assert_eq!(bin_for("handlestore@b", None), None);
    }

    #[test]
    fn an_a_cell_is_compared_with_the_b_cell_of_its_own_round() {
        // Round 2's A is slower than round 1's B, but faster than its own.
        let rows = vec![
            row(1, "handlestore", 1100.0, 50),
            row(1, "handlestore@b", 1000.0, 100),
            row(2, "handlestore@b", 600.0, 100),
            row(2, "handlestore", 900.0, 200),
            row(3, "handlestore", 1000.0, 100),
            row(3, "handlestore@b", 1000.0, 100),
            row(1, "etcd", 5.0, 1),
        ];
        let t = ratios(&rows);
        assert_eq!(t.len(), 2, "{t:#?}");
        assert_eq!(t[0].name, "A/B handlestore mint x64 throughput");
        assert_eq!(t[0].per_round, vec![Some(1.1), Some(1.5), Some(1.0)]);
        assert_eq!(t[0].value, Some(1.1));
        assert_eq!(t[1].per_round, vec![Some(0.5), Some(2.0), Some(1.0)]);
        assert_eq!((t[1].value, t[1].met), (Some(1.0), None));
    }
}
