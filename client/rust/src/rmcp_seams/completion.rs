//! When a stream is complete: once it has a response to every request its
//! origin recorded or, with none recorded, once it has any response
//! (`completion` in proto/vectors/mcp_events.json). A message answers a
//! request when it is a JSON-RPC response (an object with a string or
//! number id, exactly one of `result` and `error`, no `method`) whose id
//! equals the request's, type and all: `1` and `"1"` differ.

use serde_json::Value;

/// The requests of a stream and which of them are still unanswered.
#[derive(Debug, Clone, Default)]
pub(super) struct Pending {
    requests: Vec<Value>,
    open: Vec<Value>,
    complete: bool,
}

impl Pending {
    /// A stream answering `requests` (their ids as the client sent them;
    /// ids that cannot be answered, and repeats, are left out).
    pub fn new(requests: Vec<Value>) -> Self {
        let mut kept: Vec<Value> = Vec::with_capacity(requests.len());
        for id in requests {
            if is_id(&id) && !kept.contains(&id) {
                kept.push(id);
            }
        }
        Self {
            open: kept.clone(),
            requests: kept,
            complete: false,
        }
    }

    /// The requests, as recorded.
    pub fn requests(&self) -> &[Value] {
        &self.requests
    }

    /// The requests without a response yet, in recorded order.
    pub fn unanswered(&self) -> &[Value] {
        &self.open
    }

    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Would storing `message` (`None`: a priming event) complete the
    /// stream?
    pub fn completes(&self, message: Option<&Value>) -> bool {
        let Some(id) = message.and_then(response_id) else {
            return false;
        };
        !self.complete && (self.requests.is_empty() || self.open == [id.clone()])
    }

    /// Records `message`; whether the stream is now complete.
    pub fn add(&mut self, message: Option<&Value>) -> bool {
        if self.complete {
            return true;
        }
        let Some(id) = message.and_then(response_id) else {
            return false;
        };
        self.open.retain(|open| open != id);
        self.complete = self.requests.is_empty() || self.open.is_empty();
        self.complete
    }
}

/// A JSON-RPC id a response can answer: a string or a number.
fn is_id(id: &Value) -> bool {
    id.is_string() || id.is_number()
}

/// The id a response answers (`None` for anything that is not one).
fn response_id(message: &Value) -> Option<&Value> {
    let m = message.as_object()?;
    let one_outcome = m.contains_key("result") != m.contains_key("error");
    if m.contains_key("method") || !one_outcome {
        return None;
    }
    m.get("id").filter(|id| is_id(id))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unanswerable_and_repeated_ids_are_not_recorded() {
        let p = Pending::new(vec![json!(1), json!(1), json!(null), json!({"a": 1}), json!("1")]);
        assert_eq!(p.requests(), [json!(1), json!("1")]);
    }

    #[test]
    fn a_complete_stream_stays_complete() {
        let mut p = Pending::new(vec![json!(1)]);
        assert!(p.add(Some(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}))));
        assert!(!p.completes(Some(&json!({"jsonrpc": "2.0", "id": 1, "result": {}}))));
        assert!(p.add(None));
        assert!(p.unanswered().is_empty());
    }
}
