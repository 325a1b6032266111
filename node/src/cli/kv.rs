//! `handlestore kv`: the state tool from the command line.

use std::io::Write;

use handlestore_client::{DeleteOptions, ListOptions, StateTool, StateValue, StoreOptions};

use super::handle::parse_ttl;
use super::{CliError, Conn};

#[derive(clap::Subcommand, Debug)]
pub enum KvCmd {
    /// Store a value under a key (a/b/c).
    Put {
        key: String,
        /// The value: JSON, or with --raw any text stored as bytes.
        value: String,
        /// Store the value as raw bytes instead of JSON.
        #[arg(long)]
        raw: bool,
        /// Time to live: a duration (30s, 5m, 1h), "never", or "default".
        #[arg(long, default_value = "default")]
        ttl: String,
        /// Compare-and-set: store only if the key is at this revision.
        #[arg(long)]
        if_revision: Option<u64>,
    },
    /// Print a key's value (exit 1 if it does not exist).
    Get { key: String },
    /// Delete a key, or with --prefix the keys under a prefix.
    Delete {
        key: String,
        #[arg(long)]
        prefix: bool,
        /// Most keys a prefix delete removes.
        #[arg(long, default_value_t = handlestore_proto::limits::DEFAULT_PREFIX_DELETE)]
        limit: u32,
    },
    /// List keys in order, following pages.
    List {
        #[arg(long, default_value = "")]
        prefix: String,
        /// Most keys to print.
        #[arg(long, default_value_t = 1000)]
        limit: usize,
        /// Print values too (KEY<TAB>VALUE).
        #[arg(long)]
        values: bool,
        /// Print one JSON array instead (fields: docs/operations.md, "JSON
        /// output").
        #[arg(long)]
        json: bool,
    },
    /// Print true or false (exit 1 if false).
    Exists { key: String },
}

/// `kv list`: the keys under `prefix` in order, following pages, up to
/// `limit`; as lines, or as one JSON array.
async fn list(tool: &impl StateTool, prefix: &str, limit: usize, values: bool, json: bool) -> Result<(), CliError> {
    let mut token = None;
    let mut printed = 0usize;
    let mut rows = Vec::new();
    while printed < limit {
        let page_size = (limit - printed).min(handlestore_proto::limits::MAX_PAGE as usize) as u32;
        let page = tool
            .list(
                prefix,
                ListOptions {
                    limit: page_size,
                    page_token: token.take(),
                    with_values: values,
                },
            )
            .await?;
        for e in &page.entries {
            let value = e.value.as_ref().filter(|_| values);
            match (json, value) {
                (true, v) => rows.push(super::json::kv_entry(&e.key, v)),
                (false, Some(v)) => println!("{}\t{}", e.key, show(v)),
                (false, None) => println!("{}", e.key),
            }
        }
        printed += page.entries.len();
        match page.next_page_token {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    if json {
        super::json::print(&serde_json::Value::Array(rows));
    }
    Ok(())
}

pub(super) fn show(v: &StateValue) -> String {
    match v {
        StateValue::Json(j) => j.to_string(),
        StateValue::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
    }
}

pub async fn run(conn: &Conn, cmd: KvCmd) -> Result<(), CliError> {
    let tool = conn.client()?.state_tool();
    match cmd {
        KvCmd::Put {
            key,
            value,
            raw,
            ttl,
            if_revision,
        } => {
            let value = if raw {
                StateValue::Bytes(value.into_bytes())
            } else {
                StateValue::Json(
                    serde_json::from_str(&value)
                        .map_err(|e| CliError::new(2, format!("value is not valid JSON (use --raw for text): {e}")))?,
                )
            };
            let opts = StoreOptions {
                ttl: parse_ttl(&ttl)?,
                expected_revision: if_revision,
            };
            let rev = tool.store(&key, value, opts).await?;
            println!("revision {rev}");
        }
        KvCmd::Get { key } => match tool.retrieve(&key).await? {
            Some(e) => {
                let mut out = std::io::stdout().lock();
                match e.value {
                    Some(StateValue::Bytes(b)) => out.write_all(&b).and_then(|_| out.write_all(b"\n")),
                    Some(v) => writeln!(out, "{}", show(&v)),
                    None => Ok(()),
                }
                .map_err(|e| CliError::new(2, e.to_string()))?;
            }
            None => return Err(CliError::new(1, format!("key {key} not found"))),
        },
        KvCmd::Delete { key, prefix, limit } => {
            let opts = if prefix {
                DeleteOptions::prefix(limit)
            } else {
                DeleteOptions::default()
            };
            let d = tool.delete(&key, opts).await?;
            println!("deleted {}{}", d.count, if d.more { " (more remain)" } else { "" });
            if !prefix && d.count == 0 {
                return Err(CliError::new(1, format!("key {key} not found")));
            }
        }
        KvCmd::List {
            prefix,
            limit,
            values,
            json,
        } => list(&tool, &prefix, limit, values, json).await?,
        KvCmd::Exists { key } => {
            let exists = tool.exists(&key).await?;
            println!("{exists}");
            if !exists {
                return Err(CliError::new(1, format!("key {key} not found")));
            }
        }
    }
    Ok(())
}
