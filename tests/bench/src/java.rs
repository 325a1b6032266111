//! Java and Maven for the bench: the `javaclient` bench's program
//! (`client/java/bench`) and the Java cart server replicas of the
//! `java-cart*` systems (`client/java/examples`, the executable jar of
//! `io.github.handlestore.examples.cart.CartServer`), each built with the
//! `mvn` on PATH in client/java (or named by a flag) and run with `java
//! -jar`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// The Java release client/java is built for.
pub const JAVA_MAJOR: u32 = 17;

/// The cart server's executable jar, from client/java.
const CART_JAR: &str = "examples/target/handlestore-examples-0.1.0-all.jar";

/// The options each cart server JVM starts with: none. The twins run on
/// their runtimes' defaults (`node` without flags, CPython, the Rust
/// binary), and `java -jar` with no flags is what docs/java.md tells a
/// Java author to run; on the bench's machines (2 cores, tens of GiB) the
/// JVM's ergonomics then pick G1 with 2 GC threads, one C1 and one C2
/// compiler thread and a heap of up to a quarter of the memory, a sound
/// server setup. Tuning one language's server alone (ParallelGC, a fixed
/// heap) would make the rows compare tunings rather than servers; to try
/// one, set `JAVA_TOOL_OPTIONS`, which the replicas inherit. What a JVM
/// does need, code compiled before it is timed, is the bench's warm-up
/// (`--java-warmup`), not a flag.
const JVM_OPTIONS: [&str; 0] = [];

/// The `java` on PATH, if it is 17 or later, or what is wrong; `rows` names
/// what needs it ("the Java client's rows").
pub fn check_java(rows: &str) -> Result<()> {
    let out = Command::new("java")
        .args(["-XshowSettings:properties", "-version"])
        .output();
    // -XshowSettings writes to stderr.
    let settings = match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stderr).into_owned(),
        _ => bail!("Java is missing: {rows} need `java` ({JAVA_MAJOR} or later) on PATH"),
    };
    let version = settings
        .lines()
        .find_map(|l| l.trim().strip_prefix("java.specification.version = "))
        .unwrap_or("unknown")
        .to_string();
    let major: u32 = version.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    anyhow::ensure!(
        major >= JAVA_MAJOR,
        "Java {version} is too old: {rows} need {JAVA_MAJOR} or later"
    );
    Ok(())
}

/// `mvn -B -ntp -q -pl <module> -am -DskipTests package` in client/java
/// with the `mvn` on PATH, or what is missing (`flag`: the bench's flag
/// that names a jar already built instead).
pub fn mvn_package(module: &str, flag: &str) -> Result<()> {
    let project = handlestore_tests::repo_root().join("client/java");
    match Command::new("mvn").arg("-v").output() {
        Ok(out) if out.status.success() => {}
        _ => bail!(
            "Maven is missing: building client/java/{module} needs `mvn` (3.8 or later) on PATH, \
             or {flag}"
        ),
    }
    let out = Command::new("mvn")
        .args(["-B", "-ntp", "-q", "-pl", module, "-am", "-DskipTests", "package"])
        .current_dir(&project)
        .output()
        .with_context(|| format!("running mvn in {}", project.display()))?;
    if !out.status.success() {
        bail!(
            "mvn -pl {module} -am package in {} failed:\n{}{}",
            project.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The cart server's jar: the one [`use_cart_jar`] named, else the one
/// built (once per process) from client/java.
static CART: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Runs the `java-cart*` replicas from `jar` (the bench's `--java-jar`)
/// instead of building client/java/examples.
pub fn use_cart_jar(jar: PathBuf) {
    *CART.lock().unwrap_or_else(|e| e.into_inner()) = Some(jar);
}

/// The cart server's executable jar, built with Maven the first time it
/// is asked for (unless [`use_cart_jar`] named one), with Java 17 or
/// later checked; or what is missing.
pub async fn cart_jar() -> Result<PathBuf> {
    tokio::task::spawn_blocking(|| {
        check_java("the Java cart rows")?;
        let mut jar = CART.lock().unwrap_or_else(|e| e.into_inner());
        if jar.is_none() {
            mvn_package("examples", "--java-jar")?;
            *jar = Some(handlestore_tests::repo_root().join("client/java").join(CART_JAR));
        }
        let jar = jar.clone().expect("set above");
        anyhow::ensure!(
            jar.is_file(),
            "the Java cart server's jar {} is not a file",
            jar.display()
        );
        Ok(jar)
    })
    .await?
}

/// A replica of the Java cart server (`java -jar <jar> --listen
/// 127.0.0.1:0 ...`), killed on drop.
pub struct JavaCartServer {
    port: u16,
    child: Child,
}

impl JavaCartServer {
    /// Starts the jar with `args` (e.g. `--kv memory`) on a port of its
    /// choosing, its output in a log under `log_dir`, and waits until it
    /// prints `listening <port>`.
    pub async fn start(jar: &Path, args: &[&str], log_dir: &Path) -> Result<Self> {
        let log = tempfile::Builder::new()
            .prefix("java-cart-server-")
            .suffix(".log")
            .tempfile_in(log_dir)?
            .keep()?
            .1;
        let out = std::fs::File::options().append(true).open(&log)?;
        let mut child = Command::new("java")
            .args(JVM_OPTIONS)
            .arg("-jar")
            .arg(jar)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out))
            .spawn()
            .context("spawning java -jar (the Java cart server)")?;
        match wait_listening(&mut child, &log, Duration::from_secs(90)).await {
            Ok(port) => Ok(Self { port, child }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }

    /// The JVM's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

/// The port in the server's `listening <port>` line, once it is in `log`.
async fn wait_listening(child: &mut Child, log: &Path, limit: Duration) -> Result<u16> {
    let deadline = Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(port) = listening(&text) {
            return Ok(port);
        }
        let exited = child.try_wait()?;
        if exited.is_some() || Instant::now() > deadline {
            let why = exited.map_or("did not print `listening <port>` in time".to_string(), |s| {
                format!("exited ({s})")
            });
            bail!("the Java cart server {why} (log {}):\n{text}", log.display());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The port of a `listening <port>` line.
fn listening(log: &str) -> Option<u16> {
    log.lines()
        .find_map(|l| l.trim().strip_prefix("listening "))
        .and_then(|p| p.trim().parse().ok())
}

impl Drop for JavaCartServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_read_from_the_listening_line_only() {
        assert_eq!(listening("[main] INFO tomcat\nlistening 39323\n"), Some(39323));
        assert_eq!(listening("listening"), None);
        assert_eq!(listening("listening soon\n"), None);
        assert_eq!(listening(""), None);
    }
}
