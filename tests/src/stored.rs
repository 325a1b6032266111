//! A stopped node's data directory, opened with RocksDB directly: to read
//! or change the stored format version (node/src/storage/format.rs: `raft_meta`,
//! `format_version`, u32 big-endian), as a build of another format would
//! have left it.

use std::path::Path;

const META_CF: &str = "raft_meta";
const KEY: &[u8] = b"format_version";

/// Runs `f` on the database of the data directory `data` (its node must
/// not be running).
pub fn with_db<T>(data: &Path, f: impl FnOnce(&rocksdb::DB) -> T) -> T {
    let path = data.join("db");
    let cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), &path).expect("column families");
    let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), &path, cfs).expect("open");
    let out = f(&db);
    db.flush_wal(true).expect("flush");
    out
}

/// The format version `data` is stamped with, if any.
pub fn stamped(data: &Path) -> Option<u32> {
    with_db(data, |db| {
        let v = db.get_cf(db.cf_handle(META_CF).expect("cf"), KEY).expect("get")?;
        Some(u32::from_be_bytes(v.as_slice().try_into().expect("4 bytes")))
    })
}

/// Stamps `data` with `version` (`None`: removes the stamp).
pub fn stamp(data: &Path, version: Option<u32>) {
    with_db(data, |db| {
        let cf = db.cf_handle(META_CF).expect("cf");
        match version {
            Some(v) => db.put_cf(cf, KEY, v.to_be_bytes()).expect("stamp"),
            None => db.delete_cf(cf, KEY).expect("unstamp"),
        }
    })
}
