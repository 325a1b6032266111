//! The node's disk: the one RocksDB instance (the Raft log and the state
//! in its column families), the stored format's stamp and migrations,
//! directories that survive a power cut, and the free-space watcher. It
//! knows bytes and files, not commands or Raft: it imports only
//! `config`, `observe`, `failpoints`.

pub mod db;
pub mod disk;
pub mod durable_dir;
pub mod families;
pub mod format;
