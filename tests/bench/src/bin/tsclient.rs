//! The TypeScript client beside ioredis, in one run: its mint, get, put and
//! state get against three nodes, and ioredis' SET EX and GET against Redis
//! with `appendfsync always`, each at every count of calls in flight, driven
//! by Node.js (`client/ts/bench/clientBench.ts`, run from client/ts).
//!
//! target/release/tsclient [--tasks 1,64] [--duration 10s] [--rounds 3] [--out target/tsclient]
//!
//! Needs `node` (20 or later) on PATH and `npm ci` in client/ts. Every round
//! starts both systems afresh. Writes results.json (every cell of every
//! round, and each ratio per round with its median) and results.md to --out
//! (`handlestore_bench::client_rows`).

use anyhow::Result;
use clap::Parser;
use handlestore_bench::client_rows::{self, ClientBench};
use handlestore_bench::typescript::Node;

#[derive(Parser, Debug)]
#[command(about = "The TypeScript client beside ioredis")]
struct Cli {
    #[command(flatten)]
    run: client_rows::Args,
}

/// The ratios reported: (name, TypeScript client's op, ioredis' op).
const RATIOS: [(&str, &str, &str); 3] = [
    (
        "TypeScript client mint / ioredis SET EX (appendfsync always)",
        "mint",
        "set_ex",
    ),
    ("TypeScript client linearizable get / ioredis GET", "get", "get"),
    (
        "TypeScript client linearizable state get / ioredis GET",
        "state_get",
        "get",
    ),
];

const BENCH: ClientBench = ClientBench {
    name: "tsclient",
    ours: "ts-client",
    theirs: "ioredis",
    ratios: &RATIOS,
};

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    let node = Node::find()?;
    client_rows::run(&BENCH, &cli.run, || node.script("bench/clientBench.ts")).await
}
