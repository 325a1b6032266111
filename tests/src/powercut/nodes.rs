//! The kernel's inode numbers (FUSE node ids) and what they stand for: an
//! `O_PATH` descriptor of the backing file or directory, so that renames
//! of it or of a directory above it never lose it. A node lives while the
//! kernel holds lookups of it; its descriptor keeps the backing inode (and
//! so its number) from being reused meanwhile.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

use fuser::{Errno, INodeNo};

pub struct Node {
    /// `O_PATH | O_NOFOLLOW`: usable as the directory of `*at` calls, or
    /// reopened through `/proc/self/fd`.
    pub fd: OwnedFd,
    /// The backing inode number.
    pub ino: u64,
}

impl Node {
    /// A path that opens the backing file itself (not a copy of its name).
    pub fn proc_path(&self) -> String {
        format!("/proc/self/fd/{}", self.fd.as_raw_fd())
    }
}

struct Entry {
    node: Arc<Node>,
    lookups: u64,
}

struct Table {
    by_id: HashMap<u64, Entry>,
    by_ino: HashMap<u64, u64>,
    next: u64,
}

pub struct Nodes {
    table: Mutex<Table>,
}

impl Nodes {
    /// The table with the root (node 1) only: the backing directory.
    pub fn new(root: OwnedFd, ino: u64) -> Self {
        let root = Entry {
            node: Arc::new(Node { fd: root, ino }),
            lookups: 1,
        };
        Self {
            table: Mutex::new(Table {
                by_id: HashMap::from([(INodeNo::ROOT.0, root)]),
                by_ino: HashMap::from([(ino, INodeNo::ROOT.0)]),
                next: INodeNo::ROOT.0 + 1,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, id: INodeNo) -> Result<Arc<Node>, Errno> {
        self.lock()
            .by_id
            .get(&id.0)
            .map(|e| e.node.clone())
            .ok_or(Errno::ESTALE)
    }

    /// Counts one lookup of backing inode `ino`, just opened as `fd`;
    /// returns its node id (the one it already has, if it has one).
    pub fn remember(&self, fd: OwnedFd, ino: u64) -> INodeNo {
        let mut table = self.lock();
        if let Some(&id) = table.by_ino.get(&ino)
            && let Some(entry) = table.by_id.get_mut(&id)
        {
            entry.lookups += 1;
            return INodeNo(id);
        }
        let id = table.next;
        table.next += 1;
        let node = Arc::new(Node { fd, ino });
        table.by_id.insert(id, Entry { node, lookups: 1 });
        table.by_ino.insert(ino, id);
        INodeNo(id)
    }

    /// The kernel dropped `n` lookups of node `id`; at none, it goes.
    pub fn forget(&self, id: INodeNo, n: u64) {
        if id == INodeNo::ROOT {
            return;
        }
        let mut table = self.lock();
        let Some(entry) = table.by_id.get_mut(&id.0) else {
            return;
        };
        entry.lookups = entry.lookups.saturating_sub(n);
        if entry.lookups == 0 {
            let ino = entry.node.ino;
            table.by_id.remove(&id.0);
            if table.by_ino.get(&ino) == Some(&id.0) {
                table.by_ino.remove(&ino);
            }
        }
    }
}
