//! File data: open and create, read and write through the cache, fsync
//! (the only thing that makes writes durable), allocation, and attribute
//! changes (a truncation passes through at once, as metadata).

use std::ffi::OsStr;
use std::fs::File;

use fuser::{Errno, FileAttr, FileHandle, INodeNo, TimeOrNow};
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, openat};
use nix::libc;
use nix::sys::stat::{FchmodatFlags, Mode, UtimensatFlags, fchmodat, utimensat};
use nix::sys::time::TimeSpec;
use nix::unistd::{Gid, Uid, fchownat};

use super::attr::{errno, io_errno, stat_fd};
use super::fs::PowercutFs;
use super::handles::OpenFile;
use super::journal::Journal;

/// What `setattr` asks to change.
pub struct SetAttr {
    pub mode: Option<u32>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub size: Option<u64>,
    pub atime: Option<TimeOrNow>,
    pub mtime: Option<TimeOrNow>,
}

/// How the backing file is opened for the application's `flags`: for
/// reading, or for reading and writing (partly written pages are read
/// back), never appending (writes land at the offsets the kernel gives);
/// and whether every write must be synced at once.
fn backing_flags(flags: i32) -> (OFlag, bool) {
    let asked = OFlag::from_bits_truncate(flags);
    let access = match asked & OFlag::O_ACCMODE {
        OFlag::O_RDONLY => OFlag::O_RDONLY,
        _ => OFlag::O_RDWR,
    };
    let sync = asked.intersects(OFlag::O_SYNC | OFlag::O_DSYNC);
    (access | OFlag::O_CLOEXEC, sync)
}

fn time_spec(t: Option<TimeOrNow>) -> TimeSpec {
    match t {
        None => TimeSpec::UTIME_OMIT,
        Some(TimeOrNow::Now) => TimeSpec::UTIME_NOW,
        Some(TimeOrNow::SpecificTime(at)) => {
            let d = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            TimeSpec::new(d.as_secs() as libc::time_t, d.subsec_nanos() as libc::c_long)
        }
    }
}

impl PowercutFs {
    /// Keeps `file` (backing inode `ino`) open under a new handle, cut to
    /// nothing first if the application asked for `O_TRUNC`.
    fn keep_open(&self, file: File, ino: u64, flags: i32) -> Result<FileHandle, Errno> {
        let (access, sync_writes) = backing_flags(flags);
        if flags & libc::O_TRUNC != 0 && access.contains(OFlag::O_RDWR) {
            self.cache.truncate(ino, &file, 0).map_err(io_errno)?;
        }
        Ok(self.files.insert(OpenFile { file, ino, sync_writes }))
    }

    pub(super) fn open_file(&self, id: INodeNo, flags: i32) -> Result<FileHandle, Errno> {
        self.up()?;
        let node = self.nodes.get(id)?;
        let (access, _) = backing_flags(flags);
        let fd = openat(AT_FDCWD, node.proc_path().as_str(), access, Mode::empty()).map_err(errno)?;
        self.keep_open(File::from(fd), node.ino, flags)
    }

    pub(super) fn create_file(
        &self,
        (parent, name): (INodeNo, &OsStr),
        mode: u32,
        flags: i32,
    ) -> Result<(FileAttr, FileHandle), Errno> {
        if super::names::is_stash(parent, name) {
            return Err(Errno::EPERM);
        }
        let dir = self.nodes.get(parent)?;
        let (access, _) = backing_flags(flags);
        let extra = OFlag::from_bits_truncate(flags) & OFlag::O_EXCL;
        let oflags = access | extra | OFlag::O_CREAT | OFlag::O_NOFOLLOW;
        let fd = self
            .cache
            .change_names(|j| {
                let existed = Journal::exists(&dir, name);
                let fd = openat(&dir.fd, name, oflags, Mode::from_bits_truncate(mode))?;
                if !existed {
                    j.added(dir.clone(), name);
                }
                Ok(fd)
            })
            .map_err(io_errno)?;
        let ino = stat_fd(&fd)?.st_ino;
        let fh = self.keep_open(File::from(fd), ino, flags)?;
        match self.lookup_entry(parent, name) {
            Ok(attr) => Ok((attr, fh)),
            Err(e) => {
                self.files.remove(fh);
                Err(e)
            }
        }
    }

