//! The Go client beside go-redis, in one run: its mint, get, put and state
//! get against three nodes, and go-redis' SET EX and GET against Redis with
//! `appendfsync always`, each at every count of goroutines calling at once,
//! driven by a Go program (`client/go/bench/cmd/clientbench`, in the module
//! client/go/bench, which alone requires go-redis).
//!
//! target/release/goclient [--tasks 1,64] [--duration 10s] [--rounds 3] [--out target/goclient] [--bin PATH]
//!
//! Needs `go` (1.26 or later) on PATH, unless `--bin` names the program
//! already built; it is built with `GOTOOLCHAIN=local` as
//! `goclient-bench` beside this binary. Every round starts both systems
//! afresh. Writes results.json (every cell of every round, and each ratio
//! per round with its median) and results.md to --out
//! (`handlestore_bench::client_rows`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use clap::Parser;
use handlestore_bench::client_rows::{self, ClientBench};

#[derive(Parser, Debug)]
#[command(about = "The Go client beside go-redis")]
struct Cli {
    #[command(flatten)]
    run: client_rows::Args,
    /// The program built from client/go/bench/cmd/clientbench (default:
    /// build it now, with the `go` on PATH).
    #[arg(long)]
    bin: Option<PathBuf>,
}

/// The ratios reported: (name, Go client's op, go-redis' op).
const RATIOS: [(&str, &str, &str); 3] = [
    (
        "Go client mint / go-redis SET EX (appendfsync always)",
        "mint",
        "set_ex",
    ),
    ("Go client linearizable get / go-redis GET", "get", "get"),
    ("Go client linearizable state get / go-redis GET", "state_get", "get"),
];

const BENCH: ClientBench = ClientBench {
    name: "goclient",
    ours: "go-client",
    theirs: "go-redis",
    ratios: &RATIOS,
};

/// The Go version client/go's go.mod files need.
const GO_MINOR: u32 = 26;

/// Builds client/go/bench/cmd/clientbench into `dir`, with the `go` on
/// PATH and no toolchain download, or says what is missing.
fn build(dir: &Path) -> Result<PathBuf> {
    let version = Command::new("go").args(["env", "GOVERSION"]).output();
    let version = match version {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => bail!("Go is missing: the Go client's rows need `go` (1.{GO_MINOR} or later) on PATH, or --bin"),
    };
    let mut parts = version.trim_start_matches("go").split('.');
    let major: u32 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    let minor: u32 = parts
        .next()
        .and_then(|m| m.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .unwrap_or(0);
    anyhow::ensure!(
        (major, minor) >= (1, GO_MINOR),
        "Go {version} is too old: the Go client's rows need 1.{GO_MINOR} or later"
    );
    let module = handlestore_tests::repo_root().join("client/go/bench");
    let bin = dir.join("goclient-bench");
    let out = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg("./cmd/clientbench")
        .env("GOTOOLCHAIN", "local")
        .current_dir(&module)
        .output()
        .with_context(|| format!("running go build in {}", module.display()))?;
    if !out.status.success() {
        bail!(
            "go build ./cmd/clientbench in {} failed:\n{}",
            module.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(bin)
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let bin = match cli.bin {
        Some(bin) => bin,
        None => {
            let exe = std::env::current_exe().context("finding this binary's directory")?;
            build(exe.parent().context("this binary has no directory")?)?
        }
    };
    anyhow::ensure!(bin.is_file(), "{} is not a file", bin.display());
    client_rows::run(&BENCH, &cli.run, || Command::new(&bin)).await
}
