//! Snapshot files: a point-in-time copy of the state machine's column
//! families, taken from a RocksDB snapshot (so building one never blocks
//! writes), written to disk, streamed to laggards in chunks, and installed by
//! replacing the state column families.
//!
//! File format (all integers big-endian):
//! `MAGIC | u32 meta_len | meta (prost SnapshotMeta) |`
//! `{ u8 cf | u32 key_len | key | u32 value_len | value }* | u8 END | u64 records |`
//! `u32 crc32c` (the CRC32C of every byte before it). A file that fails any
//! check (a cut, a flipped bit) is never installed or sent: a received one
//! is refused, so the leader sends it again, and a node's own is rebuilt.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use handlestore_proto::internal::v1 as ipb;
use prost::Message;
use rocksdb::{DB, IteratorMode, WriteBatch};

use super::{Result, StateError, StateStore, decode, meta};
use crate::failpoints;
use crate::storage::db::{self, CF_SM_META, STATE_CFS};

/// The files `write_new` made in this process, for unique names.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// 03: 02 closed by a CRC32C of the whole file.
const MAGIC: &[u8; 8] = b"HSSNAP03";
/// 02: exactly-once answers kept per client (`answers`, `answers_age` in the
/// places of 01's per-answer `dedup`, `dedup_age`), and no checksum: still
/// read (a leader of the previous build sends them during a rolling
/// upgrade, and backups of it hold them).
const UNSUMMED_MAGIC: &[u8; 8] = b"HSSNAP02";
/// 01 files are refused.
const LEGACY_MAGIC: &[u8; 8] = b"HSSNAP01";
const END: u8 = 0xFF;
/// Flush the install write batch at this size.
const INSTALL_BATCH_BYTES: usize = 4 << 20;
/// Upper bound on one key or value in a snapshot file (sanity check).
const MAX_FIELD: u32 = 256 << 20;
const CURRENT: &str = "current.snap";

/// The snapshot directory of one node.
pub struct SnapshotDir {
    dir: PathBuf,
    /// Serializes replacing `current.snap` (a build finishing while a
    /// received snapshot is installed).
    replace: std::sync::Mutex<()>,
}

impl SnapshotDir {
    pub fn new(dir: PathBuf) -> Result<Self> {
        crate::storage::durable_dir::create(&dir)?;
        // A snapshot of an earlier format cannot be read (Raft reads the
        // current snapshot at start, so it would stop the node). The node's
        // state is in its database, not in that file: drop it, and the next
        // snapshot is built in the current format.
        let current = dir.join(CURRENT);
        let mut magic = [0u8; 8];
        if File::open(&current).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && &magic == LEGACY_MAGIC {
            tracing::warn!("removing {} (a snapshot of an earlier format)", current.display());
            fs::remove_file(&current)?;
        }
        Ok(Self {
            dir,
            replace: std::sync::Mutex::new(()),
        })
    }

    pub fn current_path(&self) -> PathBuf {
        self.dir.join(CURRENT)
    }

    /// A fresh path for a snapshot being received.
    pub fn incoming_path(&self, snapshot_id: &str) -> PathBuf {
        let safe: String = snapshot_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
            .take(100)
            .collect();
        self.dir.join(format!("incoming-{safe}.snap"))
    }

    /// The metadata of the current snapshot, if there is one.
    pub fn current_meta(&self) -> Result<Option<ipb::SnapshotMeta>> {
        let path = self.current_path();
        if !path.exists() {
            return Ok(None);
        }
        let mut r = BufReader::new(File::open(&path)?);
        Ok(Some(read_header(&mut r)?.0))
    }

    /// The current snapshot, opened once and read whole through that open
    /// file: its metadata and the file, rewound. The caller sends that very
    /// file, so a build renaming a newer one into place meanwhile cannot
    /// swap the bytes under the metadata. A damaged one (bit rot, a cut) is
    /// never sent, but removed and built again from `state`.
    pub fn current_verified(&self, state: &StateStore) -> Result<Option<(File, ipb::SnapshotMeta)>> {
        let path = self.current_path();
        let Some(file) = open_if_present(&path)? else {
            return Ok(None);
        };
        match verify_open(&file) {
            Ok(meta) => Ok(Some((file, meta))),
            Err(e) => {
                tracing::error!(
                    "the current snapshot {} is damaged ({e}): building it again",
                    path.display()
                );
                fs::remove_file(&path)?;
                self.build(state).map(Some)
            }
        }
    }

