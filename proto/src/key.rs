//! State-tool keys: `/`-separated paths such as `checkpoints/agent-7/latest`.
//! One definition, used by the client (before sending) and the node; and the
//! page tokens of listings.

/// Default longest key, in bytes.
pub const MAX_KEY_LEN: usize = crate::limits::MAX_KEY_BYTES;

/// Checks a key: non-empty, at most `max_len` bytes, no control characters,
/// no empty segment (no leading, trailing or doubled `/`).
pub fn validate_key(key: &str, max_len: usize) -> Result<(), String> {
    if key.is_empty() {
        return Err("key must not be empty".into());
    }
    check_common("key", key, max_len)?;
    if key.split('/').any(str::is_empty) {
        return Err(format!(
            "key {:?} has an empty segment (no leading, trailing or doubled '/')",
            shown(key)
        ));
    }
    Ok(())
}

/// Checks a key prefix (for list and prefix delete): at most `max_len`
/// bytes, no control characters. Empty is allowed (everything).
pub fn validate_prefix(prefix: &str, max_len: usize) -> Result<(), String> {
    check_common("prefix", prefix, max_len)
}

fn check_common(what: &str, s: &str, max_len: usize) -> Result<(), String> {
    if s.len() > max_len {
        return Err(format!("{what} is {} bytes; the limit is {max_len}", s.len()));
    }
    if s.chars().any(char::is_control) {
        return Err(format!("{what} {:?} contains a control character", shown(s)));
    }
    Ok(())
}

fn shown(s: &str) -> String {
    s.chars().take(80).collect()
}

/// The opaque continuation token of a list page that ended at `last_key`.
pub fn page_token(last_key: &str) -> String {
    data_encoding::BASE64URL_NOPAD.encode(last_key.as_bytes())
}

/// The key a page token continues after.
pub fn parse_page_token(token: &str) -> Result<String, String> {
    data_encoding::BASE64URL_NOPAD
        .decode(token.as_bytes())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| "malformed page token (pass next_page_token back unchanged)".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        for good in [
            "a",
            "checkpoints/agent-7/latest",
            "logs/agent/2026-11-21T00:00:00Z",
            "ünï/cödé",
        ] {
            validate_key(good, MAX_KEY_LEN).expect(good);
        }
        for bad in ["", "/a", "a/", "a//b", "/", "a\nb", "a\0b"] {
            assert!(validate_key(bad, MAX_KEY_LEN).is_err(), "{bad:?}");
        }
        assert!(validate_key(&"k".repeat(1025), MAX_KEY_LEN).is_err());
        validate_prefix("", MAX_KEY_LEN).expect("empty prefix");
        validate_prefix("logs/", MAX_KEY_LEN).expect("trailing slash");
        assert!(validate_prefix("a\tb", MAX_KEY_LEN).is_err());
    }

    #[test]
    fn tokens() {
        let t = page_token("a/b/ü");
        assert_eq!(parse_page_token(&t).unwrap(), "a/b/ü");
        assert!(parse_page_token("!!").is_err());
    }
}
