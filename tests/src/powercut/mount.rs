//! The harness side of `powercut_fs`: a disk that can lose power, mounted
//! in a process of its own (`target/<profile>/powercut_fs BACKING
//! MOUNTPOINT`, its stderr in a log file), cut with `SIGUSR1`, and mounted
//! again over what it synced. Dropping it unmounts it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::{ARMED, CUT_DONE, Names, Size};

/// The `powercut_fs` binary: `$HANDLESTORE_POWERCUT_FS`, or the one built
/// beside this test executable (cargo builds it with the tests).
pub fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("HANDLESTORE_POWERCUT_FS") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    let mut dir = exe.parent().expect("target dir");
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent().expect("target dir");
    }
    dir.join("powercut_fs")
}

/// Why this machine cannot mount `powercut_fs`, if it cannot: it needs
/// root (a mount) and `/dev/fuse`.
pub fn unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("not root: mounting the power-cut FUSE file system needs root".into());
    }
    if let Err(e) = File::options().read(true).write(true).open("/dev/fuse") {
        return Some(format!("/dev/fuse cannot be opened ({e}): no FUSE here"));
    }
    let bin = binary();
    if !bin.exists() {
        return Some(format!("{} is missing: build the tests first", bin.display()));
    }
    None
}

/// Whether something is mounted at `path` (as `/proc/self/mountinfo`
/// spells it: absolute, symbolic links resolved).
pub fn is_mounted(path: &Path) -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = path.to_string_lossy();
    info.lines()
        .any(|line| line.split(' ').nth(4).is_some_and(|m| m == want))
}

pub struct PowercutMount {
    names: Names,
    size: Size,
    backing: PathBuf,
    mountpoint: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl PowercutMount {
    /// Mounts `backing` (made if missing) at `mountpoint` (likewise), the
    /// file system's messages appended to `log`.
    pub fn start(backing: &Path, mountpoint: &Path, log: &Path) -> Result<Self> {
        Self::start_with(backing, mountpoint, log, Names::Posix)
    }

    /// [`start`](Self::start), with name changes durable as `names` says.
    pub fn start_with(backing: &Path, mountpoint: &Path, log: &Path, names: Names) -> Result<Self> {
        Self::start_sized(backing, mountpoint, log, names, Size::Backing)
    }

    /// [`start_with`](Self::start_with), `statfs` reporting `size`.
    pub fn start_sized(backing: &Path, mountpoint: &Path, log: &Path, names: Names, size: Size) -> Result<Self> {
        std::fs::create_dir_all(backing)?;
        std::fs::create_dir_all(mountpoint)?;
        let mut mount = Self {
            names,
            size,
            backing: backing.canonicalize()?,
            mountpoint: mountpoint.canonicalize()?,
            log: log.to_path_buf(),
            child: None,
        };
        mount.spawn()?;
        Ok(mount)
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    pub fn backing(&self) -> &Path {
        &self.backing
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn spawn(&mut self) -> Result<()> {
        let log = File::options().create(true).append(true).open(&self.log)?;
        let mut command = Command::new(binary());
        if self.names == Names::Journaled {
            command.arg("--journaled-names");
        }
        if self.size == Size::Unknown {
            command.arg("--no-size");
        }
        let child = command
            .arg(&self.backing)
            .arg(&self.mountpoint)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log))
            .spawn()
            .context("spawning powercut_fs")?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !is_mounted(&self.mountpoint) {
            let exited = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || Instant::now() > deadline {
                bail!(
                    "powercut_fs did not mount {} ({exited:?}):\n{}",
                    self.mountpoint.display(),
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Cuts the power: every write not synced is gone, and every call on
    /// the mount fails with EIO until [`remount`](Self::remount).
    pub fn cut(&mut self) -> Result<()> {
        self.signal(Signal::SIGUSR1, CUT_DONE).map(drop)
    }

    /// Arms a cut at the next write to a table, manifest or snapshot file
    /// (see [`crate::powercut`]). Returns how many cuts came before, for
    /// [`cut_since`](Self::cut_since).
    pub fn arm(&mut self) -> Result<usize> {
        let before = self.said(CUT_DONE).len();
        self.signal(Signal::SIGUSR2, ARMED)?;
        Ok(before)
    }

    /// The file system's line about the first cut after `before` of them
    /// (where it cut, what it dropped), if there has been one.
    pub fn cut_since(&self, before: usize) -> Option<String> {
        self.said(CUT_DONE).into_iter().nth(before)
    }

    /// The file system's lines that start with `what`, oldest first.
    fn said(&self, what: &str) -> Vec<String> {
        let log = self.log_text();
        log.lines().filter(|l| l.starts_with(what)).map(String::from).collect()
    }

    /// Sends `signal` to the file system, and waits up to 10 s for its
    /// answer, a line starting with `said`; returns it.
    fn signal(&mut self, signal: Signal, said: &str) -> Result<String> {
        let child = self.child.as_ref().context("powercut_fs is not running")?;
        let before = self.said(said).len();
        kill(Pid::from_raw(child.id() as i32), signal)?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(line) = self.said(said).into_iter().nth(before) {
                return Ok(line);
            }
            if Instant::now() > deadline {
                bail!("powercut_fs did not answer {signal} within 10 s:\n{}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Unmounts (lazily: whatever still holds files there is cut off) and
    /// waits for the file system's process to end (killing it after 10 s).
    pub fn unmount(&mut self) -> Result<()> {
        if is_mounted(&self.mountpoint) {
            nix::mount::umount2(&self.mountpoint, nix::mount::MntFlags::MNT_DETACH)
                .with_context(|| format!("unmounting {}", self.mountpoint.display()))?;
        }
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("powercut_fs did not exit within 10 s of its unmount");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }

    /// The machine starts again: unmounted, then mounted again by a new
    /// process over what the backing directory holds.
    pub fn remount(&mut self) -> Result<()> {
        self.unmount()?;
        self.spawn()
    }
}

impl Drop for PowercutMount {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("{e:#}");
        }
    }
}
