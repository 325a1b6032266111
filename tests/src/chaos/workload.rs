//! Traffic: MCP clients running cart flows through the round-robin front,
//! and direct handle and state-tool traffic through the client crate. Every
//! operation goes into the history.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use handlestore_client::{
    ClusterHandleStore, ClusterStateTool, Error, HandleStore, StateTool, StateValue, StoreOptions, Ttl,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::history::{History, Outcome, Record};
use crate::mcp::{McpClient, ToolOutcome, call, connect};

/// How many times a flow step with an unknown outcome is retried (with the
/// same request id, so a retry never doubles it).
const RETRIES: usize = 10;

/// The outcome of a client-crate error: refused, or unknown.
pub fn classify(e: &Error) -> Outcome {
    match e {
        Error::Unavailable { .. } | Error::Deadline { .. } | Error::Internal(_) | Error::Other(_) => Outcome::Unknown,
        _ => Outcome::Fail,
    }
}

fn tool_outcome(o: &ToolOutcome) -> (Outcome, Value) {
    match o {
        ToolOutcome::Ok(v) => (Outcome::Ok, v.clone()),
        // The server says the store could not be reached: unknown.
        ToolOutcome::ToolError(m) if m.contains("unavailable") => (Outcome::Unknown, json!(m)),
        ToolOutcome::ToolError(m) => (Outcome::Fail, json!(m)),
        ToolOutcome::Failed(m) => (Outcome::Unknown, json!(m)),
    }
}

struct CartClient {
    id: usize,
    url: String,
    mcp: Option<McpClient>,
    history: Arc<History>,
}

impl CartClient {
    /// One recorded tool call; reconnects after a transport failure.
    async fn op(&mut self, kind: &'static str, key: &str, args: Value) -> (Outcome, Value) {
        if self.mcp.is_none() {
            match connect(&self.url).await {
                Ok(c) => self.mcp = Some(c),
                Err(e) => {
                    let t = self.history.now();
                    self.history.push(Record {
                        client: self.id,
                        kind,
                        key: key.into(),
                        input: args,
                        output: json!(format!("connect: {e}")),
                        invoke_us: t,
                        complete_us: t,
                        outcome: Outcome::Fail,
                    });
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    return (Outcome::Fail, Value::Null);
                }
            }
        }
        let invoke_us = self.history.now();
        let out = match &self.mcp {
            Some(mcp) => call(mcp, kind, args.clone()).await,
            None => ToolOutcome::Failed("not connected".into()),
        };
        if matches!(out, ToolOutcome::Failed(_)) {
            self.mcp = None;
        }
        let (outcome, output) = tool_outcome(&out);
        // A new cart's records are filed under its id.
        let key = output.get("cart_id").and_then(Value::as_str).unwrap_or(key).to_string();
        self.history.push(Record {
            client: self.id,
            kind,
            key,
            input: args,
            output: output.clone(),
            invoke_us,
            complete_us: self.history.now(),
            outcome,
        });
        (outcome, output)
    }

    /// Retries while the outcome is unknown.
    async fn op_retrying(&mut self, kind: &'static str, key: &str, args: Value, stop: &AtomicBool) -> (Outcome, Value) {
        let mut last = (Outcome::Unknown, Value::Null);
        for attempt in 0..RETRIES {
            last = self.op(kind, key, args.clone()).await;
            if last.0 != Outcome::Unknown || (stop.load(Ordering::Relaxed) && attempt >= 2) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        last
    }
}

/// One MCP client running cart flows until `stop`: create a cart, add 2-5
/// items (each with its own request id), read it, check out, check out again.
pub async fn cart_flows(id: usize, url: String, history: Arc<History>, stop: Arc<AtomicBool>, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut c = CartClient {
        id,
        url,
        mcp: None,
        history,
    };
    let mut flow = 0;
    while !stop.load(Ordering::Relaxed) {
        flow += 1;
        let (o, v) = c.op_retrying("create_cart", "", json!({}), &stop).await;
        let Some(cart) = v
            .get("cart_id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|_| o == Outcome::Ok)
        else {
            continue;
        };
        let items = rng.random_range(2..=5);
        let mut alive = true;
        for i in 0..items {
            let sku = format!("c{id}-f{flow}-{i}");
            let args = json!({"cart_id": cart, "sku": sku, "quantity": 1, "request_id": sku});
            let (o, _) = c.op_retrying("add_item", &cart, args, &stop).await;
            if o == Outcome::Fail {
                alive = false;
                break;
            }
        }
        if !alive {
            continue;
        }
        c.op("get_cart", &cart, json!({"cart_id": cart})).await;
        let (o, _) = c.op_retrying("checkout", &cart, json!({"cart_id": cart}), &stop).await;
        if o == Outcome::Ok {
            // A client retrying a checkout it already got an answer for.
            c.op("checkout", &cart, json!({"cart_id": cart})).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..50))).await;
    }
}

