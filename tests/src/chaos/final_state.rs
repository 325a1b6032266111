//! The final state of a run, read once the faults are over and the cluster
//! has recovered: what the checkers compare the history with.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::Result;
use futures::StreamExt;
use handlestore_client::{Client, ClusterHandleStore, HandleStore};
use serde_json::{Value, json};

use super::checker::FinalState;
use super::history::{Outcome, Record};
use crate::mcp::{ToolOutcome, call, connect};

/// Final-state reads in flight at once after a run.
const FINAL_READS_IN_FLIGHT: usize = 32;

/// Every cart an acknowledged operation names: the ones created, and the
/// ones items were added to or checked out.
pub(super) fn acknowledged_carts(records: &[Record]) -> BTreeSet<String> {
    records
        .iter()
        .filter(|r| r.outcome == Outcome::Ok)
        .filter_map(|r| match r.kind {
            "create_cart" => r.output.get("cart_id").and_then(Value::as_str).map(str::to_string),
            "add_item" | "checkout" => Some(r.key.clone()),
            _ => None,
        })
        .collect()
}

/// Reads `carts` through the MCP front at `front_url`, and with a client,
/// every acknowledged mint of `records` through it.
pub(super) async fn read(
    carts: BTreeSet<String>,
    records: &[Record],
    front_url: &str,
    client: Option<&Client>,
) -> Result<FinalState> {
    let mut fin = FinalState::default();
    let reader = connect(front_url).await?;
    let reader = &reader;
    // Many reads in flight at once: a long run leaves tens of thousands.
    fin.carts = futures::stream::iter(carts)
        .map(|cart| async move {
            let got = read_cart(reader, &cart).await;
            (cart, got)
        })
        .buffer_unordered(FINAL_READS_IN_FLIGHT)
        .collect()
        .await;
    if let Some(cl) = client {
        read_mints(cl, records, &mut fin).await?;
    }
    Ok(fin)
}

/// get_cart's answer for `cart`, asked again (up to 10 times, every 500 ms)
/// while the call fails or the cluster is unavailable.
async fn read_cart(reader: &crate::mcp::McpClient, cart: &str) -> Result<Value, String> {
    let mut got = Err("not read".to_string());
    for _ in 0..10 {
        match call(reader, "get_cart", json!({"cart_id": cart})).await {
            ToolOutcome::Ok(v) => {
                got = Ok(v);
                break;
            }
            ToolOutcome::ToolError(m) if !m.contains("unavailable") => {
                got = Err(m);
                break;
            }
            other => got = Err(format!("{other:?}")),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    got
}

/// The value of every acknowledged mint of `records`, into `fin.mints`.
async fn read_mints(cl: &Client, records: &[Record], fin: &mut FinalState) -> Result<()> {
    let minted: ClusterHandleStore<Value> = cl.handle_store("mints").build();
    let minted = &minted;
    let ids: Vec<String> = records
        .iter()
        .filter(|r| r.kind == "mint" && r.outcome == Outcome::Ok)
        .map(|r| r.key.clone())
        .collect();
    let read: Vec<(String, Result<Option<Value>, handlestore_client::Error>)> = futures::stream::iter(ids)
        .map(|id| async move {
            let v = minted.get(&id).await;
            (id, v)
        })
        .buffer_unordered(FINAL_READS_IN_FLIGHT)
        .collect()
        .await;
    for (id, v) in read {
        fin.mints.insert(id, v?);
    }
    Ok(())
}
