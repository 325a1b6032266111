//! A hand-rolled MCP client over plain HTTP, for legacy sessions: it sees
//! the session id and the SSE event ids that rmcp's client keeps to
//! itself, and sends `Last-Event-ID` where a test says.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The protocol version a raw client speaks (one with sessions).
pub const PROTOCOL: &str = "2025-06-18";

/// One SSE event: its id and its data.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub data: String,
}

/// The events of an SSE body.
pub fn sse_events(body: &str) -> Vec<SseEvent> {
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|block| {
            let mut event = SseEvent {
                id: None,
                data: String::new(),
            };
            let mut any = false;
            for line in block.lines() {
                if let Some(id) = line.strip_prefix("id:") {
                    event.id = Some(id.trim().to_string());
                    any = true;
                } else if let Some(data) = line.strip_prefix("data:") {
                    event.data.push_str(data.trim_start());
                    any = true;
                }
            }
            any.then_some(event)
        })
        .collect()
}

/// The JSON-RPC answer to request `id` among `events`, with its event id.
pub fn answer(events: &[SseEvent], id: u64) -> Option<(String, Value)> {
    events.iter().find_map(|e| {
        let v: Value = serde_json::from_str(&e.data).ok()?;
        (v["id"] == json!(id)).then(|| (e.id.clone().unwrap_or_default(), v))
    })
}

/// A client with a bearer token and, once opened, a session.
pub struct RawMcp {
    http: reqwest::Client,
    bearer: String,
    pub session: Option<String>,
}

impl RawMcp {
    pub fn new(bearer: &str) -> Self {
        Self {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("http client"),
            bearer: bearer.to_string(),
            session: None,
        }
    }

    /// The bearer token it sends.
    pub fn bearer(&self) -> &str {
        &self.bearer
    }

    /// A request with the MCP headers, the token and the session.
    pub fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .request(method, url)
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {}", self.bearer))
            .header("mcp-protocol-version", PROTOCOL);
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        req
    }

    /// POSTs a JSON-RPC message: the status and the SSE events answered.
    pub async fn post(&self, url: &str, body: Value) -> Result<(StatusCode, Vec<SseEvent>)> {
        let res = self
            .request(reqwest::Method::POST, url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await?;
        let status = res.status();
        let text = res.text().await?;
        Ok((status, sse_events(&text)))
    }

    /// initialize + initialized on `url`: the session id.
    pub async fn open(&mut self, url: &str) -> Result<String> {
        self.session = None;
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "1"}}});
        let res = self
            .request(reqwest::Method::POST, url)
            .header("content-type", "application/json")
            .body(init.to_string())
            .send()
            .await?;
        if res.status() != StatusCode::OK {
            bail!("initialize: {}", res.status());
        }
        let session = res
            .headers()
            .get("mcp-session-id")
            .context("initialize answered without a session id")?
            .to_str()?
            .to_string();
        let text = res.text().await?;
        answer(&sse_events(&text), 0).context("initialize answered nothing")?;
        self.session = Some(session.clone());
        let (status, _) = self
            .post(url, json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        if status != StatusCode::ACCEPTED {
            bail!("initialized: {status}");
        }
        Ok(session)
    }

    pub async fn call_tool(&self, url: &str, id: u64, name: &str, args: Value) -> Result<(StatusCode, Vec<SseEvent>)> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": args}});
        self.post(url, body).await
    }

    /// GET with `Last-Event-ID`: the replayed events (the stream is finite).
    pub async fn resume(&self, url: &str, last_event_id: &str) -> Result<(StatusCode, Vec<SseEvent>)> {
        let res = self
            .request(reqwest::Method::GET, url)
            .header("accept", "text/event-stream")
            .header("last-event-id", last_event_id)
            .send()
            .await?;
        let status = res.status();
        let text = tokio::time::timeout(Duration::from_secs(20), res.text())
            .await
            .context("a replay did not end within 20 s")??;
        Ok((status, sse_events(&text)))
    }
}
