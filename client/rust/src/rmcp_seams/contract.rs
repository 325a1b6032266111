//! The contract every client's MCP event store follows
//! (`proto/vectors/mcp_events.json`; docs/dev/resume.md says why): the key
//! layout, the event id, the origin's liveness record, the timings a
//! replica follows another's stream with, and the error it appends when
//! the origin died. The one place the Rust client states them; a test holds
//! them to the vector file.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The key prefix events live under, in the client's namespace.
pub const EVENTS_PREFIX: &str = "mcp/events";
/// Events per bucket: the unit older events are deleted in.
pub const BUCKET: u64 = 100;
/// Digits of the bucket number in an event's key.
const BUCKET_WIDTH: usize = 12;
/// Digits of the sequence number in an event's key.
const SEQ_WIDTH: usize = 20;
/// The largest sequence number (JavaScript's largest safe integer, so
/// every client reads an id the same).
pub const MAX_SEQ: u64 = 9_007_199_254_740_991;
/// Digits of [`MAX_SEQ`]: no valid id has more.
const MAX_SEQ_DIGITS: usize = 16;
/// Characters of a stream's token (128 bits in unpadded base32).
const TOKEN_LEN: usize = 26;

/// The TTL of `live/<token>`: a follower takes the origin for dead once it
/// expires unrefreshed.
pub const LIVE_TTL: Duration = Duration::from_millis(10_000);
/// How often the origin writes `live/<token>` again while the stream may
/// still get events from it.
pub const LIVE_REFRESH: Duration = Duration::from_millis(3_000);
/// The silence after which a follower sends an SSE comment. rmcp sends its
/// own keep-alives (`StreamableHttpServerConfig::sse_keep_alive`, 15 s by
/// default), so the store needs none of its own.
pub const FOLLOW_KEEPALIVE: Duration = Duration::from_millis(15_000);
/// The TTL the completing event's batch writes `live/<token>` with: a
/// batch cannot delete a key, so the record is written expired at once.
pub const LIVE_ENDED_TTL: Duration = Duration::from_millis(1);

/// The JSON-RPC error code of an `origin_lost` answer.
pub const ORIGIN_LOST_CODE: i64 = -32603;
/// Its message, exactly.
pub const ORIGIN_LOST_MESSAGE: &str = "the replica running this request stopped before it answered; every event it stored was delivered, and whether the request took effect is unknown";
/// Its `data.reason`.
pub const ORIGIN_LOST_REASON: &str = "origin_lost";

/// The error response a follower appends for request `id` whose origin
/// stopped before it answered.
pub(super) fn origin_lost(id: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": ORIGIN_LOST_CODE,
            "message": ORIGIN_LOST_MESSAGE,
            "data": {"reason": ORIGIN_LOST_REASON},
        },
    })
}

/// The name a stream id's head is kept under: the first 128 bits of its
/// SHA-256 in unpadded base32, so any id makes a valid key that reveals
/// nothing.
pub(super) fn digest(input: &str) -> String {
    data_encoding::BASE32_NOPAD.encode(&Sha256::digest(input.as_bytes())[..16])
}

/// A fresh stream token: 128 random bits.
pub(super) fn new_token() -> String {
    data_encoding::BASE32_NOPAD.encode(&rand::random::<[u8; 16]>())
}

/// The keys of one store's streams, under its prefix.
#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub prefix: String,
}

impl Layout {
    /// The head of the stream `stream_id`: its token and last sequence.
    pub fn head_key(&self, stream_id: &str) -> String {
        format!("{}/streams/{}", self.prefix, digest(stream_id))
    }

    /// The stream id of the stream `token` names.
    pub fn token_key(&self, token: &str) -> String {
        format!("{}/tokens/{token}", self.prefix)
    }

    /// The origin's liveness record of the stream `token` names.
    pub fn live_key(&self, token: &str) -> String {
        format!("{}/live/{token}", self.prefix)
    }

    /// The requests the stream `token` names answers, kept as long as its
    /// events: a follower that starts after the liveness record is gone
    /// reads them here.
    pub fn requests_key(&self, token: &str) -> String {
        format!("{}/requests/{token}", self.prefix)
    }