    /// Builds a snapshot of `state` and makes it current. Returns the file
    /// built, open (so it stays the same bytes whatever replaces the
    /// current one later), and its meta.
    pub fn build(&self, state: &StateStore) -> Result<(File, ipb::SnapshotMeta)> {
        let (tmp, meta) = self.write_new(state, "building")?;
        let file = File::open(&tmp)?;
        self.make_current(&tmp, &meta)?;
        Ok((file, meta))
    }

    /// Builds a snapshot of `state` into a file of its own, apart from the
    /// current one (a backup being saved; see [`state::backup`](crate::state::backup)). The caller
    /// removes it when done; a restart removes what is left.
    pub fn export(&self, state: &StateStore) -> Result<(PathBuf, ipb::SnapshotMeta)> {
        self.write_new(state, "export")
    }

    /// Writes a snapshot of `state` to a new file named
    /// `{prefix}-{id}-{n}.snap`, `n` this process's count of such files.
    fn write_new(&self, state: &StateStore, prefix: &str) -> Result<(PathBuf, ipb::SnapshotMeta)> {
        let db = state.db();
        let snap = db.snapshot();
        let meta_cf = db::cf(db, CF_SM_META);
        let last_log_id: Option<ipb::LogId> = snap
            .get_cf(meta_cf, meta::APPLIED)?
            .map(|raw| decode(&raw, "sm_meta"))
            .transpose()?;
        let last_membership: Option<ipb::StoredMembership> = snap
            .get_cf(meta_cf, meta::MEMBERSHIP)?
            .map(|raw| decode(&raw, "sm_meta"))
            .transpose()?;
        let (term, index) = last_log_id
            .as_ref()
            .map(|l| (l.leader_id.as_ref().map(|x| x.term).unwrap_or(0), l.index))
            .unwrap_or((0, 0));
        let meta = ipb::SnapshotMeta {
            last_log_id,
            last_membership,
            snapshot_id: format!("{term}-{index}-{}", crate::clock::wall_ms()),
            format_version: crate::storage::format::CURRENT,
        };
        // Two files built in one millisecond at one index (two backups
        // saved at once) share a snapshot id, not a file: one removed
        // when its stream ends must not be the other's.
        let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
        let tmp = self.dir.join(format!("{prefix}-{}-{n}.snap", meta.snapshot_id));
        let written = (|| -> Result<()> {
            let mut w = Summed::new(BufWriter::with_capacity(1 << 20, File::create(&tmp)?));
            write_header(&mut w, &meta)?;
            let mut records = 0u64;
            for (i, name) in STATE_CFS.iter().enumerate() {
                // A full scan: do not push the working set out of the cache.
                let mut opts = rocksdb::ReadOptions::default();
                opts.fill_cache(false);
                let iter = snap.iterator_cf_opt(db::cf(db, name), opts, IteratorMode::Start);
                for item in iter {
                    let (k, v) = item?;
                    w.write_all(&[i as u8])?;
                    write_field(&mut w, &k)?;
                    write_field(&mut w, &v)?;
                    records += 1;
                }
                if i == 0 {
                    failpoints::hit(failpoints::SNAPSHOT_BUILD_MID);
                }
            }
            w.write_all(&[END])?;
            w.write_all(&records.to_be_bytes())?;
            let (mut w, sum) = (w.inner, w.crc);
            w.write_all(&sum.to_be_bytes())?;
            let f = w.into_inner().map_err(|e| e.into_error())?;
            f.sync_all()?;
            Ok(())
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        Ok((tmp, meta))
    }

    /// Atomically makes `path` the current snapshot, unless the current one
    /// is already newer.
    pub fn make_current(&self, path: &Path, meta: &ipb::SnapshotMeta) -> Result<()> {
        let _guard = self.replace.lock().unwrap_or_else(|p| p.into_inner());
        let newer_exists = self.current_meta()?.is_some_and(|cur| {
            let idx = |m: &ipb::SnapshotMeta| m.last_log_id.as_ref().map(|l| l.index);
            idx(&cur) > idx(meta)
        });
        if newer_exists {
            fs::remove_file(path)?;
            return Ok(());
        }
        self.rename_current(path)
    }

    /// Makes `path` the current snapshot unconditionally (installing a
    /// snapshot the leader sent).
    pub fn force_current(&self, path: &Path) -> Result<()> {
        let _guard = self.replace.lock().unwrap_or_else(|p| p.into_inner());
        self.rename_current(path)
    }

    fn rename_current(&self, path: &Path) -> Result<()> {
        fs::rename(path, self.current_path())?;
        File::open(&self.dir)?.sync_all()?;
        Ok(())
    }

    /// Removes snapshot files left half-written by a previous run. Call at
    /// start-up, before anything builds or receives a snapshot.
    pub fn remove_leftovers(&self) -> Result<()> {
        for entry in fs::read_dir(&self.dir)? {
            let p = entry?.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if ["building-", "incoming-", "export-"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                fs::remove_file(&p)?;
            }
        }
        Ok(())
    }
}

fn write_header(w: &mut impl Write, meta: &ipb::SnapshotMeta) -> std::io::Result<()> {
    w.write_all(MAGIC)?;
    write_field(w, &meta.encode_to_vec())
}

fn write_field(w: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    w.write_all(&(bytes.len() as u32).to_be_bytes())?;
    w.write_all(bytes)
}

fn bad(msg: impl Into<String>) -> StateError {
    StateError::Snapshot(msg.into())
}

/// A reader or writer that keeps the CRC32C of the bytes through it.
struct Summed<T> {
    inner: T,
    crc: u32,
}

impl<T> Summed<T> {
    fn new(inner: T) -> Self {
        Self { inner, crc: 0 }
    }
}

impl<W: Write> Write for Summed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Summed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        Ok(n)
    }
}

