//! Backup files: a snapshot ([`state::snapshot`](crate::state::snapshot)'s format) framed for keeping
//! outside a node, with a checksum over all of it.
//!
//! Format: `HSBACKUP | u32 version (BE) | snapshot file | HSSHA256 |
//! SHA-256 of every byte before the tag`. The checksum the CLI prints and
//! `Admin.SnapshotSave` sends is the SHA-256 of the whole file, as
//! `sha256sum` computes it.
//!
//! A node streams one out (`Admin.SnapshotSave`, [`Pieces`]); `handlestore
//! snapshot restore` reads one in after [`verify`] has checked it whole:
//! the framing, the checksum, and every record of the snapshot inside.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use handlestore_proto::internal::v1 as ipb;
use sha2::{Digest, Sha256};

use super::snapshot::for_each_record_in;
use super::{Result, StateError, meta};
use crate::storage::db::{CF_SM_META, STATE_CFS};

pub const MAGIC: &[u8; 8] = b"HSBACKUP";
/// The version this build writes, and the newest it reads. 2: the snapshot
/// inside is `HSSNAP03` (with its own checksum); 1 held `HSSNAP02`.
pub const VERSION: u32 = 2;
const SUM_TAG: &[u8; 8] = b"HSSHA256";
const HEADER_LEN: u64 = 12;
const TRAILER_LEN: u64 = 40;
/// How much of the snapshot one piece carries.
const PIECE: usize = 1 << 20;

fn bad(msg: impl Into<String>) -> StateError {
    StateError::Backup(msg.into())
}

fn header() -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(&VERSION.to_be_bytes());
    h
}

/// A backup file made of a snapshot file, in pieces, as it is streamed.
pub struct Pieces {
    snapshot: BufReader<File>,
    /// Over the header and the snapshot (the trailer's sum), and over the
    /// whole file.
    hasher: Sha256,
    whole: Sha256,
    total: u64,
    stage: Stage,
}

#[derive(PartialEq, Eq)]
enum Stage {
    Header,
    Body,
    Trailer,
    Done,
}

impl Pieces {
    pub fn open(snapshot_file: &Path) -> Result<Self> {
        let file = File::open(snapshot_file)?;
        let len = file.metadata()?.len();
        Ok(Self {
            snapshot: BufReader::with_capacity(PIECE, file),
            hasher: Sha256::new(),
            whole: Sha256::new(),
            total: HEADER_LEN + len + TRAILER_LEN,
            stage: Stage::Header,
        })
    }

    /// The backup file's size in bytes.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The next piece of the file; None after the last.
    pub fn next_piece(&mut self) -> Result<Option<Vec<u8>>> {
        let piece = match self.stage {
            Stage::Header => {
                self.stage = Stage::Body;
                header()
            }
            Stage::Body => {
                let mut buf = Vec::with_capacity(PIECE);
                (&mut self.snapshot).take(PIECE as u64).read_to_end(&mut buf)?;
                if buf.is_empty() {
                    self.stage = Stage::Trailer;
                    return self.next_piece();
                }
                buf
            }
            Stage::Trailer => {
                self.stage = Stage::Done;
                let mut t = SUM_TAG.to_vec();
                t.extend_from_slice(&self.hasher.clone().finalize());
                self.whole.update(&t);
                return Ok(Some(t));
            }
            Stage::Done => return Ok(None),
        };
        self.hasher.update(&piece);
        self.whole.update(&piece);
        Ok(Some(piece))
    }

    /// The SHA-256 of the whole file (once every piece was read).
    pub fn sha256(&self) -> [u8; 32] {
        self.whole.clone().finalize().into()
    }
}

/// A backup file [`verify`] checked.
#[derive(Debug, Clone)]
pub struct Backup {
    pub path: PathBuf,
    /// The snapshot's meta: what it holds everything up to.
    pub meta: ipb::SnapshotMeta,
    /// The SHA-256 of the whole file.
    pub sha256: [u8; 32],
    /// The cluster the backup was saved from ("" if it had no name).
    pub cluster_id: String,
    /// Records in the snapshot.
    pub records: u64,
    snapshot_len: u64,
}

impl Backup {
    pub fn revision(&self) -> u64 {
        self.meta.last_log_id.as_ref().map_or(0, |l| l.index)
    }

    /// Copies the snapshot inside to `to`, as a plain snapshot file.
    pub fn extract(&self, to: &Path) -> Result<()> {
        let mut f = File::open(&self.path)?;
        f.seek(SeekFrom::Start(HEADER_LEN))?;
        let mut out = File::create(to)?;
        let copied = std::io::copy(&mut f.take(self.snapshot_len), &mut out)?;
        if copied != self.snapshot_len {
            return Err(bad("the backup changed while it was read"));
        }
        out.sync_all()?;
        Ok(())
    }
}