    /// Every event of the stream `token` names is under this prefix.
    pub fn stream_prefix(&self, token: &str) -> String {
        format!("{}/events/{token}/", self.prefix)
    }

    /// The events of one bucket.
    pub fn bucket_prefix(&self, token: &str, bucket: u64) -> String {
        format!("{}{bucket:0BUCKET_WIDTH$}/", self.stream_prefix(token))
    }

    /// One event: keys sort in sequence order.
    pub fn event_key(&self, token: &str, seq: u64) -> String {
        format!("{}{seq:0SEQ_WIDTH$}", self.bucket_prefix(token, seq / BUCKET))
    }
}

/// An event id, `<token>.<seq>`, as the stores mint them.
pub(super) fn event_id(token: &str, seq: u64) -> String {
    format!("{token}.{seq}")
}

/// The token and sequence of an event id: refused unless it is exactly
/// one a store mints (a `Last-Event-ID` is whatever a client sends).
pub(super) fn parse_event_id(id: &str) -> Result<(&str, u64)> {
    let malformed = || {
        Error::InvalidArgument(format!(
            "malformed event id {:?}",
            id.chars().take(80).collect::<String>()
        ))
    };
    let (token, seq) = id.split_once('.').ok_or_else(malformed)?;
    let token_ok = token.len() == TOKEN_LEN
        && token
            .bytes()
            .all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(&b));
    // ASCII digits only, without leading zeros: one id per event ("+7" and
    // "07" would parse as 7 too).
    let canonical = !seq.is_empty()
        && seq.len() <= MAX_SEQ_DIGITS
        && seq.bytes().all(|b| b.is_ascii_digit())
        && (seq == "0" || !seq.starts_with('0'));
    let seq = seq
        .parse::<u64>()
        .ok()
        .filter(|&s| canonical && s <= MAX_SEQ)
        .ok_or_else(malformed)?;
    if !token_ok {
        return Err(malformed());
    }
    Ok((token, seq))
}

/// Holds the constants above to `proto/vectors/mcp_events.json`: each is
/// read from the file and compared, none typed here again.
#[cfg(test)]
mod vectors {
    use super::*;
    use crate::rmcp_seams::completion::Pending;

    fn contract() -> Value {
        serde_json::from_str(include_str!("../../../../proto/vectors/mcp_events.json")).expect("mcp_events.json")
    }

    fn millis(v: &Value) -> Duration {
        Duration::from_millis(v.as_u64().expect("milliseconds"))
    }

    #[test]
    fn the_layout_and_timings_are_the_contracts() {
        let c = contract();
        assert_eq!(c["prefix"], EVENTS_PREFIX);
        assert_eq!(c["bucket"], BUCKET);
        assert_eq!(c["widths"]["bucket"], BUCKET_WIDTH);
        assert_eq!(c["widths"]["seq"], SEQ_WIDTH);
        assert_eq!(c["max_seq"], MAX_SEQ);
        assert_eq!(MAX_SEQ.to_string().len(), MAX_SEQ_DIGITS);
        assert_eq!(millis(&c["live"]["ttl_ms"]), LIVE_TTL);
        assert_eq!(millis(&c["live"]["refresh_ms"]), LIVE_REFRESH);
        assert_eq!(millis(&c["live"]["ended_ttl_ms"]), LIVE_ENDED_TTL);
        assert_eq!(millis(&c["follow"]["keepalive_ms"]), FOLLOW_KEEPALIVE);
        let lost = &c["origin_lost"];
        let answer = origin_lost(&json!(7));
        assert_eq!(answer["error"]["code"], lost["code"]);
        assert_eq!(answer["error"]["message"], lost["message"]);
        assert_eq!(answer["error"]["data"], json!({"reason": lost["reason"]}));
        assert_eq!(answer["id"], 7);
        let message: rmcp::model::ServerJsonRpcMessage = serde_json::from_value(answer).expect("an rmcp message");
        assert!(matches!(message, rmcp::model::ServerJsonRpcMessage::Error(_)));
    }

