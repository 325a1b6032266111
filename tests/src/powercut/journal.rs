//! Names not yet durable. Every change to a directory (a name added,
//! removed or renamed) is done here and kept until the application syncs
//! a directory it touched (`fsync` of the directory, as POSIX asks). A
//! power cut undoes the changes left, newest first: a missing directory
//! fsync loses the new name, or brings the removed one back, as a file
//! system may between its journal commits.
//!
//! A removed name's file is not deleted at once: it is moved (for a rename
//! over it, hard-linked) into the stash, a hidden directory at the backing
//! root, until the removal is durable; a removed directory (empty, as
//! `rmdir` wants) is made again on undo. A rename is durable once either
//! of its directories is synced (one journal commit, as on ext4).
//!
//! With [`Names::Journaled`] every sync, of a file or a directory, makes
//! every change before it durable: one journal for the whole file system,
//! committed whole at each fsync, as ext4's (`data=ordered`, no fast
//! commits) and XFS' are; an application that never syncs a directory
//! keeps its names there once it syncs anything.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;

use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, RenameFlags, openat, renameat2};
use nix::sys::stat::{FileStat, Mode, SFlag, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, linkat, unlinkat};

use super::nodes::Node;

/// The stash's name at the backing root; the application never sees it.
pub const STASH: &str = ".powercut-stash";

/// A name in a directory (the directory's `O_PATH` descriptor).
type Name = (Arc<Node>, OsString);

/// What a removed name stood for, to put back on undo.
enum Kept {
    /// A file, moved or linked into the stash under this name.
    Stashed { as_name: OsString, ino: u64 },
    /// An empty directory of this mode.
    Dir(u32),
}

enum Change {
    Added(Name),
    Removed(Name, Kept),
    Renamed {
        from: Name,
        to: Name,
        exchange: bool,
        over: Option<Kept>,
    },
}

impl Change {
    fn touches(&self, dir: u64) -> bool {
        match self {
            Change::Added((d, _)) | Change::Removed((d, _), _) => d.ino == dir,
            Change::Renamed { from, to, .. } => from.0.ino == dir || to.0.ino == dir,
        }
    }
}

/// When a name change becomes durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Names {
    /// Once a directory it touched is synced, as POSIX asks.
    #[default]
    Posix,
    /// At the next sync of anything (one journal, committed whole).
    Journaled,
}

pub struct Journal {
    names: Names,
    stash: OwnedFd,
    next: u64,
    changes: Vec<Change>,
}

fn io(e: nix::Error) -> io::Error {
    io::Error::from(e)
}

fn stat_at(dir: &Node, name: &OsStr) -> Option<FileStat> {
    fstatat(&dir.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW).ok()
}

fn is_dir(st: &FileStat) -> bool {
    st.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFDIR.bits()
}

impl Journal {
    /// The journal of the file system over `backing`, with an empty stash
    /// (what an earlier cut left there was lost with the power).
    pub fn open(backing: &Path, names: Names) -> io::Result<Self> {
        let path = backing.join(STASH);
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        std::fs::create_dir(&path)?;
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let stash = openat(AT_FDCWD, &path, flags, Mode::empty()).map_err(io)?;
        Ok(Self {
            names,
            stash,
            next: 0,
            changes: Vec::new(),
        })
    }

    fn stash_name(&mut self) -> OsString {
        self.next += 1;
        OsString::from(self.next.to_string())
    }

    /// Records that `name` was just added to `dir` (create, mkdir,
    /// symlink, link).
    pub fn added(&mut self, dir: Arc<Node>, name: &OsStr) {
        self.changes.push(Change::Added((dir, name.to_owned())));
    }

    /// Whether `name` exists in `dir`.
    pub fn exists(dir: &Node, name: &OsStr) -> bool {
        stat_at(dir, name).is_some()
    }

    /// Removes `name` from `dir`: a file (`unlink`) or an empty directory
    /// (`rmdir`), as `want_dir` says.
    pub fn remove(&mut self, dir: Arc<Node>, name: &OsStr, want_dir: bool) -> io::Result<()> {
        let st = stat_at(&dir, name).ok_or_else(|| io::Error::from_raw_os_error(nix::libc::ENOENT))?;
        let kept = match (want_dir, is_dir(&st)) {
            (true, true) => {
                unlinkat(&dir.fd, name, UnlinkatFlags::RemoveDir).map_err(io)?;
                Kept::Dir(st.st_mode & 0o7777)
            }
            (true, false) => return Err(io::Error::from_raw_os_error(nix::libc::ENOTDIR)),
            (false, true) => return Err(io::Error::from_raw_os_error(nix::libc::EISDIR)),
            (false, false) => {
                let as_name = self.stash_name();
                renameat2(&dir.fd, name, &self.stash, as_name.as_os_str(), RenameFlags::empty()).map_err(io)?;
                Kept::Stashed {
                    as_name,
                    ino: st.st_ino,
                }
            }
        };
        self.changes.push(Change::Removed((dir, name.to_owned()), kept));
        Ok(())
    }

