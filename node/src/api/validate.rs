//! Input checks, done before anything reaches Raft: a bad request gets
//! INVALID_ARGUMENT and changes nothing. The id and key formats themselves
//! are defined once, in the wire contract (`handlestore_proto::{id, key}`).

use handlestore_proto::id::is_name;
use handlestore_proto::key::{page_token, parse_page_token};
use handlestore_proto::limits::{DEFAULT_NAMESPACE, DEFAULT_PAGE, MAX_PAGE};
use handlestore_proto::reason::Reason;
use handlestore_proto::v1 as pb;
use tonic::Status;

use crate::config::Limits;
use crate::status::invalid;

/// A page asked for: how many `items` it holds (`limit`; 0: the
/// default) and the key it starts after (from `token`; empty: the first).
pub fn page(limit: u32, token: &str, items: &str) -> Result<(usize, Option<String>), Status> {
    if limit > MAX_PAGE {
        return Err(invalid(format!("limit {limit} exceeds {MAX_PAGE} {items} per page")));
    }
    let limit = if limit == 0 { DEFAULT_PAGE } else { limit } as usize;
    let after = match token {
        "" => None,
        t => Some(parse_page_token(t).map_err(invalid)?),
    };
    Ok((limit, after))
}

/// The token of the page after one whose last key read was `last` (shown
/// to the caller or not), when there is more.
pub fn next_page(more: bool, last: Option<&str>) -> String {
    match (more, last) {
        (true, Some(key)) => page_token(key),
        _ => String::new(),
    }
}

/// A namespace; empty means "default".
pub fn namespace(ns: &str, limits: &Limits) -> Result<String, Status> {
    if ns.is_empty() {
        return Ok(DEFAULT_NAMESPACE.to_string());
    }
    name("namespace", ns, limits)?;
    Ok(ns.to_string())
}

/// A store (handle kind) name such as "cart".
pub fn store(store: &str, limits: &Limits) -> Result<(), Status> {
    name("store", store, limits)
}

fn name(what: &str, s: &str, limits: &Limits) -> Result<(), Status> {
    if s.is_empty() {
        return Err(invalid(format!("{what} must not be empty")));
    }
    if s.len() > limits.max_name_len {
        return Err(invalid(format!(
            "{what} is {} bytes long; the limit is {}",
            s.len(),
            limits.max_name_len
        )));
    }
    if !is_name(s, limits.max_name_len) {
        let shown: String = s.chars().take(80).collect();
        return Err(invalid(format!("{what} {shown:?} may only contain A-Z a-z 0-9 _ - .")));
    }
    Ok(())
}

/// A handle id: 26 base32 characters, optionally after `<prefix>-`.
pub fn handle_id(id: &str) -> Result<(), Status> {
    handlestore_proto::id::validate_handle_id(id).map_err(invalid)
}

/// The beginning of handle ids (`cart-`, `cart-AB`): no longer than an id,
/// of the characters ids are made of.
pub fn handle_id_prefix(prefix: &str) -> Result<(), Status> {
    let max = handlestore_proto::id::MAX_PREFIX_LEN + 1 + handlestore_proto::id::ID_LEN;
    let ok = prefix.len() <= max
        && prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        let shown: String = prefix.chars().take(80).collect();
        Err(invalid(format!(
            "handle id prefix {shown:?} is not the beginning of an id (at most {max} of A-Z a-z 0-9 _ - .)"
        )))
    }
}

/// A state key (`a/b/c`).
pub fn state_key(key: &str, limits: &Limits) -> Result<(), Status> {
    handlestore_proto::key::validate_key(key, limits.max_key_bytes).map_err(invalid)
}

/// A state key prefix ("" = all).
pub fn state_prefix(prefix: &str, limits: &Limits) -> Result<(), Status> {
    handlestore_proto::key::validate_prefix(prefix, limits.max_key_bytes).map_err(invalid)
}

/// A state value: (bytes, is_json). JSON must parse; both are size-checked.
pub fn state_value(v: Option<pb::StateValue>, limits: &Limits) -> Result<(Vec<u8>, bool), Status> {
    use pb::state_value::Kind;
    let (bytes, json) = match v.and_then(|v| v.kind) {
        Some(Kind::Json(s)) => (s.into_bytes(), true),
        Some(Kind::Bytes(b)) => (b, false),
        None => return Err(invalid("a value is required (json or bytes)")),
    };
    value(&bytes, limits)?;
    if json && let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        return Err(invalid(format!("value is not valid JSON: {e}")));
    }
    Ok((bytes, json))
}

pub fn value(v: &[u8], limits: &Limits) -> Result<(), Status> {
    if v.len() > limits.max_value_bytes {
        return Err(Reason::ValueTooLarge.status(format!(
            "value is {} bytes; the limit is {} bytes",
            v.len(),
            limits.max_value_bytes
        )));
    }
    Ok(())
}

/// Resolves a TTL to milliseconds (0 = never) with the HandleStore
/// convention: > 0 after ttl, 0 the store default (0 = never), < 0 never.
pub fn ttl(t: Option<&pb::Ttl>, limits: &Limits) -> Result<u64, Status> {
    let Some(t) = t else { return Ok(0) };
    let max = limits.max_ttl.as_millis() as u64;
    let ms = match t.ttl_ms {
        n if n > 0 => n as u64,
        0 => t.default_ttl_ms,
        _ => return Ok(0),
    };
    if ms > max {
        return Err(invalid(format!("ttl of {ms} ms exceeds the limit of {max} ms")));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls() {
        let l = Limits::default();
        let t = |ttl_ms, default_ttl_ms| pb::Ttl {
            ttl_ms,
            default_ttl_ms,
            keep: false,
        };
        assert_eq!(ttl(None, &l).unwrap(), 0);
        assert_eq!(ttl(Some(&t(500, 9)), &l).unwrap(), 500);
        assert_eq!(ttl(Some(&t(0, 9)), &l).unwrap(), 9);
        assert_eq!(ttl(Some(&t(0, 0)), &l).unwrap(), 0);
        assert_eq!(ttl(Some(&t(-1, 9)), &l).unwrap(), 0);
        assert!(ttl(Some(&t(i64::MAX, 0)), &l).is_err());
        assert!(ttl(Some(&t(0, u64::MAX)), &l).is_err());
    }

    #[test]
    fn names() {
        let l = Limits::default();
        assert_eq!(namespace("", &l).unwrap(), "default");
        assert!(store("cart", &l).is_ok());
        assert!(store("", &l).is_err());
        assert!(store("a/b", &l).is_err());
        assert!(store(&"x".repeat(65), &l).is_err());
        assert!(handle_id("nope").is_err());
        assert!(state_key("a//b", &l).is_err());
        assert!(state_prefix("", &l).is_ok());
    }

    #[test]
    fn state_values() {
        use pb::state_value::Kind;
        let l = Limits::default();
        let v = |k| Some(pb::StateValue { kind: Some(k) });
        assert_eq!(
            state_value(v(Kind::Json("{\"a\":1}".into())), &l).unwrap(),
            (b"{\"a\":1}".to_vec(), true)
        );
        assert!(state_value(v(Kind::Json("{oops".into())), &l).is_err());
        assert_eq!(
            state_value(v(Kind::Bytes(vec![0, 255])), &l).unwrap(),
            (vec![0, 255], false)
        );
        assert!(state_value(None, &l).is_err());
        assert!(state_value(v(Kind::Bytes(vec![0; (1 << 20) + 1])), &l).is_err());
    }
}
