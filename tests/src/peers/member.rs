//! One member of a peer cluster: the command that starts it, and its
//! process while it runs. Killed on drop; started again on the same ports
//! and data directory by [`Member::restart`].

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

pub struct Member {
    /// The member's name (`e1`, `n2`, ...).
    pub name: String,
    program: PathBuf,
    args: Vec<OsString>,
    /// Where its output goes (appended across restarts).
    pub log: PathBuf,
    child: Option<Child>,
}

impl Member {
    /// Starts `program args...`, its output appended to `dir/<name>.log`.
    pub fn start(dir: &Path, name: &str, program: &Path, args: Vec<OsString>) -> Result<Self> {
        let mut member = Self {
            name: name.to_string(),
            program: program.to_path_buf(),
            args,
            log: dir.join(format!("{name}.log")),
            child: None,
        };
        member.spawn()?;
        Ok(member)
    }

    fn spawn(&mut self) -> Result<()> {
        let log = File::options().create(true).append(true).open(&self.log)?;
        let child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .with_context(|| {
                format!(
                    "starting {} (deploy/install-bench-deps.sh installs it)",
                    self.program.display()
                )
            })?;
        self.child = Some(child);
        Ok(())
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Freezes the process (SIGSTOP), as a machine that lost power stops
    /// answering before anything else happens.
    pub fn pause(&self) -> Result<()> {
        if let Some(pid) = self.pid() {
            kill(Pid::from_raw(pid as i32), Signal::SIGSTOP)?;
        }
        Ok(())
    }

    /// Kills the process (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the member again, killing it first if it runs.
    pub fn restart(&mut self) -> Result<()> {
        self.kill();
        self.spawn()
    }

    /// The last lines of its log, for a failure's message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.kill();
    }
}
