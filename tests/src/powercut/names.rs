//! Names: lookups, and every change to a directory (mkdir, unlink, rmdir,
//! symlink, rename, link). Each is done at once through the journal,
//! which a power cut rolls back to the directories' last fsync.

use std::ffi::OsStr;
use std::path::Path;

use fuser::{Errno, FileAttr, FileType, INodeNo, RenameFlags};
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, mkdirat};
use nix::unistd::{linkat, symlinkat};

use super::attr::{attr, errno, io_errno, kind, stat_fd};
use super::fs::PowercutFs;
use super::journal::STASH;

/// Whether `name` in `parent` is the journal's stash, which the
/// application neither sees nor makes.
pub(super) fn is_stash(parent: INodeNo, name: &OsStr) -> bool {
    parent == INodeNo::ROOT && name == STASH
}

/// Refuses a change to the stash's name.
fn own_name(parent: INodeNo, name: &OsStr) -> Result<(), Errno> {
    match is_stash(parent, name) {
        true => Err(Errno::EPERM),
        false => Ok(()),
    }
}

impl PowercutFs {
    /// Fails with EIO once the power is cut.
    pub(super) fn up(&self) -> Result<(), Errno> {
        self.cache.check().map_err(io_errno)
    }

    /// The attributes of node `id`, backing `st`: a regular file's size
    /// counts its unsynced writes.
    pub(super) fn attr_of(&self, id: INodeNo, st: &FileStat) -> FileAttr {
        let size = match kind(st.st_mode) {
            FileType::RegularFile => self.cache.size(st.st_ino),
            _ => None,
        };
        attr(id, st, size)
    }

    /// Looks `name` up in directory `parent`, counting one lookup of it.
    pub(super) fn lookup_entry(&self, parent: INodeNo, name: &OsStr) -> Result<FileAttr, Errno> {
        self.up()?;
        if is_stash(parent, name) {
            return Err(Errno::ENOENT);
        }
        let dir = self.nodes.get(parent)?;
        let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(&dir.fd, name, flags, Mode::empty()).map_err(errno)?;
        let st = stat_fd(&fd)?;
        let id = self.nodes.remember(fd, st.st_ino);
        Ok(self.attr_of(id, &st))
    }

    pub(super) fn make_dir(&self, parent: INodeNo, name: &OsStr, mode: u32, umask: u32) -> Result<FileAttr, Errno> {
        own_name(parent, name)?;
        let dir = self.nodes.get(parent)?;
        self.cache
            .change_names(|j| {
                mkdirat(&dir.fd, name, Mode::from_bits_truncate(mode & !umask))?;
                j.added(dir.clone(), name);
                Ok(())
            })
            .map_err(io_errno)?;
        self.lookup_entry(parent, name)
    }

    /// Unlinks `name` (a directory if `dir`) from `parent`.
    pub(super) fn remove(&self, parent: INodeNo, name: &OsStr, dir: bool) -> Result<(), Errno> {
        own_name(parent, name)?;
        let at = self.nodes.get(parent)?;
        self.cache.change_names(|j| j.remove(at, name, dir)).map_err(io_errno)
    }

    /// Drops the unsynced data of a file that lost its last name, once no
    /// one has it open.
    pub(super) fn forget_if_unlinked(&self, ino: u64) {
        let open = self.files.any(|f| f.ino == ino);
        self.cache.forget_if_unlinked(ino, open);
    }

    pub(super) fn rename_entry(
        &self,
        (parent, name): (INodeNo, &OsStr),
        (new_parent, new_name): (INodeNo, &OsStr),
        flags: RenameFlags,
    ) -> Result<(), Errno> {
        own_name(parent, name)?;
        own_name(new_parent, new_name)?;
        let (from, to) = (self.nodes.get(parent)?, self.nodes.get(new_parent)?);
        let flags = nix::fcntl::RenameFlags::from_bits(flags.bits()).ok_or(Errno::EINVAL)?;
        let (from, to) = ((from, name.to_owned()), (to, new_name.to_owned()));
        self.cache.change_names(|j| j.rename(from, to, flags)).map_err(io_errno)
    }

    pub(super) fn make_symlink(&self, parent: INodeNo, name: &OsStr, target: &Path) -> Result<FileAttr, Errno> {
        own_name(parent, name)?;
        let dir = self.nodes.get(parent)?;
        self.cache
            .change_names(|j| {
                symlinkat(target, &dir.fd, name)?;
                j.added(dir.clone(), name);
                Ok(())
            })
            .map_err(io_errno)?;
        self.lookup_entry(parent, name)
    }

    /// A hard link to node `id`, named `new_name` in `new_parent`.
    pub(super) fn make_link(&self, id: INodeNo, new_parent: INodeNo, new_name: &OsStr) -> Result<FileAttr, Errno> {
        own_name(new_parent, new_name)?;
        let node = self.nodes.get(id)?;
        let to = self.nodes.get(new_parent)?;
        self.cache
            .change_names(|j| {
                let from = node.proc_path();
                linkat(AT_FDCWD, from.as_str(), &to.fd, new_name, AtFlags::AT_SYMLINK_FOLLOW)?;
                j.added(to.clone(), new_name);
                Ok(())
            })
            .map_err(io_errno)?;
        self.lookup_entry(new_parent, new_name)
    }

    pub(super) fn read_link(&self, id: INodeNo) -> Result<Vec<u8>, Errno> {
        use std::os::unix::ffi::OsStringExt;
        self.up()?;
        let node = self.nodes.get(id)?;
        let target = nix::fcntl::readlinkat(&node.fd, "").map_err(errno)?;
        Ok(target.into_vec())
    }
}
