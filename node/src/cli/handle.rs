//! `handlestore handle`: mint, get, put, delete, len; list and evict
//! (admin, `handle_admin`).

use std::time::Duration;

use handlestore_client::{ClusterHandleStore, HandleStore, Ttl};
use serde_json::Value;

use super::{CliError, Conn};

#[derive(clap::Subcommand, Debug)]
pub enum HandleCmd {
    /// Store a value under a new id and print the id.
    Mint {
        #[arg(long)]
        store: String,
        /// The value, as JSON.
        #[arg(long)]
        value: String,
        /// Time to live: a duration (30s, 5m, 1h), "never", or "default".
        #[arg(long, default_value = "default")]
        ttl: String,
        /// Id prefix: ids look like <prefix>-<26 chars>.
        #[arg(long, default_value = "")]
        prefix: String,
    },
    /// Print the value of a handle (exit 1 if it does not exist).
    Get {
        #[arg(long)]
        store: String,
        id: String,
    },
    /// Store a value under an id (create or replace).
    Put {
        #[arg(long)]
        store: String,
        id: String,
        #[arg(long)]
        value: String,
        #[arg(long, default_value = "default")]
        ttl: String,
    },
    /// Delete a handle (exit 1 if it did not exist).
    Delete {
        #[arg(long)]
        store: String,
        id: String,
    },
    /// Print the number of live handles in a store.
    Len {
        #[arg(long)]
        store: String,
    },
    /// List a store's handles in id order: id, created and modified
    /// revisions, expiry, size; values only with --values (admin).
    List {
        #[arg(long)]
        store: String,
        /// Only ids that begin with this.
        #[arg(long, default_value = "")]
        prefix: String,
        /// Most handles to print.
        #[arg(long, default_value_t = 1000)]
        limit: usize,
        /// Print values too (after a tab; with --json, as JSON).
        #[arg(long)]
        values: bool,
        /// Print one JSON array instead (fields: docs/operations.md, "JSON
        /// output").
        #[arg(long)]
        json: bool,
    },
    /// Delete handles whoever owns them: one by id, every one whose id
    /// begins with --prefix, or every --expired one not swept yet (admin).
    #[command(group(clap::ArgGroup::new("what").required(true).args(["id", "prefix", "expired"])))]
    Evict {
        #[arg(long)]
        store: String,
        id: Option<String>,
        #[arg(long)]
        prefix: Option<String>,
        #[arg(long)]
        expired: bool,
    },
}

pub(super) fn parse_ttl(s: &str) -> Result<Ttl, CliError> {
    match s {
        "default" | "0" => Ok(Ttl::Default),
        "never" | "-1" => Ok(Ttl::Never),
        d => humantime::parse_duration(d)
            .map(|d: Duration| if d.is_zero() { Ttl::Default } else { Ttl::After(d) })
            .map_err(|e| CliError::new(2, format!("--ttl {d:?}: {e} (use e.g. 30s, 5m, never)"))),
    }
}

fn parse_value(s: &str) -> Result<Value, CliError> {
    serde_json::from_str(s).map_err(|e| CliError::new(2, format!("--value is not valid JSON: {e}")))
}

fn store(conn: &Conn, name: &str, prefix: &str) -> Result<ClusterHandleStore<Value>, CliError> {
    Ok(conn.client()?.handle_store::<Value>(name).prefix(prefix).build())
}

pub async fn run(conn: &Conn, cmd: HandleCmd) -> Result<(), CliError> {
    match cmd {
        HandleCmd::Mint {
            store: s,
            value,
            ttl,
            prefix,
        } => {
            let (value, ttl) = (parse_value(&value)?, parse_ttl(&ttl)?);
            let id = store(conn, &s, &prefix)?.mint(value, ttl).await?;
            println!("{id}");
        }
        HandleCmd::Get { store: s, id } => match store(conn, &s, "")?.get(&id).await? {
            Some(v) => println!("{v}"),
            None => return Err(CliError::new(1, format!("handle {id} not found in store {s:?}"))),
        },
        HandleCmd::Put {
            store: s,
            id,
            value,
            ttl,
        } => {
            let (value, ttl) = (parse_value(&value)?, parse_ttl(&ttl)?);
            let existed = store(conn, &s, "")?.put(&id, value, ttl).await?;
            println!("{}", if existed { "replaced" } else { "created" });
        }
        HandleCmd::Delete { store: s, id } => {
            if store(conn, &s, "")?.delete(&id).await? {
                println!("deleted");
            } else {
                return Err(CliError::new(1, format!("handle {id} not found in store {s:?}")));
            }
        }
        HandleCmd::Len { store: s } => println!("{}", store(conn, &s, "")?.len().await?),
        HandleCmd::List {
            store,
            prefix,
            limit,
            values,
            json,
        } => {
            let args = super::handle_admin::ListArgs {
                store,
                prefix,
                limit,
                values,
                json,
            };
            super::handle_admin::list(conn, args).await?;
        }
        HandleCmd::Evict {
            store,
            id,
            prefix,
            expired,
        } => {
            use handlestore_proto::v1::evict_request::What;
            let what = match (id, prefix) {
                (Some(id), _) => What::Id(id),
                (None, Some(p)) => What::Prefix(p),
                (None, None) => What::Expired(expired),
            };
            super::handle_admin::evict(conn, &store, what).await?;
        }
    }
    Ok(())
}
