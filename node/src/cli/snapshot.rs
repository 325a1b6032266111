//! `handlestore snapshot`: save a backup from a live cluster, check one,
//! and restore one into the data directories of a new cluster.

use std::io::Write;
use std::path::{Path, PathBuf};

use handlestore_proto::v1 as pb;
use pb::admin_client::AdminClient;
use sha2::{Digest, Sha256};

use super::{CliError, Conn};
use crate::state::backup;

#[derive(clap::Subcommand, Debug)]
pub enum SnapshotCmd {
    /// Save a backup of the cluster's state to FILE (a live cluster: the
    /// node first applies everything committed when it is asked).
    Save {
        file: PathBuf,
        /// No progress bar (it is drawn only on a terminal anyway).
        #[arg(long)]
        no_progress: bool,
    },
    /// Check a backup whole and say what it holds.
    Status { file: PathBuf },
    /// Make the data directory of one member of a new cluster from a
    /// backup (run once per member, with the same FILE and
    /// --initial-cluster; then start each member on its directory).
    Restore {
        file: PathBuf,
        /// The data directory to make (must not exist, or be empty).
        #[arg(long)]
        data: PathBuf,
        /// This member's id.
        #[arg(long)]
        id: u64,
        /// The new cluster's members, ID=HOST:PORT[/PEER_HOST:PEER_PORT],...
        #[arg(long, value_parser = crate::config::parse_initial_cluster)]
        initial_cluster: std::collections::BTreeMap<u64, crate::config::Member>,
    },
}

pub async fn run(conn: &Conn, cmd: SnapshotCmd) -> Result<(), CliError> {
    match cmd {
        SnapshotCmd::Save { file, no_progress } => save(conn, &file, !no_progress).await,
        SnapshotCmd::Status { file } => {
            found(&file)?;
            let b = tokio::task::spawn_blocking(move || backup::verify(&file))
                .await
                .map_err(|e| CliError::new(2, e.to_string()))?
                .map_err(|e| CliError::new(2, e.to_string()))?;
            println!(
                "revision {}, {} records, cluster {}, format {}, sha256 {}",
                b.revision(),
                b.records,
                name_or_none(&b.cluster_id),
                b.meta.format_version,
                backup::hex(&b.sha256)
            );
            Ok(())
        }
        SnapshotCmd::Restore {
            file,
            data,
            id,
            initial_cluster,
        } => restore(file, data, id, initial_cluster).await,
    }
}

/// Exit 1 ("not found") for a backup file that is not there; a file that
/// is there but refused (cut, damaged, not a backup) is any other error, 2.
fn found(file: &Path) -> Result<(), CliError> {
    match file.try_exists() {
        Ok(true) => Ok(()),
        Ok(false) => Err(CliError::new(1, format!("{}: no such file", file.display()))),
        Err(e) => Err(CliError::new(2, format!("{}: {e}", file.display()))),
    }
}

fn name_or_none(id: &str) -> &str {
    if id.is_empty() { "(unnamed)" } else { id }
}

async fn restore(
    file: PathBuf,
    data: PathBuf,
    id: u64,
    members: std::collections::BTreeMap<u64, crate::config::Member>,
) -> Result<(), CliError> {
    found(&file)?;
    let dir = data.clone();
    let r = tokio::task::spawn_blocking(move || crate::raft::restore(&file, &dir, id, &members))
        .await
        .map_err(|e| CliError::new(2, e.to_string()))?
        .map_err(|e| CliError::new(2, format!("{e:#}")))?;
    println!(
        "restored revision {} ({} records) into {} as node {id} of cluster {} (the backup is of cluster {}); start \
         the node on it with the address --initial-cluster gave it",
        r.revision,
        r.records,
        data.display(),
        r.cluster_id,
        name_or_none(&r.from_cluster_id),
    );
    Ok(())
}

/// Streams a backup into `file`: written to `file.part`, checked against
/// the checksum the node sent and then whole, synced, and renamed.
async fn save(conn: &Conn, file: &Path, progress: bool) -> Result<(), CliError> {
    if file.exists() {
        return Err(CliError::new(
            2,
            format!("{} exists: save to a new file", file.display()),
        ));
    }
    let part = PathBuf::from(format!("{}.part", file.display()));
    let saved = receive(conn, &part, progress).await;
    let checked = match saved {
        Ok(first) => {
            let p = part.clone();
            match tokio::task::spawn_blocking(move || backup::verify(&p)).await {
                Ok(Ok(b)) => Ok((first, b)),
                Ok(Err(e)) => Err(CliError::new(2, format!("the received backup is damaged: {e}"))),
                Err(e) => Err(CliError::new(2, e.to_string())),
            }
        }
        Err(e) => Err(e),
    };
    let (first, b) = match checked {
        Ok(x) => x,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
    };
    std::fs::rename(&part, file).map_err(|e| CliError::new(2, format!("renaming {}: {e}", part.display())))?;
    println!(
        "saved {}: {} bytes, revision {}, {} records, cluster {}, sha256 {}",
        file.display(),
        first.total_bytes,
        b.revision(),
        b.records,
        name_or_none(&first.cluster_id),
        backup::hex(&b.sha256)
    );
    Ok(())
}

/// Receives the stream into `part`; returns its first message.
async fn receive(conn: &Conn, part: &Path, progress: bool) -> Result<pb::SnapshotSaveChunk, CliError> {
    let mut stream = open_stream(conn).await?;
    let io = |e: std::io::Error| CliError::new(2, format!("writing {}: {e}", part.display()));
    let mut out = std::fs::File::create(part).map_err(io)?;
    let mut hasher = Sha256::new();
    let mut first: Option<pb::SnapshotSaveChunk> = None;
    let mut bar = None;
    let mut received = 0u64;
    loop {
        let chunk = stream
            .message()
            .await
            .map_err(|s| CliError::new(2, format!("the backup broke off: {}", s.message())))?
            .ok_or_else(|| CliError::new(2, "the backup ended before its checksum"))?;
        if first.is_none() {
            bar = progress.then(|| progress_bar(chunk.total_bytes));
            first = Some(chunk.clone());
        }
        out.write_all(&chunk.data).map_err(io)?;
        hasher.update(&chunk.data);
        received += chunk.data.len() as u64;
        if let Some(b) = &bar {
            b.set_position(received);
        }
        if !chunk.sha256.is_empty() {
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            let sum: [u8; 32] = hasher.finalize().into();
            if chunk.sha256 != sum {
                return Err(CliError::new(
                    2,
                    "the received backup does not match the node's checksum",
                ));
            }
            out.sync_all().map_err(io)?;
            return first.ok_or_else(|| CliError::new(2, "empty backup stream"));
        }
    }
}

/// The stream of the first node that agrees to send a backup.
async fn open_stream(conn: &Conn) -> Result<tonic::Streaming<pb::SnapshotSaveChunk>, CliError> {
    let answer = conn
        .first_answer(|ch| async move { AdminClient::new(ch).snapshot_save(pb::SnapshotSaveRequest {}).await })
        .await?;
    Ok(answer.into_inner())
}

fn progress_bar(total: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(total);
    let style = indicatif::ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {eta}")
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}
