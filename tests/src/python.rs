//! The Python interpreter of the tests' virtual environment (the official
//! MCP SDK's client), for tests that drive a real Python MCP client.

use std::path::PathBuf;
use std::process::Command;

/// `$HANDLESTORE_TEST_PYTHON` (set by tests/run.sh), else the environment
/// `tests/ensure-python-env.sh` makes now. `Err` says why there is none:
/// the caller skips and prints it.
pub fn interpreter() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("HANDLESTORE_TEST_PYTHON").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let script = crate::repo_root().join("tests/ensure-python-env.sh");
    let out = Command::new(&script)
        .output()
        .map_err(|e| format!("running {}: {e}", script.display()))?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if path.is_empty() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(PathBuf::from(path))
}

/// A script under `tests/python/`.
pub fn script(name: &str) -> PathBuf {
    crate::repo_root().join("tests/python").join(name)
}
