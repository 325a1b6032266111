//! The Python client beside redis-py, in one run: its mint, get, put and
//! state get against three nodes, and redis-py's SET EX and GET against Redis with
//! `appendfsync always`, each at every task count, driven by the tests'
//! Python environment (`tests/python/client_bench.py`).
//!
//! target/release/pyclient [--tasks 1,64] [--duration 10s] [--rounds 3] [--out target/pyclient]
//!
//! Every round starts both systems afresh. Writes results.json (every
//! cell of every round, and each ratio per round with its median) and
//! results.md to --out (`handlestore_bench::client_rows`).

use std::process::Command;

use anyhow::Result;
use clap::Parser;
use handlestore_bench::client_rows::{self, ClientBench};

#[derive(Parser, Debug)]
#[command(about = "The Python client beside redis-py")]
struct Cli {
    #[command(flatten)]
    run: client_rows::Args,
}

/// The ratios reported: (name, Python client's op, redis-py's op).
const RATIOS: [(&str, &str, &str); 3] = [
    (
        "Python client mint / redis-py SET EX (appendfsync always)",
        "mint",
        "set_ex",
    ),
    ("Python client linearizable get / redis-py GET", "get", "get"),
    (
        "Python client linearizable state get / redis-py GET",
        "state_get",
        "get",
    ),
];

const BENCH: ClientBench = ClientBench {
    name: "pyclient",
    ours: "python-client",
    theirs: "redis-py",
    ratios: &RATIOS,
};

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let python =
        handlestore_tests::python::interpreter().map_err(|why| anyhow::anyhow!("no Python environment: {why}"))?;
    let script = handlestore_tests::python::script("client_bench.py");
    client_rows::run(&BENCH, &cli.run, || {
        let mut c = Command::new(&python);
        c.arg(&script);
        c
    })
    .await
}
