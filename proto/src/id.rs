//! Handle ids: 128 bits from the OS CSPRNG, RFC 4648 base32 (upper case,
//! no padding) = 26 characters, optionally after `<prefix>-`. The same
//! format as mcpkit's HandleStore.

/// Length of the random part.
pub const ID_LEN: usize = 26;
/// Longest accepted prefix.
pub const MAX_PREFIX_LEN: usize = crate::limits::MAX_NAME_LEN;

/// Draws a new id.
pub fn new_handle_id(prefix: &str) -> String {
    let bytes: [u8; 16] = rand::random();
    let id = data_encoding::BASE32_NOPAD.encode(&bytes);
    if prefix.is_empty() {
        id
    } else {
        format!("{prefix}-{id}")
    }
}

/// Whether `s` is a valid store name, namespace or id prefix.
pub fn is_name(s: &str, max_len: usize) -> bool {
    !s.is_empty()
        && s.len() <= max_len
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Checks an id; the error says what is wrong, for a person.
pub fn validate_handle_id(id: &str) -> Result<(), String> {
    let shown: String = id.chars().take(80).collect();
    if id.is_empty() {
        return Err("handle id must not be empty".into());
    }
    if id.len() > MAX_PREFIX_LEN + 1 + ID_LEN {
        return Err(format!("handle id {shown:?}... is too long"));
    }
    // '-' is ASCII, so the split is on a character boundary.
    let random = match id.len().checked_sub(ID_LEN + 1) {
        Some(split) if id.as_bytes()[split] == b'-' => {
            if !is_name(&id[..split], MAX_PREFIX_LEN) {
                return Err(format!(
                    "handle id {shown:?} has an invalid prefix (A-Z a-z 0-9 _ - . only)"
                ));
            }
            &id[split + 1..]
        }
        _ => id,
    };
    let ok = random.len() == ID_LEN
        && data_encoding::BASE32_NOPAD
            .decode(random.as_bytes())
            .is_ok_and(|b| b.len() == 16);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "handle id {shown:?} is malformed: expected 26 base32 characters (A-Z, 2-7), optionally after \"<prefix>-\""
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        let id = new_handle_id("");
        assert_eq!(id.len(), 26);
        assert!(id.bytes().all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(&b)));
        validate_handle_id(&id).expect("plain id");
        assert!(new_handle_id("cart").starts_with("cart-"));
        validate_handle_id(&new_handle_id("cart")).expect("prefixed id");
        validate_handle_id(&new_handle_id("my-cart.v2")).expect("prefix with dashes");
        for bad in [
            "",
            "short",
            "-AAAAAAAAAAAAAAAAAAAAAAAAAA",
            "AAAAAAAAAAAAAAAAAAAAAAAAA1",
            "aaaaaaaaaaaaaaaaaaaaaaaaaa",
            "AAAAAAAAAAAAAAAAAAAAAAAAAB",
            "cart AAAAAAAAAAAAAAAAAAAAAAAAAA",
            "c/t-AAAAAAAAAAAAAAAAAAAAAAAAAA",
            "é-AAAAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert!(validate_handle_id(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(validate_handle_id(&new_handle_id(&"p".repeat(65))).is_err());
    }
}