/// Reads and checks the header of a snapshot file; tells whether the file
/// ends in a checksum.
fn read_header(r: &mut impl Read) -> Result<(ipb::SnapshotMeta, bool)> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic).map_err(|_| bad("file too short"))?;
    if &magic == LEGACY_MAGIC {
        return Err(bad(
            "a snapshot of an earlier format (HSSNAP01, per-answer exactly-once table); this version reads HSSNAP02 and 03",
        ));
    }
    let summed = match &magic {
        MAGIC => true,
        UNSUMMED_MAGIC => false,
        _ => return Err(bad("not a handlestore snapshot (bad magic)")),
    };
    let raw = read_field(r)?;
    let meta: ipb::SnapshotMeta = decode(&raw, "snapshot meta")?;
    crate::storage::format::check(meta.format_version, "a snapshot").map_err(|e| bad(e.to_string()))?;
    Ok((meta, summed))
}

fn read_field(r: &mut impl Read) -> Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).map_err(|_| bad("truncated record"))?;
    let len = u32::from_be_bytes(len);
    if len > MAX_FIELD {
        return Err(bad(format!("record of {len} bytes is implausible")));
    }
    // Grows as the bytes arrive: a length alone does not allocate.
    let mut buf = Vec::new();
    let got = r.by_ref().take(u64::from(len)).read_to_end(&mut buf);
    if got.map_err(|_| bad("truncated record"))? != len as usize {
        return Err(bad("truncated record"));
    }
    Ok(buf)
}

/// Reads every record of a snapshot file, calling `f(cf_index, key, value)`.
/// Fails on any malformation, including a missing end marker or a wrong
/// record count.
fn for_each_record(path: &Path, f: impl FnMut(usize, Vec<u8>, Vec<u8>) -> Result<()>) -> Result<ipb::SnapshotMeta> {
    let mut r = BufReader::with_capacity(1 << 20, File::open(path)?);
    for_each_record_in(&mut r, f)
}

/// As [`for_each_record`], from a reader positioned at the snapshot's
/// start; reads up to its end marker, record count and checksum, no
/// further. `f` may be called before a later check fails: only a file that
/// [`verify`] passed is installed.
pub fn for_each_record_in(
    r: &mut impl Read,
    mut f: impl FnMut(usize, Vec<u8>, Vec<u8>) -> Result<()>,
) -> Result<ipb::SnapshotMeta> {
    let mut r = Summed::new(r);
    let (meta, summed) = read_header(&mut r)?;
    let mut records = 0u64;
    loop {
        let mut tag = [0u8; 1];
        r.read_exact(&mut tag).map_err(|_| bad("missing end marker"))?;
        if tag[0] == END {
            let mut n = [0u8; 8];
            r.read_exact(&mut n).map_err(|_| bad("missing record count"))?;
            if u64::from_be_bytes(n) != records {
                return Err(bad("record count mismatch"));
            }
            if summed {
                check_sum(&mut r)?;
            }
            return Ok(meta);
        }
        let cf = tag[0] as usize;
        if cf >= STATE_CFS.len() {
            return Err(bad(format!("unknown column family tag {cf}")));
        }
        let k = read_field(&mut r)?;
        let v = read_field(&mut r)?;
        f(cf, k, v)?;
        records += 1;
    }
}

