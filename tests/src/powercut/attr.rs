//! A backing file's `stat` as the kernel is told it, and errors as errnos.

use std::os::fd::AsFd;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{Errno, FileAttr, FileType, INodeNo};
use nix::libc;
use nix::sys::stat::{FileStat, fstatat};

/// How long the kernel may keep an answer: not at all, so every size and
/// name it shows comes from here (the sizes of files with unsynced data
/// are this process's, not the backing files').
pub const TTL: Duration = Duration::ZERO;

/// `stat` of what `fd` (an `O_PATH` descriptor or an open file) stands for.
pub fn stat_fd(fd: impl AsFd) -> Result<FileStat, Errno> {
    fstatat(
        fd,
        "",
        nix::fcntl::AtFlags::AT_EMPTY_PATH | nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
    )
    .map_err(errno)
}

pub fn errno(e: nix::Error) -> Errno {
    Errno::from_i32(e as i32)
}

pub fn io_errno(e: std::io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

pub fn kind(mode: u32) -> FileType {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => FileType::Directory,
        libc::S_IFLNK => FileType::Symlink,
        libc::S_IFIFO => FileType::NamedPipe,
        libc::S_IFSOCK => FileType::Socket,
        libc::S_IFCHR => FileType::CharDevice,
        libc::S_IFBLK => FileType::BlockDevice,
        _ => FileType::RegularFile,
    }
}

fn time(secs: i64, nanos: i64) -> SystemTime {
    let at = Duration::new(secs.unsigned_abs(), nanos.clamp(0, 999_999_999) as u32);
    match secs >= 0 {
        true => UNIX_EPOCH + at,
        false => UNIX_EPOCH - at,
    }
}

/// The attributes of node `id` from its backing `st`, with `size` (the
/// size the application sees, unsynced writes included) in place of the
/// backing file's.
pub fn attr(id: INodeNo, st: &FileStat, size: Option<u64>) -> FileAttr {
    FileAttr {
        ino: id,
        size: size.unwrap_or(st.st_size as u64),
        blocks: st.st_blocks as u64,
        atime: time(st.st_atime, st.st_atime_nsec),
        mtime: time(st.st_mtime, st.st_mtime_nsec),
        ctime: time(st.st_ctime, st.st_ctime_nsec),
        crtime: UNIX_EPOCH,
        kind: kind(st.st_mode),
        perm: (st.st_mode & 0o7777) as u16,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}
