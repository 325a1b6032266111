//! Stamps the build with the commit it was built from, for `handlestore
//! --version` and the `handlestore_server_version` metric: the environment's
//! HANDLESTORE_COMMIT (the Docker build, which has no .git, passes it), else
//! `git rev-parse`, else "unknown".

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=HANDLESTORE_COMMIT");
    let git = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.git");
    // A new commit moves HEAD or the branch it names, and is written to
    // HEAD's reflog (where the branch is only in packed-refs, the first
    // commit makes its file). Only files that are there: cargo takes a
    // missing one for changed and would run this again, and compile the
    // node again, on every build (a clone without packed-refs).
    let mut watched = vec![git.join("HEAD"), git.join("packed-refs"), git.join("logs/HEAD")];
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
        && let Some(branch) = head.trim().strip_prefix("ref: ")
    {
        watched.push(git.join(branch));
    }
    for f in watched.iter().filter(|f| f.exists()) {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let commit = std::env::var("HANDLESTORE_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            let out = Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=HANDLESTORE_COMMIT={commit}");
}
