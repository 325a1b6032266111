//! The Java client beside Lettuce, in one run: its mint, get, put and state
//! get against three nodes, and Lettuce's SET EX and GET against Redis with
//! `appendfsync always`, each at every count of calls in flight (async
//! calls: a chain of `CompletableFuture`s per call in flight, in one JVM),
//! driven by a Java program (`client/java/bench`, the Maven module
//! `handlestore-bench`, which alone requires Lettuce).
//!
//! target/release/javaclient [--tasks 1,64] [--duration 10s] [--rounds 3] [--out target/javaclient] [--jar PATH]
//!
//! Needs `java` (17 or later) on PATH, and `mvn` (3.8 or later) unless
//! `--jar` names the program already built; it is built with `mvn -pl bench
//! -am -DskipTests package` in client/java, as
//! client/java/bench/target/handlestore-bench.jar (its dependencies in
//! target/lib beside it), and run with `java -jar`. Before each cell the
//! program runs the cell's workload unreported until the JIT is quiet (at
//! most 30 s; each cell's `warmup_s` says how long), since a JVM compiles
//! the client's code for some seconds after it starts. Every round starts
//! both systems afresh. Writes results.json (every
//! cell of every round, and each ratio per round with its median) and
//! results.md to --out (`handlestore_bench::client_rows`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;
use clap::Parser;
use handlestore_bench::client_rows::{self, ClientBench};
use handlestore_bench::java;

#[derive(Parser, Debug)]
#[command(about = "The Java client beside Lettuce")]
struct Cli {
    #[command(flatten)]
    run: client_rows::Args,
    /// The jar built from client/java/bench, with its lib/ beside it
    /// (default: build it now, with the `mvn` on PATH).
    #[arg(long)]
    jar: Option<PathBuf>,
}

/// The ratios reported: (name, Java client's op, Lettuce's op).
const RATIOS: [(&str, &str, &str); 3] = [
    (
        "Java client mint / Lettuce SET EX (appendfsync always)",
        "mint",
        "set_ex",
    ),
    ("Java client linearizable get / Lettuce GET", "get", "get"),
    ("Java client linearizable state get / Lettuce GET", "state_get", "get"),
];

const BENCH: ClientBench = ClientBench {
    name: "javaclient",
    ours: "java-client",
    theirs: "lettuce",
    ratios: &RATIOS,
};

/// Builds client/java/bench (and the client it uses) with the `mvn` on
/// PATH, or says what is missing; gives the jar.
fn build() -> Result<PathBuf> {
    java::mvn_package("bench", "--jar")?;
    Ok(handlestore_tests::repo_root().join("client/java/bench/target/handlestore-bench.jar"))
}

/// `java -jar <jar>`: the jar names its class path (lib/ beside it).
fn java(jar: &Path) -> Command {
    let mut c = Command::new("java");
    c.arg("-jar").arg(jar);
    c
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    java::check_java("the Java client's rows")?;
    let jar = match cli.jar {
        Some(jar) => jar,
        None => build()?,
    };
    anyhow::ensure!(jar.is_file(), "{} is not a file", jar.display());
    client_rows::run(&BENCH, &cli.run, || java(&jar)).await
}
