//! Legacy-session cart flows: clients on `Mcp-Session-Id` sessions,
//! through their own round-robin front before two `cart_server
//! --legacy-sessions` replicas, through every fault; and their checker.
//!
//! - No acknowledged session is lost: once `initialize` answered with a
//!   session id, no call on that session is answered 404 (the session
//!   store forgot it). Calls that fail otherwise during a fault (503, 500,
//!   a timeout) are retried; they acknowledge nothing.
//! - No acknowledged event is lost: for each call answered over SSE, the
//!   answer's event id and content were seen by the client; after the
//!   traffic, resuming after the stream's first event on each replica
//!   replays that answer with the same id and content.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::StatusCode;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::mcp_raw::{RawMcp, answer};

/// Streams checked for replay after the traffic, per client at most.
const REPLAY_SAMPLE: usize = 25;

/// A call's answer the client saw, to be replayed later.
#[derive(Debug, Clone)]
struct Acked {
    /// The bearer token the session is bound to.
    user: String,
    session: String,
    priming: String,
    answer_id: String,
    answer: Value,
}

/// What one session client saw.
#[derive(Debug, Default)]
struct Seen {
    sessions: usize,
    calls_ok: usize,
    calls_failed: usize,
    /// Calls answered 404 on an acknowledged session.
    lost: Vec<String>,
    acked: Vec<Acked>,
}

/// The checks over every session client.
#[derive(Debug, Default, Clone, Serialize)]
pub struct SessionChecks {
    pub clients: usize,
    pub sessions: usize,
    pub calls_ok: usize,
    pub calls_failed: usize,
    pub lost_sessions: Vec<String>,
    pub streams_replayed: usize,
    pub lost_events: Vec<String>,
}

impl SessionChecks {
    pub fn ok(&self) -> bool {
        self.lost_sessions.is_empty() && self.lost_events.is_empty()
    }
}

/// The session clients, running until `stop`.
pub struct SessionClients {
    tasks: Vec<JoinHandle<Seen>>,
}

impl SessionClients {
    pub fn start(front: String, n: usize, stop: &Arc<AtomicBool>) -> Self {
        let tasks = (0..n)
            .map(|i| tokio::spawn(run(i, front.clone(), stop.clone())))
            .collect();
        Self { tasks }
    }

    /// Waits for the clients, then replays a sample of what they were
    /// answered on each replica (`urls`, their `/mcp`).
    pub async fn finish(self, urls: &[String]) -> SessionChecks {
        let mut checks = SessionChecks {
            clients: self.tasks.len(),
            ..Default::default()
        };
        for t in self.tasks {
            let seen = t.await.unwrap_or_else(|e| Seen {
                lost: vec![format!("session client task: {e}")],
                ..Default::default()
            });
            checks.sessions += seen.sessions;
            checks.calls_ok += seen.calls_ok;
            checks.calls_failed += seen.calls_failed;
            checks.lost_sessions.extend(seen.lost);
            let step = (seen.acked.len() / REPLAY_SAMPLE).max(1);
            for (i, acked) in seen.acked.iter().step_by(step).enumerate() {
                let url = &urls[i % urls.len()];
                checks.streams_replayed += 1;
                if let Err(why) = replayed(acked, url).await {
                    checks.lost_events.push(why);
                }
            }
        }
        checks
    }
}

/// Opens sessions and runs cart flows on them until `stop`.
async fn run(client: usize, front: String, stop: Arc<AtomicBool>) -> Seen {
    let mut seen = Seen::default();
    let mut raw = RawMcp::new(&format!("chaos-session-user-{client}"));
    let mut id = 1;
    while !stop.load(Ordering::Relaxed) {
        if raw.open(&front).await.is_err() {
            seen.calls_failed += 1;
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        }
        seen.sessions += 1;
        let cart = create_cart(&raw, &front, &mut id, &mut seen, &stop).await;
        let Some(cart) = cart else { continue };
        for sku in ["apple", "pear", "fig"] {
            let args =
                json!({"cart_id": cart, "sku": sku, "quantity": 1, "request_id": format!("{client}-{id}-{sku}")});
            call(&raw, &front, &mut id, "add_item", args, &mut seen, &stop).await;
        }
        call(
            &raw,
            &front,
            &mut id,
            "get_cart",
            json!({"cart_id": cart}),
            &mut seen,
            &stop,
        )
        .await;
    }
    seen
}

async fn create_cart(raw: &RawMcp, front: &str, id: &mut u64, seen: &mut Seen, stop: &AtomicBool) -> Option<String> {
    let reply = call(raw, front, id, "create_cart", json!({}), seen, stop).await?;
    reply["result"]["structuredContent"]["cart_id"]
        .as_str()
        .map(str::to_string)
}

/// One tool call on the session, retried (a new request id each time)
/// until it is answered, the session is found lost, or the traffic stops.
async fn call(
    raw: &RawMcp,
    front: &str,
    id: &mut u64,
    tool: &str,
    args: Value,
    seen: &mut Seen,
    stop: &AtomicBool,
) -> Option<Value> {
    let session = raw.session.clone().unwrap_or_default();
    for _ in 0..20 {
        *id += 1;
        let res = raw.call_tool(front, *id, tool, args.clone()).await;
        match res {
            Ok((StatusCode::OK, events)) => {
                if let (Some(priming), Some((answer_id, reply))) =
                    (events.first().and_then(|e| e.id.clone()), answer(&events, *id))
                {
                    seen.calls_ok += 1;
                    seen.acked.push(Acked {
                        user: raw.bearer().to_string(),
                        session: session.clone(),
                        priming,
                        answer_id,
                        answer: reply.clone(),
                    });
                    return Some(reply);
                }
                seen.calls_failed += 1;
            }
            Ok((StatusCode::NOT_FOUND, _)) => {
                seen.lost
                    .push(format!("session {session}: {tool} answered 404 after initialize"));
                return None;
            }
            _ => seen.calls_failed += 1,
        }
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    None
}

/// Resumes after the stream's priming event on `url`: the answer must come
/// back with its id and content.
async fn replayed(acked: &Acked, url: &str) -> Result<(), String> {
    // The session is bound to its user: replay as that user.
    let mut raw = RawMcp::new(&acked.user);
    raw.session = Some(acked.session.clone());
    let mut last = String::new();
    for _ in 0..5 {
        match raw.resume(url, &acked.priming).await {
            Ok((StatusCode::OK, events)) => {
                let found = events
                    .iter()
                    .find(|e| e.id.as_deref() == Some(acked.answer_id.as_str()));
                match found.map(|e| serde_json::from_str::<Value>(&e.data)) {
                    Some(Ok(v)) if v == acked.answer => return Ok(()),
                    Some(_) => return Err(format!("event {} replayed with other content", acked.answer_id)),
                    None => last = format!("event {} missing from the replay on {url}", acked.answer_id),
                }
            }
            Ok((status, _)) => last = format!("replay of {} on {url}: {status}", acked.priming),
            Err(e) => last = format!("replay of {} on {url}: {e:#}", acked.priming),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    Err(last)
}