/// Checks a backup file whole, before anything is made from it.
pub fn verify(path: &Path) -> Result<Backup> {
    let mut f = File::open(path)?;
    let len = f.metadata()?.len();
    let mut magic = [0u8; 12];
    if len < HEADER_LEN + TRAILER_LEN || f.read_exact(&mut magic).is_err() {
        return Err(bad(format!(
            "{len} bytes is too short to be a backup: the file is truncated, or not a backup"
        )));
    }
    check_header(&magic)?;
    let sha256 = check_sum(&mut f, len)?;
    let snapshot_len = len - HEADER_LEN - TRAILER_LEN;
    f.seek(SeekFrom::Start(HEADER_LEN))?;
    let mut inner = BufReader::with_capacity(PIECE, f).take(snapshot_len);
    let (mut records, mut cluster_id) = (0u64, Vec::new());
    let meta_cf = STATE_CFS.iter().position(|n| *n == CF_SM_META);
    let meta = for_each_record_in(&mut inner, |cf, k, v| {
        records += 1;
        if Some(cf) == meta_cf && k == meta::CLUSTER_ID {
            cluster_id = v;
        }
        Ok(())
    })?;
    if inner.limit() != 0 {
        return Err(bad(
            "bytes after the snapshot's end: the file is not a backup this build wrote",
        ));
    }
    Ok(Backup {
        path: path.to_path_buf(),
        meta,
        sha256,
        cluster_id: String::from_utf8_lossy(&cluster_id).into_owned(),
        records,
        snapshot_len,
    })
}

fn check_header(h: &[u8; 12]) -> Result<()> {
    let (magic, version) = h.split_at(8);
    if magic != MAGIC {
        let what = if magic.starts_with(b"HSSNAP") {
            "a node's snapshot file, not a backup (save one with `handlestore snapshot save`)"
        } else {
            "not a handlestore backup (it does not begin with HSBACKUP)"
        };
        return Err(bad(what));
    }
    let version = u32::from_be_bytes(version.try_into().unwrap_or_default());
    if version > VERSION {
        return Err(bad(format!(
            "a backup of format version {version}; this build reads up to {VERSION}: restore it with a newer build"
        )));
    }
    Ok(())
}

/// Hashes all but the trailer and compares with it; returns the SHA-256 of
/// the whole file.
fn check_sum(f: &mut File, len: u64) -> Result<[u8; 32]> {
    f.seek(SeekFrom::Start(0))?;
    let mut hasher = Sha256::new();
    let body = len - TRAILER_LEN;
    std::io::copy(&mut BufReader::with_capacity(PIECE, &mut *f).take(body), &mut hasher)?;
    let mut trailer = [0u8; TRAILER_LEN as usize];
    f.seek(SeekFrom::Start(body))?;
    f.read_exact(&mut trailer)?;
    let (tag, sum) = trailer.split_at(8);
    if tag != SUM_TAG {
        return Err(bad("no checksum at the end: the file is truncated or damaged"));
    }
    if hasher.clone().finalize().as_slice() != sum {
        return Err(bad("the checksum does not match: the file is damaged"));
    }
    hasher.update(trailer);
    Ok(hasher.finalize().into())
}

/// The SHA-256 in hex, as the CLI prints it.
pub fn hex(sum: &[u8; 32]) -> String {
    data_encoding::HEXLOWER.encode(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::snapshot;

    fn snapshot_file(dir: &Path) -> PathBuf {
        let db = crate::storage::db::open(&dir.join("db"), Default::default()).expect("db");
        let state = super::super::StateStore::open(db, Default::default()).expect("state");
        let snaps = snapshot::SnapshotDir::new(dir.join("snaps")).expect("dir");
        snaps.export(&state).expect("export").0
    }

    fn backup_of(snapshot: &Path, to: &Path) -> [u8; 32] {
        let mut pieces = Pieces::open(snapshot).expect("open");
        let mut out = Vec::new();
        while let Some(p) = pieces.next_piece().expect("piece") {
            out.extend_from_slice(&p);
        }
        assert_eq!(out.len() as u64, pieces.total());
        std::fs::write(to, out).expect("write");
        pieces.sha256()
    }

    #[test]
    fn a_backup_verifies_and_any_damage_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let snap = snapshot_file(dir.path());
        let file = dir.path().join("b.hsbak");
        let sum = backup_of(&snap, &file);
        let b = verify(&file).expect("a good backup");
        assert_eq!(b.sha256, sum);
        let good = std::fs::read(&file).expect("read");
        let as_sha256sum: [u8; 32] = Sha256::digest(&good).into();
        assert_eq!(b.sha256, as_sha256sum, "the whole file's, as sha256sum says");

        let refused = |bytes: &[u8], says: &str| {
            std::fs::write(&file, bytes).expect("write");
            let e = verify(&file).expect_err("refused").to_string();
            assert!(e.contains(says), "{e}");
        };
        refused(&good[..good.len() - 1], "checksum");
        refused(&good[..30], "too short");
        refused(&good[..10], "too short");
        let mut flipped = good.clone();
        flipped[20] ^= 1;
        refused(&flipped, "does not match");
        refused(&std::fs::read(&snap).expect("snap"), "snapshot file, not a backup");
        refused(&[b'x'; 100], "not a handlestore backup");
        let mut newer = good.clone();
        newer[11] = 9;
        refused(&newer, "format version 9");
    }
}
