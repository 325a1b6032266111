//! `handlestore watch`: print changes as they happen, one line each:
//! `REVISION<TAB>KIND<TAB>KEY[<TAB>VALUE]` (KEY is the state key, or the
//! handle id with --store), or `REVISION<TAB>PROGRESS` with --progress.

use std::io::Write;

use handlestore_client::{Change, ChangeKind, WatchOptions, WatchTarget};

use super::kv::show;
use super::{CliError, Conn};

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["prefix", "key", "store"])))]
pub struct WatchArgs {
    /// State keys under this prefix ("" = all of the namespace).
    #[arg(long)]
    prefix: Option<String>,
    /// One state key.
    key: Option<String>,
    /// The handles of a store (with --id, one handle).
    #[arg(long)]
    store: Option<String>,
    /// One handle of --store.
    #[arg(long, requires = "store")]
    id: Option<String>,
    /// Start at this revision (inclusive), from the history the nodes
    /// keep; without it, the changes after now.
    #[arg(long)]
    from: Option<u64>,
    /// Print the revision reached while idle, every couple of seconds.
    #[arg(long)]
    progress: bool,
    /// Leave values out.
    #[arg(long)]
    keys_only: bool,
    /// Exit after this many changes.
    #[arg(long)]
    count: Option<u64>,
}

impl WatchArgs {
    fn target(&self) -> WatchTarget {
        match (&self.prefix, &self.key, &self.store, &self.id) {
            (Some(p), ..) => WatchTarget::prefix(p),
            (_, Some(k), ..) => WatchTarget::key(k),
            (_, _, Some(s), Some(id)) => WatchTarget::handle(s, id),
            (_, _, Some(s), None) => WatchTarget::store(s),
            // clap requires one of them.
            _ => WatchTarget::prefix(""),
        }
    }
}

fn line(c: &Change) -> String {
    let kind = match c.kind {
        ChangeKind::Put => "PUT",
        ChangeKind::Delete => "DELETE",
        ChangeKind::Expire => "EXPIRE",
    };
    match &c.value {
        Some(v) => format!("{}\t{kind}\t{}\t{}", c.revision, c.key, show(v)),
        None => format!("{}\t{kind}\t{}", c.revision, c.key),
    }
}

pub async fn run(conn: &Conn, args: WatchArgs) -> Result<(), CliError> {
    let client = conn.client()?;
    let opts = WatchOptions {
        from: args.from,
        progress: args.progress,
        keys_only: args.keys_only,
    };
    let mut watch = client.watch(args.target(), opts).await?;
    let mut seen = 0u64;
    let mut out = std::io::stdout();
    while args.count.is_none_or(|n| seen < n) {
        let batch = watch.next().await?;
        if batch.changes.is_empty() {
            let _ = writeln!(out, "{}\tPROGRESS", batch.revision);
        }
        for c in batch
            .changes
            .iter()
            .take((args.count.unwrap_or(u64::MAX) - seen) as usize)
        {
            let _ = writeln!(out, "{}", line(c));
            seen += 1;
        }
        let _ = out.flush();
    }
    Ok(())
}
