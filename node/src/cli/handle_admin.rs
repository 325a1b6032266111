//! `handlestore handle list` and `handle evict`: what a store holds, and
//! removing handles from it (admin of the store).

use handlestore_client::NodeChannel;
use handlestore_proto::v1 as pb;
use pb::evict_request::What;
use pb::handles_client::HandlesClient;
use serde_json::{Value, json};

use super::{CliError, Conn};

/// `handle list`: the store's handles in id order, following pages, up to
/// `limit`; as a table, or as one JSON array.
pub struct ListArgs {
    pub store: String,
    pub prefix: String,
    pub limit: usize,
    pub values: bool,
    pub json: bool,
}

/// Calls the Handles service on the first node that answers.
async fn call<T, F, Fut>(conn: &Conn, f: F) -> Result<T, CliError>
where
    F: Fn(HandlesClient<NodeChannel>) -> Fut,
    Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    let answer = conn.first_answer(|ch| f(HandlesClient::new(ch))).await?;
    Ok(answer.into_inner())
}

pub async fn list(conn: &Conn, a: ListArgs) -> Result<(), CliError> {
    let mut token = String::new();
    let mut rows = Vec::new();
    let mut printed = 0usize;
    if !a.json {
        println!(
            "{:<40} {:>8} {:>8} {:<24} {:>8}",
            "ID", "CREATED", "MODIFIED", "EXPIRES", "SIZE"
        );
    }
    while printed < a.limit {
        let req = pb::HandleListRequest {
            namespace: conn.namespace.clone(),
            store: a.store.clone(),
            prefix: a.prefix.clone(),
            limit: (a.limit - printed).min(handlestore_proto::limits::MAX_PAGE as usize) as u32,
            page_token: std::mem::take(&mut token),
            with_values: a.values,
            read: None,
        };
        let page = call(conn, |mut c| {
            let req = req.clone();
            async move { c.list(req).await }
        })
        .await?;
        for h in &page.handles {
            if a.json {
                rows.push(handle_json(h, a.values));
            } else {
                print_row(h, a.values);
            }
        }
        printed += page.handles.len();
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    if a.json {
        super::json::print(&Value::Array(rows));
    }
    Ok(())
}

fn expires(ms: u64) -> String {
    if ms == 0 {
        return "never".into();
    }
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms)).to_string()
}

fn print_row(h: &pb::HandleInfo, values: bool) {
    let row = format!(
        "{:<40} {:>8} {:>8} {:<24} {:>8}",
        h.id,
        h.create_revision,
        h.mod_revision,
        expires(h.expires_at_ms),
        h.size
    );
    if values {
        println!("{row}\t{}", String::from_utf8_lossy(&h.value));
    } else {
        println!("{row}");
    }
}

/// One handle of `handle list --json` (fields: docs/operations.md, "JSON
/// output"): its value, with `--values`, as the JSON document it is, or in
/// base64 if it is not one.
fn handle_json(h: &pb::HandleInfo, values: bool) -> Value {
    let mut v = json!({
        "id": h.id,
        "create_revision": h.create_revision,
        "mod_revision": h.mod_revision,
        "expires_at_ms": (h.expires_at_ms != 0).then_some(h.expires_at_ms),
        "size": h.size,
        "owner": h.owner,
    });
    if values {
        v["value"] = match serde_json::from_slice::<Value>(&h.value) {
            Ok(doc) => doc,
            Err(_) => json!({ "bytes_base64": data_encoding::BASE64.encode(&h.value) }),
        };
    }
    v
}

/// `handle evict`: one id, a prefix, or the expired handles; a prefix or
/// the expired ones call again while more match.
pub async fn evict(conn: &Conn, store: &str, what: What) -> Result<(), CliError> {
    let mut total = 0u64;
    loop {
        let req = pb::EvictRequest {
            namespace: conn.namespace.clone(),
            store: store.to_string(),
            what: Some(what.clone()),
            limit: 0,
        };
        let r = call(conn, |mut c| {
            let req = req.clone();
            async move { c.evict(req).await }
        })
        .await?;
        total += r.evicted;
        if !r.more {
            break;
        }
    }
    println!("evicted {total}");
    Ok(())
}
