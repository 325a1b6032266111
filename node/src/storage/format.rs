//! The stored format's version, as etcd's storage schema version: a data
//! directory is stamped with the version of the build that created it (or
//! last migrated it), in `raft_meta` under [`KEY`]; every snapshot file
//! carries the version it was written in (`SnapshotMeta.format_version`).
//!
//! At open, a directory of an older version runs the migrations after its
//! version, in order, then is stamped with [`CURRENT`]; one of a newer
//! version is refused with both versions named, before anything is
//! written. A change to what is stored (a column family, a key or record
//! layout, the snapshot file) bumps [`CURRENT`] and adds a row to
//! [`VERSIONS`] (and a migration, where older data needs one). See
//! docs/dev/contributing.md, "Changing a stored format".

use rocksdb::DB;

use crate::storage::families::{CF_LOG_META, cf};

/// The version this build writes, and the newest it reads.
pub const CURRENT: u32 = 2;

/// Where the version is kept (`raft_meta`, which no snapshot replaces).
pub const KEY: &[u8] = b"format_version";

/// Every version, oldest first, with what it stores. Version 0 is any
/// directory of a build from before versions were stamped.
pub const VERSIONS: &[(u32, &str)] = &[
    (
        0,
        "unversioned (builds before 2026-11-29): possibly per-answer `dedup`, `dedup_age` column families, \
         possibly no `history`",
    ),
    (
        1,
        "column families raft_log, raft_meta, kv, expiry, answers, answers_age, sm_meta, history; \
         snapshots HSSNAP02 carrying kv, expiry, answers, answers_age, sm_meta, history",
    ),
    (
        2,
        "as 1; snapshots HSSNAP03: HSSNAP02 closed by a CRC32C of the whole file (HSSNAP02 is still read)",
    ),
];

/// What version `v` stores ("" for a version this build does not know).
pub fn described(v: u32) -> &'static str {
    VERSIONS.iter().find(|(n, _)| *n == v).map_or("", |(_, what)| what)
}

/// A directory or snapshot this build cannot read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error(
        "{what} is in stored format version {found}, and this build reads versions up to {CURRENT}: \
         run a build of handlestore that reads version {found} (a newer one) on it"
    )]
    Newer { what: String, found: u32 },
    #[error("{what}: the stored format version is {len} bytes, not 4: the directory is damaged")]
    Damaged { what: String, len: usize },
    #[error(transparent)]
    Rocks(#[from] rocksdb::Error),
    #[error("making the directory {what}: {source}")]
    Directory { what: String, source: std::io::Error },
}

/// The version `db` is stamped with; 0 if none is.
pub fn stamped(db: &DB, what: &str) -> Result<u32, FormatError> {
    match db.get_cf(cf(db, CF_LOG_META), KEY)? {
        None => Ok(0),
        Some(v) => {
            let bytes: [u8; 4] = v.as_slice().try_into().map_err(|_| FormatError::Damaged {
                what: what.into(),
                len: v.len(),
            })?;
            Ok(u32::from_be_bytes(bytes))
        }
    }
}

/// Refuses a version newer than this build's.
pub fn check(found: u32, what: &str) -> Result<(), FormatError> {
    if found > CURRENT {
        return Err(FormatError::Newer {
            what: what.into(),
            found,
        });
    }
    Ok(())
}

/// Stamps `db` with [`CURRENT`], durably (the WAL is flushed by hand).
pub fn stamp(db: &DB) -> Result<(), FormatError> {
    db.put_cf(cf(db, CF_LOG_META), KEY, CURRENT.to_be_bytes())?;
    db.flush_wal(true)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_listed_in_order_up_to_the_current_one() {
        let listed: Vec<u32> = VERSIONS.iter().map(|(v, _)| *v).collect();
        assert_eq!(listed, (0..=CURRENT).collect::<Vec<_>>());
    }

    #[test]
    fn a_newer_version_is_refused_naming_both() {
        assert!(check(CURRENT, "d").is_ok());
        assert!(check(0, "d").is_ok());
        let e = check(CURRENT + 1, "data directory /x").expect_err("newer").to_string();
        assert!(e.contains(&format!("version {}", CURRENT + 1)), "{e}");
        assert!(e.contains(&format!("up to {CURRENT}")), "{e}");
    }
}
