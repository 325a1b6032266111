//! Names: lookups, and every change to a directory (mkdir, unlink, rmdir,
//! symlink, rename, link). These are metadata, which passes through to the
//! backing directory at once, as in LazyFS: a power cut keeps them.

use std::ffi::OsStr;
use std::path::Path;

use fuser::{Errno, FileAttr, FileType, INodeNo, RenameFlags};
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, openat, renameat2};
use nix::sys::stat::{FileStat, Mode, fstatat, mkdirat};
use nix::unistd::{UnlinkatFlags, linkat, symlinkat, unlinkat};

use super::attr::{attr, errno, io_errno, kind, stat_fd};
use super::fs::PowercutFs;

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
        let dir = self.nodes.get(parent)?;
        let flags = OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(&dir.fd, name, flags, Mode::empty()).map_err(errno)?;
        let st = stat_fd(&fd)?;
        let id = self.nodes.remember(fd, st.st_ino);
        Ok(self.attr_of(id, &st))
    }

    pub(super) fn make_dir(&self, parent: INodeNo, name: &OsStr, mode: u32, umask: u32) -> Result<FileAttr, Errno> {
        self.up()?;
        let dir = self.nodes.get(parent)?;
        mkdirat(&dir.fd, name, Mode::from_bits_truncate(mode & !umask)).map_err(errno)?;
        self.lookup_entry(parent, name)
    }

    /// The backing inode named `name` in `parent`, if there is one.
    fn inode_at(&self, parent: INodeNo, name: &OsStr) -> Option<u64> {
        let dir = self.nodes.get(parent).ok()?;
        fstatat(&dir.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW)
            .ok()
            .map(|st| st.st_ino)
    }

    /// Unlinks `name` (a directory if `dir`) from `parent`.
    pub(super) fn remove(&self, parent: INodeNo, name: &OsStr, dir: bool) -> Result<(), Errno> {
        self.up()?;
        let victim = self.inode_at(parent, name);
        let flag = match dir {
            true => UnlinkatFlags::RemoveDir,
            false => UnlinkatFlags::NoRemoveDir,
        };
        unlinkat(&self.nodes.get(parent)?.fd, name, flag).map_err(errno)?;
        if let Some(ino) = victim {
            self.forget_if_unlinked(ino);
        }
        Ok(())
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
        self.up()?;
        let victim = self.inode_at(new_parent, new_name);
        let (from, to) = (self.nodes.get(parent)?, self.nodes.get(new_parent)?);
        let flags = nix::fcntl::RenameFlags::from_bits(flags.bits()).ok_or(Errno::EINVAL)?;
        renameat2(&from.fd, name, &to.fd, new_name, flags).map_err(errno)?;
        if let Some(ino) = victim {
            self.forget_if_unlinked(ino);
        }
        Ok(())
    }

    pub(super) fn make_symlink(&self, parent: INodeNo, name: &OsStr, target: &Path) -> Result<FileAttr, Errno> {
        self.up()?;
        symlinkat(target, &self.nodes.get(parent)?.fd, name).map_err(errno)?;
        self.lookup_entry(parent, name)
    }

    /// A hard link to node `id`, named `new_name` in `new_parent`.
    pub(super) fn make_link(&self, id: INodeNo, new_parent: INodeNo, new_name: &OsStr) -> Result<FileAttr, Errno> {
        self.up()?;
        let node = self.nodes.get(id)?;
        let to = self.nodes.get(new_parent)?;
        linkat(
            AT_FDCWD,
            node.proc_path().as_str(),
            &to.fd,
            new_name,
            AtFlags::AT_SYMLINK_FOLLOW,
        )
        .map_err(errno)?;
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