    pub(super) fn read_data(&self, fh: FileHandle, off: u64, len: u32) -> Result<Vec<u8>, Errno> {
        let h = self.files.get(fh)?;
        self.cache.read(h.ino, &h.file, off, u64::from(len)).map_err(io_errno)
    }

    pub(super) fn write_data(&self, fh: FileHandle, off: u64, data: &[u8]) -> Result<u32, Errno> {
        let h = self.files.get(fh)?;
        self.cache.write(h.ino, &h.file, off, data).map_err(io_errno)?;
        if h.sync_writes {
            self.sync(fh, true)?;
        }
        u32::try_from(data.len()).map_err(|_| Errno::EINVAL)
    }

    /// fsync and fdatasync: the file's unsynced writes go to its backing
    /// file, which is synced.
    pub(super) fn sync(&self, fh: FileHandle, datasync: bool) -> Result<(), Errno> {
        let h = self.files.get(fh)?;
        let written = self.cache.persist(h.ino).map_err(io_errno)?;
        let file = written.as_ref().unwrap_or(&h.file);
        match datasync {
            true => file.sync_data(),
            false => file.sync_all(),
        }
        .map_err(io_errno)?;
        let removed = self.cache.change_names(|j| Ok(j.file_synced())).map_err(io_errno)?;
        for ino in removed {
            self.forget_if_unlinked(ino);
        }
        Ok(())
    }

    pub(super) fn release_file(&self, fh: FileHandle) {
        if let Some(h) = self.files.remove(fh) {
            self.forget_if_unlinked(h.ino);
        }
    }

    /// fallocate: plain allocation, or with `FALLOC_FL_KEEP_SIZE` (what
    /// RocksDB preallocates with); other modes are refused (RocksDB only
    /// punches holes in preallocated space on close, and ignores errors).
    pub(super) fn allocate(&self, fh: FileHandle, off: u64, len: u64, mode: i32) -> Result<(), Errno> {
        if mode & !libc::FALLOC_FL_KEEP_SIZE != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        let h = self.files.get(fh)?;
        let keep_size = mode & libc::FALLOC_FL_KEEP_SIZE != 0;
        self.cache
            .allocate(h.ino, &h.file, off, len, keep_size)
            .map_err(io_errno)
    }

    pub(super) fn set_attr(&self, id: INodeNo, change: SetAttr) -> Result<FileAttr, Errno> {
        self.up()?;
        let node = self.nodes.get(id)?;
        let path = node.proc_path();
        if let Some(mode) = change.mode {
            let mode = Mode::from_bits_truncate(mode);
            fchmodat(AT_FDCWD, path.as_str(), mode, FchmodatFlags::FollowSymlink).map_err(errno)?;
        }
        if change.uid.is_some() || change.gid.is_some() {
            let flags = AtFlags::AT_EMPTY_PATH | AtFlags::AT_SYMLINK_NOFOLLOW;
            let (uid, gid) = (change.uid.map(Uid::from_raw), change.gid.map(Gid::from_raw));
            fchownat(&node.fd, "", uid, gid, flags).map_err(errno)?;
        }
        if let Some(size) = change.size {
            let fd = openat(
                AT_FDCWD,
                path.as_str(),
                OFlag::O_WRONLY | OFlag::O_CLOEXEC,
                Mode::empty(),
            )
            .map_err(errno)?;
            self.cache.truncate(node.ino, &File::from(fd), size).map_err(io_errno)?;
        }
        if change.atime.is_some() || change.mtime.is_some() {
            let (a, m) = (time_spec(change.atime), time_spec(change.mtime));
            utimensat(AT_FDCWD, path.as_str(), &a, &m, UtimensatFlags::FollowSymlink).map_err(errno)?;
        }
        Ok(self.attr_of(id, &stat_fd(&node.fd)?))
    }
}
