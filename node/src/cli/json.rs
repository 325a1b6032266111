//! `--json` renderings of the commands scripts read (`status`, `member
//! list`, `namespace list`, `kv list`; `handle list` in `handle_admin`): one JSON document on stdout, with
//! the field names docs/operations.md lists ("JSON output"). Values are
//! never shown unless asked for, as in the tables.

use handlestore_client::StateValue;
use handlestore_client::auth::NamespaceUsage;
use handlestore_proto::v1 as pb;
use serde_json::{Value, json};

/// Prints one JSON document.
pub fn print(v: &Value) {
    println!("{}", serde_json::to_string_pretty(v).unwrap_or_else(|_| "null".into()));
}

pub fn members(members: &[pb::Member]) -> Value {
    members
        .iter()
        .map(|m| {
            json!({
                "id": m.id,
                "addr": m.addr,
                "peer_addr": m.peer_addr,
                "voter": m.voter,
            })
        })
        .collect()
}

pub fn namespaces(rows: &[NamespaceUsage]) -> Value {
    rows.iter()
        .map(|u| {
            let p = u.policy.clone().unwrap_or_default();
            json!({
                "name": u.name,
                "entries": u.entries,
                "bytes": u.bytes,
                "max_entries": p.max_entries,
                "max_bytes": p.max_bytes,
                "owner_bound_stores": p.owner_bound_stores,
            })
        })
        .collect()
}

/// One key of `kv list`: its value (with `--values`) as the JSON document
/// it is, or raw bytes in base64.
pub fn kv_entry(key: &str, value: Option<&StateValue>) -> Value {
    match value {
        None => json!({ "key": key }),
        Some(StateValue::Json(j)) => json!({ "key": key, "value": j }),
        Some(StateValue::Bytes(b)) => json!({ "key": key, "bytes_base64": data_encoding::BASE64.encode(b) }),
    }
}

fn clock(c: Option<&pb::ClockStatus>) -> Value {
    match c {
        None => Value::Null,
        Some(c) => json!({
            "offset_ms": c.offset_ms,
            "max_offset_ms": c.max_offset_ms,
            "trusted": c.trusted,
            "error": c.error,
        }),
    }
}

fn disk(d: Option<&pb::DiskStatus>) -> Value {
    match d {
        None => Value::Null,
        Some(d) => json!({
            "free_bytes": d.free_bytes,
            "min_free_bytes": d.min_free_bytes,
            "full": d.full,
            "sync_ms": d.sync_ms,
            "slow": d.slow,
            "problem": d.problem,
            "size_unknown": d.size_unknown,
        }),
    }
}

fn memory(m: Option<&pb::Memory>) -> Value {
    match m {
        None => Value::Null,
        Some(m) => json!({
            "rss": m.rss,
            "memtables": m.memtables,
            "block_cache": m.block_cache,
            "block_cache_pinned": m.block_cache_pinned,
            "table_readers": m.table_readers,
            "log_cache": m.log_cache,
            "watch": m.watch,
            "watch_budget": m.watch_budget,
            "watchers": m.watchers,
            "watchers_cut": m.watchers_cut,
        }),
    }
}

/// One node's answer to `status` (or why there was none).
pub fn node(endpoint: &str, answer: &Result<pb::StatusResponse, String>) -> Value {
    match answer {
        Err(e) => json!({ "endpoint": endpoint, "error": e }),
        Ok(s) => json!({
            "endpoint": endpoint,
            "id": s.node_id,
            "state": s.state,
            "term": s.term,
            "last_log_index": s.last_log_index,
            "applied_index": s.applied_index,
            "snapshot_index": s.snapshot_index,
            "forwarded_writes": s.forwarded_writes,
            "version": s.version,
            "protocol_version": s.protocol_version,
            "cluster_id": s.cluster_id,
            "clock": clock(s.clock.as_ref()),
            "memory": memory(s.memory.as_ref()),
            "disk": disk(s.disk.as_ref()),
            "peer_protocols": s.peer_protocols.iter().map(|p| json!({
                "id": p.id,
                "version": p.version,
                "problem": p.problem,
            })).collect::<Vec<_>>(),
        }),
    }
}

/// The whole `status`: the cluster as the best-informed node sees it, and
/// every node's own answer.
pub fn status(view: &pb::StatusResponse, nodes: &[(String, Result<pb::StatusResponse, String>)]) -> Value {
    let leader = (view.leader_id != 0).then(|| {
        json!({
            "id": view.leader_id,
            "addr": view.leader_addr,
            "term": view.term,
        })
    });
    json!({
        "leader": leader,
        "term": view.term,
        "members": members(&view.members),
        "nodes": nodes.iter().map(|(url, a)| node(url, a)).collect::<Vec<_>>(),
        "namespaces": namespaces(&view.namespaces),
    })
}