/// Where a register client keeps its registers: shared handles, or shared
/// state-tool keys.
#[derive(Clone)]
pub enum Registers {
    Handles(Arc<ClusterHandleStore<Value>>),
    State(ClusterStateTool),
}

impl Registers {
    /// The history's names of a write and a read.
    fn kinds(&self) -> (&'static str, &'static str) {
        match self {
            Registers::Handles(_) => ("put", "get"),
            Registers::State(_) => ("store", "retrieve"),
        }
    }

    async fn write(&self, key: &str, v: Value) -> Result<(), Error> {
        match self {
            Registers::Handles(s) => s.put(key, v, Ttl::Never).await.map(|_| ()),
            Registers::State(t) => t
                .store(key, StateValue::Json(v), StoreOptions::default())
                .await
                .map(|_| ()),
        }
    }

    async fn read(&self, key: &str) -> Result<Value, Error> {
        match self {
            Registers::Handles(s) => Ok(s.get(key).await?.unwrap_or(Value::Null)),
            Registers::State(t) => Ok(t
                .retrieve(key)
                .await?
                .and_then(|e| e.value)
                .and_then(|v| v.as_json().cloned())
                .unwrap_or(Value::Null)),
        }
    }
}

/// A register client: writes unique values to, and reads back
/// (linearizable reads), a few shared registers.
pub async fn registers(
    id: usize,
    regs: Registers,
    keys: Arc<Vec<String>>,
    history: Arc<History>,
    stop: Arc<AtomicBool>,
    seed: u64,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let (write, read) = regs.kinds();
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let key = &keys[rng.random_range(0..keys.len())];
        let invoke_us = history.now();
        let (kind, input, outcome, output) = if rng.random_bool(0.5) {
            n += 1;
            let v = json!(id as u64 * 1_000_000 + n);
            match regs.write(key, v.clone()).await {
                Ok(()) => (write, v, Outcome::Ok, Value::Null),
                Err(e) => (write, v, classify(&e), json!(e.to_string())),
            }
        } else {
            match regs.read(key).await {
                Ok(v) => (read, Value::Null, Outcome::Ok, v),
                Err(e) => (read, Value::Null, Outcome::Fail, json!(e.to_string())),
            }
        };
        history.push(Record {
            client: id,
            kind,
            key: key.clone(),
            input,
            output,
            invoke_us,
            complete_us: history.now(),
            outcome,
        });
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..20))).await;
    }
}

/// Mints handles and records which were acknowledged.
pub async fn mints(id: usize, store: Arc<ClusterHandleStore<Value>>, history: Arc<History>, stop: Arc<AtomicBool>) {
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let v = json!({"minter": id, "n": n});
        let invoke_us = history.now();
        let (key, outcome, output) = match store.mint(v.clone(), Ttl::Never).await {
            Ok(handle) => (handle, Outcome::Ok, Value::Null),
            Err(e) => (String::new(), classify(&e), json!(e.to_string())),
        };
        history.push(Record {
            client: id,
            kind: "mint",
            key,
            input: v,
            output,
            invoke_us,
            complete_us: history.now(),
            outcome,
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
