//! Directories: listings (read whole when the directory is opened), fsync
//! of a directory (which makes the changes to it durable), and the file
//! system's statistics (the backing one's).

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;

use fuser::{Errno, FileHandle, FileType, INodeNo};
use nix::dir::{Dir, Type};
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::Mode;
use nix::sys::statvfs::{Statvfs, fstatvfs};

use super::attr::{errno, io_errno};
use super::fs::PowercutFs;
use super::handles::Listed;

fn entry_kind(t: Option<Type>) -> FileType {
    match t {
        Some(Type::Directory) => FileType::Directory,
        Some(Type::Symlink) => FileType::Symlink,
        Some(Type::Fifo) => FileType::NamedPipe,
        Some(Type::Socket) => FileType::Socket,
        Some(Type::CharacterDevice) => FileType::CharDevice,
        Some(Type::BlockDevice) => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

impl PowercutFs {
    /// The backing directory of node `id`, opened for reading.
    fn open_dir(&self, id: INodeNo) -> Result<std::os::fd::OwnedFd, Errno> {
        self.up()?;
        let node = self.nodes.get(id)?;
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        openat(&node.fd, ".", flags, Mode::empty()).map_err(errno)
    }

    pub(super) fn list_dir(&self, id: INodeNo) -> Result<FileHandle, Errno> {
        let mut dir = Dir::from_fd(self.open_dir(id)?).map_err(errno)?;
        let mut listed = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(errno)?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if super::names::is_stash(id, name) {
                continue;
            }
            listed.push(Listed {
                ino: entry.ino(),
                kind: entry_kind(entry.file_type()),
                name: name.to_owned(),
            });
        }
        Ok(self.dirs.insert(listed))
    }

    /// The entries of listing `fh` from `offset` on, as many as `add`
    /// takes (it returns true when the kernel's buffer is full).
    pub(super) fn read_dir(
        &self,
        fh: FileHandle,
        offset: u64,
        mut add: impl FnMut(INodeNo, u64, FileType, &OsStr) -> bool,
    ) -> Result<(), Errno> {
        self.up()?;
        let listed = self.dirs.get(fh)?;
        let skip = usize::try_from(offset).map_err(|_| Errno::EINVAL)?;
        for (i, e) in listed.iter().enumerate().skip(skip) {
            if add(INodeNo(e.ino), i as u64 + 1, e.kind, &e.name) {
                break;
            }
        }
        Ok(())
    }

    /// fsync of a directory: the changes to it are durable, and the files
    /// whose removal that makes final are forgotten.
    pub(super) fn sync_dir(&self, id: INodeNo) -> Result<(), Errno> {
        File::from(self.open_dir(id)?).sync_all().map_err(io_errno)?;
        let ino = self.nodes.get(id)?.ino;
        let removed = self.cache.change_names(|j| Ok(j.synced(ino))).map_err(io_errno)?;
        for ino in removed {
            self.forget_if_unlinked(ino);
        }
        Ok(())
    }

    pub(super) fn stat_fs(&self) -> Result<Statvfs, Errno> {
        self.up()?;
        fstatvfs(&self.nodes.get(INodeNo::ROOT)?.fd).map_err(errno)
    }
}
