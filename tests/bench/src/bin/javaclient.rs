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

use anyhow::{Context, Result, bail};
use clap::Parser;
use handlestore_bench::client_rows::{self, ClientBench};

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

/// The Java release client/java is built for.
const JAVA_MAJOR: u32 = 17;

/// The `java` on PATH, if it is 17 or later, or what is wrong.
fn check_java() -> Result<()> {
    let out = Command::new("java")
        .args(["-XshowSettings:properties", "-version"])
        .output();
    let settings = match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stderr).into_owned(),
        _ => bail!("Java is missing: the Java client's rows need `java` ({JAVA_MAJOR} or later) on PATH"),
    };
    let version = settings
        .lines()
        .find_map(|l| l.trim().strip_prefix("java.specification.version = "))
        .unwrap_or("unknown")
        .to_string();
    let major: u32 = version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    anyhow::ensure!(
        major >= JAVA_MAJOR,
        "Java {version} is too old: the Java client's rows need {JAVA_MAJOR} or later"
    );
    Ok(())
}

/// Builds client/java/bench (and the client it uses) with the `mvn` on
/// PATH, or says what is missing; gives the jar.
fn build() -> Result<PathBuf> {
    let project = handlestore_tests::repo_root().join("client/java");
    match Command::new("mvn").arg("-v").output() {
        Ok(out) if out.status.success() => {}
        _ => bail!("Maven is missing: building the Java client's rows needs `mvn` (3.8 or later) on PATH, or --jar"),
    }
    let out = Command::new("mvn")
        .args(["-B", "-ntp", "-q", "-pl", "bench", "-am", "-DskipTests", "package"])
        .current_dir(&project)
        .output()
        .with_context(|| format!("running mvn in {}", project.display()))?;
    if !out.status.success() {
        bail!(
            "mvn -pl bench -am package in {} failed:\n{}{}",
            project.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(project.join("bench/target/handlestore-bench.jar"))
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
    check_java()?;
    let jar = match cli.jar {
        Some(jar) => jar,
        None => build()?,
    };
    anyhow::ensure!(jar.is_file(), "{} is not a file", jar.display());
    client_rows::run(&BENCH, &cli.run, || java(&jar)).await
}