    /// Keeps what `to` names, which a rename is about to replace.
    fn keep_victim(&mut self, to: &Name) -> io::Result<Option<Kept>> {
        let Some(st) = stat_at(&to.0, &to.1) else {
            return Ok(None);
        };
        if is_dir(&st) {
            return Ok(Some(Kept::Dir(st.st_mode & 0o7777)));
        }
        let as_name = self.stash_name();
        linkat(
            &to.0.fd,
            to.1.as_os_str(),
            &self.stash,
            as_name.as_os_str(),
            AtFlags::empty(),
        )
        .map_err(io)?;
        Ok(Some(Kept::Stashed {
            as_name,
            ino: st.st_ino,
        }))
    }

    /// Renames `from` to `to` with rename(2)'s `flags`.
    pub fn rename(&mut self, from: Name, to: Name, flags: RenameFlags) -> io::Result<()> {
        let exchange = flags.contains(RenameFlags::RENAME_EXCHANGE);
        let over = match exchange || flags.contains(RenameFlags::RENAME_NOREPLACE) {
            true => None,
            false => self.keep_victim(&to)?,
        };
        if let Err(e) = renameat2(&from.0.fd, from.1.as_os_str(), &to.0.fd, to.1.as_os_str(), flags) {
            if let Some(kept) = over {
                self.drop_kept(&kept);
            }
            return Err(io(e));
        }
        self.changes.push(Change::Renamed {
            from,
            to,
            exchange,
            over,
        });
        Ok(())
    }

    /// Deletes a kept file from the stash; returns its inode.
    fn drop_kept(&self, kept: &Kept) -> Option<u64> {
        match kept {
            Kept::Stashed { as_name, ino } => {
                let _ = unlinkat(&self.stash, as_name.as_os_str(), UnlinkatFlags::NoRemoveDir);
                Some(*ino)
            }
            Kept::Dir(_) => None,
        }
    }

    /// Directory `dir` (a backing inode) was synced: every change to it is
    /// durable. Returns the inodes of files whose removal became durable
    /// (they may have no name left).
    pub fn synced(&mut self, dir: u64) -> Vec<u64> {
        let journaled = self.names == Names::Journaled;
        let (durable, left): (Vec<_>, Vec<_>) = std::mem::take(&mut self.changes)
            .into_iter()
            .partition(|c| journaled || c.touches(dir));
        self.changes = left;
        durable
            .iter()
            .filter_map(|c| match c {
                Change::Removed(_, kept) => self.drop_kept(kept),
                Change::Renamed { over: Some(kept), .. } => self.drop_kept(kept),
                _ => None,
            })
            .collect()
    }

    /// A file was synced: with [`Names::Journaled`], every change is
    /// durable (as [`synced`](Self::synced) returns); else none is.
    pub fn file_synced(&mut self) -> Vec<u64> {
        match self.names {
            Names::Journaled => self.synced(0),
            Names::Posix => Vec::new(),
        }
    }

    /// Puts `kept` back as `at` (never over a name that is there).
    fn restore(&self, kept: &Kept, at: &Name) {
        let _ = match kept {
            Kept::Stashed { as_name, .. } => renameat2(
                &self.stash,
                as_name.as_os_str(),
                &at.0.fd,
                at.1.as_os_str(),
                RenameFlags::RENAME_NOREPLACE,
            ),
            Kept::Dir(mode) => mkdirat(&at.0.fd, at.1.as_os_str(), Mode::from_bits_truncate(*mode)),
        };
    }

    /// The power cut: undoes every change not yet durable, newest first
    /// (each as far as it still can be); returns how many there were.
    pub fn undo(&mut self) -> usize {
        let changes = std::mem::take(&mut self.changes);
        for change in changes.iter().rev() {
            match change {
                Change::Added((dir, name)) => {
                    let as_name = self.stash_name();
                    let _ = renameat2(
                        &dir.fd,
                        name.as_os_str(),
                        &self.stash,
                        as_name.as_os_str(),
                        RenameFlags::empty(),
                    );
                }
                Change::Removed(at, kept) => self.restore(kept, at),
                Change::Renamed {
                    from,
                    to,
                    exchange,
                    over,
                } => {
                    let flags = match exchange {
                        true => RenameFlags::RENAME_EXCHANGE,
                        false => RenameFlags::RENAME_NOREPLACE,
                    };
                    let _ = renameat2(&to.0.fd, to.1.as_os_str(), &from.0.fd, from.1.as_os_str(), flags);
                    if let Some(kept) = over {
                        self.restore(kept, to);
                    }
                }
            }
        }
        changes.len()
    }
}