/// Reads the checksum after the bytes `r` has summed, and compares.
fn check_sum(r: &mut Summed<impl Read>) -> Result<()> {
    let mut sum = [0u8; 4];
    r.inner.read_exact(&mut sum).map_err(|_| bad("missing checksum"))?;
    if u32::from_be_bytes(sum) != r.crc {
        return Err(bad("checksum mismatch: the snapshot is damaged"));
    }
    Ok(())
}

/// Checks that a snapshot file is complete, well-formed and unchanged.
pub fn verify(path: &Path) -> Result<ipb::SnapshotMeta> {
    for_each_record(path, |_, _, _| Ok(()))
}

/// As [`verify`], through a file already open, which is left rewound.
fn verify_open(file: &File) -> Result<ipb::SnapshotMeta> {
    let mut reader = file;
    reader.seek(SeekFrom::Start(0))?;
    let meta = for_each_record_in(&mut BufReader::with_capacity(1 << 20, reader), |_, _, _| Ok(()))?;
    reader.seek(SeekFrom::Start(0))?;
    Ok(meta)
}

/// The file at `path` opened for reading, or `None` if there is none.
fn open_if_present(path: &Path) -> Result<Option<File>> {
    match File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Replaces the state machine's contents with the snapshot at `path`
/// (which must already be the current snapshot file, so that a crash in the
/// middle is finished on the next start; see [`resume_install`]).
pub fn install(state: &StateStore, path: &Path) -> Result<ipb::SnapshotMeta> {
    let db = state.db();
    let meta = verify(path)?;
    let meta_cf = db::cf(db, CF_SM_META);
    let mut sync = rocksdb::WriteOptions::default();
    sync.set_sync(true);
    db.put_cf_opt(meta_cf, meta::INSTALLING, [1], &sync)?;
    state.reset_apply_hints();
    clear_state(db)?;
    failpoints::hit(failpoints::SNAPSHOT_INSTALL_MID);
    let mut wb = WriteBatch::default();
    for_each_record(path, |cf, k, v| {
        let name = STATE_CFS[cf];
        // The marker is ours, not the snapshot's.
        if !(name == CF_SM_META && k == meta::INSTALLING) {
            wb.put_cf(db::cf(db, name), k, v);
        }
        if wb.size_in_bytes() >= INSTALL_BATCH_BYTES {
            db.write(std::mem::take(&mut wb))?;
        }
        Ok(())
    })?;
    if let Some(l) = &meta.last_log_id {
        wb.put_cf(meta_cf, meta::APPLIED, l.encode_to_vec());
    }
    if let Some(m) = &meta.last_membership {
        wb.put_cf(meta_cf, meta::MEMBERSHIP, m.encode_to_vec());
    }
    wb.delete_cf(meta_cf, meta::INSTALLING);
    db.write_opt(wb, &sync)?;
    state.publish_installed(meta.last_log_id.as_ref().map(|l| l.index).unwrap_or(0))?;
    Ok(meta)
}

/// Finishes an install that a crash interrupted. Call once at start-up.
pub fn resume_install(state: &StateStore, dir: &SnapshotDir) -> Result<bool> {
    let db = state.db();
    if db.get_cf(db::cf(db, CF_SM_META), meta::INSTALLING)?.is_none() {
        return Ok(false);
    }
    tracing::warn!("a snapshot install was interrupted; installing it again");
    install(state, &dir.current_path())?;
    Ok(true)
}

fn clear_state(db: &DB) -> Result<()> {
    // Every state key is shorter than this (ids, stores and namespaces are
    // length-checked at the api), so the range covers all of them.
    let end = vec![0xFFu8; 64 * 1024];
    for name in STATE_CFS {
        let cf = db::cf(db, name);
        if name == CF_SM_META {
            // Keep the install marker: it must survive until the end.
            let mut after = meta::INSTALLING.to_vec();
            after.push(0);
            db.delete_range_cf(cf, [].as_slice(), meta::INSTALLING)?;
            db.delete_range_cf(cf, after.as_slice(), end.as_slice())?;
        } else {
            db.delete_range_cf(cf, [].as_slice(), end.as_slice())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty state and its snapshot directory, in a temporary
    /// directory kept as long as the first value is.
    fn fresh() -> (tempfile::TempDir, std::sync::Arc<StateStore>, SnapshotDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crate::storage::db::open(&dir.path().join("db"), Default::default()).expect("db");
        let state = StateStore::open(db, Default::default()).expect("state");
        let snaps = SnapshotDir::new(dir.path().join("snaps")).expect("snaps");
        (dir, state, snaps)
    }

    /// A file of format 1 (`HSSNAP02`: no checksum) as the previous build
    /// wrote it, from one of this build's.
    fn unsummed(summed: &[u8]) -> Vec<u8> {
        let mut old = UNSUMMED_MAGIC.to_vec();
        old.extend_from_slice(&summed[MAGIC.len()..summed.len() - 4]);
        old
    }

    #[test]
    fn a_snapshot_of_the_previous_format_is_read_and_one_damaged_is_refused() {
        let (_dir, state, snaps) = fresh();
        let (path, _) = snaps.export(&state).expect("export");
        let summed = fs::read(&path).expect("read");
        assert_eq!(&summed[..8], MAGIC);
        verify(&path).expect("intact");
        fs::write(&path, unsummed(&summed)).expect("write");
        verify(&path).expect("the previous format is read");
        // The last byte before the end marker (a record's), and the sum.
        for back in [14, 1] {
            let mut damaged = summed.clone();
            let at = damaged.len() - back;
            damaged[at] ^= 1;
            fs::write(&path, &damaged).expect("write");
            let e = verify(&path).expect_err("refused").to_string();
            assert!(e.contains("checksum mismatch"), "{e}");
        }
        fs::write(&path, &summed[..summed.len() - 2]).expect("write");
        let e = verify(&path).expect_err("refused").to_string();
        assert!(e.contains("missing checksum"), "{e}");
    }

    /// The records of the snapshot in `file`, read from its start.
    fn records_in(mut file: &File) -> usize {
        file.seek(SeekFrom::Start(0)).expect("rewinds");
        let mut n = 0;
        for_each_record_in(&mut BufReader::new(file), |_, _, _| {
            n += 1;
            Ok(())
        })
        .expect("intact");
        n
    }

    /// The bug this guards against: the leader verified `current.snap` by
    /// its path, then opened the path again to send it, and a build
    /// finishing in between sent the newer file under the older metadata.
    #[test]
    fn the_snapshot_handed_out_stays_the_file_verified_whatever_replaces_it() {
        let (_dir, state, snaps) = fresh();
        snaps.build(&state).expect("first build");
        let (sent, _) = snaps.current_verified(&state).expect("reads").expect("one");
        let before = records_in(&sent);
        let db = state.db();
        db.put_cf(crate::storage::db::cf(db, STATE_CFS[0]), b"k", b"v")
            .expect("put");
        let (built, _) = snaps.build(&state).expect("second build");
        assert_eq!(records_in(&built), before + 1);
        let current = File::open(snaps.current_path()).expect("current");
        assert_eq!(records_in(&current), before + 1, "the second build is current");
        assert_eq!(records_in(&sent), before, "the file handed out is unchanged");
    }

    /// The bug this guards against: two backups saved at once, at one
    /// applied index in one millisecond, were one file, and the first
    /// stream to end removed the other's (fuzz.rs saw `SnapshotSave`
    /// answer "opening the backup: No such file").
    #[test]
    fn two_exports_of_one_state_at_once_are_two_files() {
        let (_dir, state, snaps) = fresh();
        // Many at once: a name of the index and the millisecond alone
        // repeats among them.
        let paths: Vec<PathBuf> = (0..20).map(|_| snaps.export(&state).expect("export").0).collect();
        let distinct: std::collections::HashSet<&PathBuf> = paths.iter().collect();
        assert_eq!(distinct.len(), paths.len(), "{paths:?}");
        fs::remove_file(&paths[0]).expect("the first is done");
        for p in &paths[1..] {
            verify(p).expect("the others are whole");
        }
    }

    #[test]
    fn a_current_snapshot_of_the_earlier_format_is_dropped_at_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut old = LEGACY_MAGIC.to_vec();
        old.extend_from_slice(&[0, 0, 0, 0]);
        fs::write(dir.path().join(CURRENT), &old).expect("write");
        let snaps = SnapshotDir::new(dir.path().to_path_buf()).expect("opens");
        assert!(snaps.current_meta().expect("readable").is_none());
        assert!(!snaps.current_path().exists());
        // Any other unreadable file is an error, not silently dropped.
        fs::write(snaps.current_path(), b"NOTASNAP....").expect("write");
        let snaps = SnapshotDir::new(dir.path().to_path_buf()).expect("opens");
        assert!(snaps.current_meta().is_err());
    }
}