    #[test]
    fn digests_are_the_contracts() {
        for case in contract()["digests"].as_array().expect("digests") {
            let input = case["input"].as_str().expect("input");
            assert_eq!(
                digest(input),
                case["digest"].as_str().expect("digest"),
                "{}",
                case["why"]
            );
        }
    }

    #[test]
    fn keys_are_the_contracts() {
        let layout = Layout {
            prefix: EVENTS_PREFIX.into(),
        };
        for case in contract()["keys"].as_array().expect("keys") {
            let token = case["token"].as_str().unwrap_or_default();
            let key = match case["kind"].as_str().expect("kind") {
                "head" => format!(
                    "{}/streams/{}",
                    layout.prefix,
                    case["stream_digest"].as_str().expect("digest")
                ),
                "token" => layout.token_key(token),
                "live" => layout.live_key(token),
                "requests" => layout.requests_key(token),
                "event" => layout.event_key(token, case["seq"].as_u64().expect("seq")),
                other => panic!("unknown key kind {other}"),
            };
            assert_eq!(key, case["key"].as_str().expect("key"), "{case}");
            assert!(crate::key::validate_key(&key, crate::key::MAX_KEY_LEN).is_ok(), "{key}");
        }
        // A head is named by the digest of its stream id.
        assert_eq!(
            layout.head_key("_GET_stream"),
            format!("{}/streams/{}", layout.prefix, digest("_GET_stream"))
        );
    }

    #[test]
    fn event_ids_parse_as_the_contract_says() {
        for case in contract()["event_ids"].as_array().expect("event_ids") {
            let input = case["input"].as_str().expect("input");
            let parsed = parse_event_id(input);
            if case["valid"] == false {
                assert!(parsed.is_err(), "{input:?} is refused: {}", case["why"]);
                continue;
            }
            let (token, seq) = parsed.unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(token, case["token"].as_str().expect("token"));
            assert_eq!(seq, case["seq"].as_u64().expect("seq"));
            assert_eq!(event_id(token, seq), input, "an id names exactly itself");
        }
    }

    #[test]
    fn completion_is_the_contracts() {
        for case in contract()["completion"]["cases"].as_array().expect("cases") {
            let requests = case["requests"].as_array().expect("requests").clone();
            let mut pending = Pending::new(requests);
            let mut complete = false;
            for message in case["messages"].as_array().expect("messages") {
                let message = (!message.is_null()).then_some(message);
                let would = pending.completes(message);
                complete = pending.add(message);
                assert!(!would || complete, "completes() foretold add(): {case}");
            }
            assert_eq!(complete, case["complete"] == true, "{}: {case}", case["why"]);
            assert_eq!(pending.is_complete(), complete);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_keys_sort_in_sequence_order_and_are_valid() {
        let layout = Layout {
            prefix: EVENTS_PREFIX.into(),
        };
        let token = new_token();
        let keys: Vec<String> = [1, 9, 99, 100, 101, 1000, 12345, MAX_SEQ]
            .iter()
            .map(|&s| layout.event_key(&token, s))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        for k in &keys {
            assert!(crate::key::validate_key(k, crate::key::MAX_KEY_LEN).is_ok(), "{k}");
        }
        assert!(
            layout
                .event_key(&token, 250)
                .starts_with(&layout.bucket_prefix(&token, 2))
        );
    }
}

/// A `Last-Event-ID` is whatever a client sends: never a panic, and only
/// ids a store mints are taken, each as the one event it names.
#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use super::{MAX_SEQ, event_id, new_token, parse_event_id};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_string_is_refused_or_names_exactly_itself(id in "\\PC{0,64}|[A-Z2-7]{26}\\.[-+0-9]{0,22}") {
            if let Ok((token, seq)) = parse_event_id(&id) {
                prop_assert_eq!(event_id(token, seq), id);
            }
        }

        #[test]
        fn every_minted_id_parses_back(seq in 0..=MAX_SEQ) {
            let token = new_token();
            let id = event_id(&token, seq);
            prop_assert_eq!(parse_event_id(&id).ok(), Some((token.as_str(), seq)));
        }
    }
}
