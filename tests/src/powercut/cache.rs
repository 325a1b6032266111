//! Every file's unsynced writes, by backing inode, under one lock, and the
//! power switch: a cut drops them all and from then on every call fails
//! with EIO, as a machine without power answers nothing.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::sync::Mutex;

use super::journal::Journal;
use super::pages::{Pages, read_upto};

/// A file with unsynced data. `pin` is a descriptor of its backing file
/// (opened for writing): it keeps the inode, and so its number, alive
/// while the data is held, and it is what the data is written through.
struct Dirty {
    pages: Pages,
    pin: File,
}

struct State {
    files: HashMap<u64, Dirty>,
    /// Directory changes not yet durable.
    names: Journal,
    off: bool,
    /// The next write to a table, manifest or snapshot file cuts the
    /// power ([`Cache::arm`]).
    armed: bool,
}

impl State {
    /// Drops every unsynced write, undoes every directory change not
    /// synced, and turns the power off.
    fn cut(&mut self) -> Dropped {
        self.off = true;
        self.armed = false;
        let dropped = Dropped {
            files: self.files.values().map(|d| backing_path(&d.pin)).collect(),
            bytes: self.files.values().map(|d| d.pages.held()).sum(),
            names: self.names.undo(),
        };
        self.files.clear();
        dropped
    }
}

/// Whether the file at `path` is one an armed cut waits for: a table, a
/// manifest or a snapshot (not the WAL or RocksDB's info log).
fn cut_at(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".sst") || name.starts_with("MANIFEST-") || name.ends_with(".snap")
}

/// What a cut dropped: how many bytes (whole pages), of which files (their
/// backing paths), and how many directory changes it undid.
#[derive(Debug, Clone, Default)]
pub struct Dropped {
    pub files: Vec<String>,
    pub bytes: u64,
    pub names: usize,
}

pub struct Cache {
    state: Mutex<State>,
}

fn powered_off() -> io::Error {
    io::Error::from_raw_os_error(nix::libc::EIO)
}

impl Cache {
    /// A cache with nothing unsynced, whose directory changes go through
    /// `names`.
    pub fn new(names: Journal) -> Self {
        Self {
            state: Mutex::new(State {
                files: HashMap::new(),
                names,
                off: false,
                armed: false,
            }),
        }
    }

    fn lock(&self) -> io::Result<std::sync::MutexGuard<'_, State>> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.off {
            return Err(powered_off());
        }
        Ok(state)
    }

    /// Fails once the power is cut.
    pub fn check(&self) -> io::Result<()> {
        self.lock().map(drop)
    }

    /// The size the application sees of inode `ino`, if it has unsynced
    /// data (else the backing file's own size is right).
    pub fn size(&self, ino: u64) -> Option<u64> {
        self.lock().ok()?.files.get(&ino).map(|d| d.pages.size())
    }

    /// Writes `data` at `off` into the cache of `ino`, whose backing file
    /// `file` is open for writing.
    pub fn write(&self, ino: u64, file: &File, off: u64, data: &[u8]) -> io::Result<()> {
        let mut state = self.lock()?;
        if state.armed {
            let path = backing_path(file);
            if cut_at(&path) {
                super::power::say_cut(&state.cut(), &format!("at a write to {path}"));
                return Err(powered_off());
            }
        }
        let dirty = match state.files.entry(ino) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(Dirty {
                pages: Pages::new(file.metadata()?.len()),
                pin: file.try_clone()?,
            }),
        };
        dirty.pages.write(&dirty.pin, off, data)
    }

    /// Reads up to `len` bytes at `off` of `ino`: its unsynced data over
    /// its backing file `file`.
    pub fn read(&self, ino: u64, file: &File, off: u64, len: u64) -> io::Result<Vec<u8>> {
        let state = self.lock()?;
        match state.files.get(&ino) {
            Some(dirty) => dirty.pages.read(&dirty.pin, off, len),
            None => {
                drop(state);
                read_upto(file, off, len)
            }
        }
    }

    /// Cuts or extends `ino`'s backing file `file` to `size` at once (a
    /// truncation is metadata, which passes through), and its cache with
    /// it.
    pub fn truncate(&self, ino: u64, file: &File, size: u64) -> io::Result<()> {
        let mut state = self.lock()?;
        file.set_len(size)?;
        if let Some(dirty) = state.files.get_mut(&ino) {
            dirty.pages.truncate(size);
        }
        Ok(())
    }

    /// Allocates `len` bytes at `off` in `ino`'s backing file `file`
    /// (`keep_size`: without growing the file).
    pub fn allocate(&self, ino: u64, file: &File, off: u64, len: u64, keep_size: bool) -> io::Result<()> {
        use nix::fcntl::{FallocateFlags, fallocate};
        let mut state = self.lock()?;
        let flags = match keep_size {
            true => FallocateFlags::FALLOC_FL_KEEP_SIZE,
            false => FallocateFlags::empty(),
        };
        let (off_t, len_t) = (i64::try_from(off), i64::try_from(len));
        let (Ok(off_t), Ok(len_t)) = (off_t, len_t) else {
            return Err(io::Error::from_raw_os_error(nix::libc::EFBIG));
        };
        fallocate(file, flags, off_t, len_t).map_err(io::Error::from)?;
        if !keep_size && let Some(dirty) = state.files.get_mut(&ino) {
            dirty.pages.allocated(off + len);
        }
        Ok(())
    }

    /// Writes `ino`'s unsynced data to its backing file and forgets it;
    /// returns the backing file written, which the caller then syncs
    /// (outside the lock), or `None` if there was nothing to write.
    pub fn persist(&self, ino: u64) -> io::Result<Option<File>> {
        let mut state = self.lock()?;
        let Some(dirty) = state.files.get(&ino) else {
            return Ok(None);
        };
        dirty.pages.persist(&dirty.pin)?;
        Ok(state.files.remove(&ino).map(|d| d.pin))
    }

    /// Forgets `ino`'s unsynced data if its backing file has no name left
    /// (unlinked, or renamed over) and `open` is false: no one can read it
    /// any more.
    pub fn forget_if_unlinked(&self, ino: u64, open: bool) {
        use std::os::unix::fs::MetadataExt;
        let Ok(mut state) = self.lock() else { return };
        let gone = state
            .files
            .get(&ino)
            .is_some_and(|d| d.pin.metadata().is_ok_and(|m| m.nlink() == 0));
        if gone && !open {
            state.files.remove(&ino);
        }
    }

    /// Makes a change to a directory through the journal, under the
    /// lock, so that a cut comes before it or after it is recorded.
    pub fn change_names<R>(&self, f: impl FnOnce(&mut Journal) -> io::Result<R>) -> io::Result<R> {
        f(&mut self.lock()?.names)
    }

    /// The power cut: every unsynced write is dropped, and every call
    /// from now on fails with EIO.
    pub fn cut(&self) -> Dropped {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).cut()
    }

    /// Arms a cut at the next write to a table (`*.sst`), manifest
    /// (`MANIFEST-*`) or snapshot (`*.snap`) file: that write is refused,
    /// and the power cut, while the file is half written.
    pub fn arm(&self) {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).armed = true;
    }
}

/// Where `file` is in the backing directory, for messages.
fn backing_path(file: &File) -> String {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .map_or_else(|e| format!("(unknown: {e})"), |p| p.display().to_string())
}
