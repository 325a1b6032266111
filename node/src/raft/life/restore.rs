//! `handlestore snapshot restore`: the data directory of one member of a new
//! cluster, made from a backup ([`state::backup`](crate::state::backup)), as `etcdutl snapshot
//! restore` makes one.
//!
//! The directory holds the backup's state, applied up to its revision; a
//! log that begins after it (nothing to replay); the membership of
//! `--initial-cluster` in place of the old one; a snapshot of all that, for
//! members that join later; and a new cluster name ([`raft::net::identity`](crate::raft::net::identity)), so
//! that neither a restored node nor an old one can be taken into the other
//! cluster. The name is derived from the backup's checksum and the new
//! membership, so every member restored from one file with the same flags
//! gets the same one, wherever it is restored.
//!
//! The backup is checked whole first; the directory is built beside the
//! target under a temporary name and renamed into place only once complete,
//! so a failure leaves nothing behind.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use crate::config::Member;
use crate::raft::codec::{log_id_from_pb, stored_membership_to_pb};
use crate::raft::{Membership, NodeId, StoredMembership, life::founding, log::log_store};
use crate::state::backup::{self, Backup};
use crate::state::snapshot::{self, SnapshotDir};
use crate::state::{StateLimits, StateStore};
use crate::storage::db::DbConfig;

/// What a restore made.
#[derive(Debug)]
pub struct Restored {
    /// The revision the state is at (the backup's).
    pub revision: u64,
    /// The new cluster's name, and the old one's.
    pub cluster_id: String,
    pub from_cluster_id: String,
    /// Records the snapshot held.
    pub records: u64,
}

/// Makes `data` the data directory of member `id` of the cluster `members`,
/// from the backup at `file`.
pub fn restore(file: &Path, data: &Path, id: NodeId, members: &BTreeMap<NodeId, Member>) -> anyhow::Result<Restored> {
    if !members.contains_key(&id) {
        bail!("node id {id} is not in --initial-cluster");
    }
    let backup = backup::verify(file).with_context(|| format!("{} cannot be restored", file.display()))?;
    check_target(data)?;
    let tmp = temporary_beside(data)?;
    let made = make(&backup, &tmp, id, members);
    let cluster_id = match made {
        Ok(name) => name,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    if data.exists() {
        std::fs::remove_dir(data).with_context(|| format!("replacing the empty {}", data.display()))?;
    }
    std::fs::rename(&tmp, data).with_context(|| format!("moving the restored directory to {}", data.display()))?;
    if let Some(parent) = data.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(parent)?.sync_all()?;
    }
    Ok(Restored {
        revision: backup.revision(),
        cluster_id,
        from_cluster_id: backup.cluster_id.clone(),
        records: backup.records,
    })
}

/// The directory must not exist, or be empty: a restore never mixes with
/// or replaces a node's data.
fn check_target(data: &Path) -> anyhow::Result<()> {
    let empty = match std::fs::read_dir(data) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", data.display())),
        Ok(mut entries) => entries.next().is_none(),
    };
    if !empty {
        bail!(
            "{} is not empty: restore into a new directory (a restore never replaces a node's data)",
            data.display()
        );
    }
    Ok(())
}

fn temporary_beside(data: &Path) -> anyhow::Result<PathBuf> {
    let name = data
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} names no directory", data.display()))?;
    let parent = data
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    Ok(parent.join(format!(".{name}.restoring-{}", std::process::id())))
}

/// Builds the data directory in `dir`; returns the new cluster's name.
fn make(backup: &Backup, dir: &Path, id: NodeId, members: &BTreeMap<NodeId, Member>) -> anyhow::Result<String> {
    let last = backup
        .meta
        .last_log_id
        .as_ref()
        .context("the backup holds no applied entry")?;
    let last = log_id_from_pb(last).context("the backup's log id")?;
    let db = crate::storage::db::open(&dir.join("db"), DbConfig::default())?;
    let state = StateStore::open(db.clone(), StateLimits::default())?;
    let snapshots = SnapshotDir::new(dir.join("snapshots"))?;
    let staged = dir.join("snapshots").join("restoring.snap");
    backup.extract(&staged)?;
    snapshot::install(&state, &staged)?;
    std::fs::remove_file(&staged)?;
    let voters: BTreeSet<NodeId> = members.keys().copied().collect();
    let membership = StoredMembership::new(Some(last), Membership::new(vec![voters], members.clone()));
    let name = restored_name(&backup.sha256, members);
    state.restart_as(&stored_membership_to_pb(&membership), &name)?;
    log_store::begin_after(&db, &last, id)?;
    snapshots.build(&state)?;
    db.flush_wal(true)?;
    db.flush()?;
    Ok(name)
}

/// The restored cluster's name: the same for every member restored from
/// one backup with one membership.
fn restored_name(backup_sum: &[u8; 32], members: &BTreeMap<NodeId, Member>) -> String {
    let mut h = Sha256::new();
    h.update(b"handlestore restore\0");
    h.update(backup_sum);
    h.update(founding::digest_of(members));
    data_encoding::HEXLOWER.encode(&h.finalize()[..16])
}
