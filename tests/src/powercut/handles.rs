//! Open files and directories, by the handle number the kernel is given.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::sync::{Arc, Mutex};

use fuser::{Errno, FileHandle, FileType};

/// An open file: its backing file, opened read-only or read-write.
pub struct OpenFile {
    pub file: File,
    /// The backing inode number (the cache's key).
    pub ino: u64,
    /// Opened with `O_SYNC` or `O_DSYNC`: every write is synced at once.
    pub sync_writes: bool,
}

/// One entry of a directory listing.
pub struct Listed {
    pub ino: u64,
    pub kind: FileType,
    pub name: OsString,
}

pub struct Handles<T> {
    map: Mutex<(u64, HashMap<u64, Arc<T>>)>,
}

impl<T> Default for Handles<T> {
    fn default() -> Self {
        Self {
            map: Mutex::new((1, HashMap::new())),
        }
    }
}

impl<T> Handles<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, HashMap<u64, Arc<T>>)> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn insert(&self, value: T) -> FileHandle {
        let mut map = self.lock();
        let fh = map.0;
        map.0 += 1;
        map.1.insert(fh, Arc::new(value));
        FileHandle(fh)
    }

    pub fn get(&self, fh: FileHandle) -> Result<Arc<T>, Errno> {
        self.lock().1.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    pub fn remove(&self, fh: FileHandle) -> Option<Arc<T>> {
        self.lock().1.remove(&fh.0)
    }

    /// Whether any open handle satisfies `f`.
    pub fn any(&self, f: impl Fn(&T) -> bool) -> bool {
        self.lock().1.values().any(|v| f(v))
    }
}
