//! Byte encodings of keys in the state machine's column families.
//!
//! Data keys are length-prefixed so that one namespace (and one store inside
//! it) is a contiguous, prefix-scannable range:
//! `b'h' | len(ns) | ns | len(store) | store | id` for handles.

use handlestore_proto::internal::v1 as ipb;

/// Tag of handle keys.
pub const TAG_HANDLE: u8 = b'h';

/// Tag of state-tool keys.
pub const TAG_STATE: u8 = b's';

/// Prefix of every state key of namespace `ns`.
pub fn state_ns_prefix(ns: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + ns.len());
    k.push(TAG_STATE);
    push_short(&mut k, ns.as_bytes());
    k
}

/// The data key of a state key; `key` may also be a key prefix.
pub fn state_key(ns: &str, key: &str) -> Vec<u8> {
    let mut k = state_ns_prefix(ns);
    k.extend_from_slice(key.as_bytes());
    k
}

/// Tag of key-ring entries.
pub const TAG_KEYRING: u8 = b'k';

/// Prefix of a namespace's key ring.
pub fn keyring_prefix(ns: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + ns.len());
    k.push(TAG_KEYRING);
    push_short(&mut k, ns.as_bytes());
    k
}

/// Prefix of every handle in `store` of namespace `ns`.
pub fn handle_store_prefix(ns: &str, store: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(3 + ns.len() + store.len());
    k.push(TAG_HANDLE);
    push_short(&mut k, ns.as_bytes());
    push_short(&mut k, store.as_bytes());
    k
}

/// The data key of one handle.
pub fn handle_key(ns: &str, store: &str, id: &str) -> Vec<u8> {
    let mut k = handle_store_prefix(ns, store);
    k.extend_from_slice(id.as_bytes());
    k
}

/// The prefix that owns `key` for counting purposes (its store), if `key` is
/// a well-formed handle key.
pub fn count_scope(key: &[u8]) -> Option<&[u8]> {
    if key.first() != Some(&TAG_HANDLE) {
        return None;
    }
    let ns_len = *key.get(1)? as usize;
    let store_len_at = 2 + ns_len;
    let store_len = *key.get(store_len_at)? as usize;
    let end = store_len_at + 1 + store_len;
    (key.len() >= end).then(|| &key[..end])
}

/// The namespace of a handle or state key (None for other keys).
pub fn namespace_of(key: &[u8]) -> Option<&str> {
    if !matches!(key.first(), Some(&TAG_HANDLE) | Some(&TAG_STATE)) {
        return None;
    }
    let len = *key.get(1)? as usize;
    std::str::from_utf8(key.get(2..2 + len)?).ok()
}

/// Meta key holding a namespace's usage: entries (u64 BE) ++ bytes (u64
/// BE).
pub fn usage_key(ns: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + ns.len());
    k.push(USAGE_TAG);
    k.extend_from_slice(ns.as_bytes());
    k
}

/// First byte of usage keys in the meta column family.
pub const USAGE_TAG: u8 = b'u';

/// Meta key holding the number of entries (live or awaiting expiry) under a
/// count scope.
pub fn count_key(scope: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + scope.len());
    k.push(b'c');
    k.extend_from_slice(scope);
    k
}

/// Expiry index key: `expires_at_ms BE | data key`. Ordered by time, so the
/// sweep reads only what is due.
pub fn expiry_key(expires_at_ms: u64, key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + key.len());
    k.extend_from_slice(&expires_at_ms.to_be_bytes());
    k.extend_from_slice(key);
    k
}

/// Splits an expiry index key back into its time and data key.
pub fn split_expiry_key(k: &[u8]) -> Option<(u64, &[u8])> {
    let (ts, key) = k.split_at_checked(8)?;
    Some((u64::from_be_bytes(ts.try_into().ok()?), key))
}

/// Age index of exactly-once answers: the stamp of a client's last answer
/// (u64 BE) ++ client id (u64 BE), so the least recently active come first.
pub fn answer_age_key(stamp_ms: u64, client_id: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&stamp_ms.to_be_bytes());
    k[8..].copy_from_slice(&client_id.to_be_bytes());
    k
}

/// Splits an answer age key into (stamp, client id).
pub fn split_answer_age_key(k: &[u8]) -> Option<(u64, u64)> {
    let (stamp, client) = k.split_at_checked(8)?;
    Some((
        u64::from_be_bytes(stamp.try_into().ok()?),
        u64::from_be_bytes(client.try_into().ok()?),
    ))
}

/// The smallest key strictly greater than every key that starts with
/// `prefix`, or None if there is none (prefix of all 0xFF).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The data keys a command writes new versions of: the proposer keeps two
/// commands that write one key out of one log entry, so a revision always
/// names a single version. (Deletions create no version and need no slot.)
pub fn conflict_keys(cmd: &ipb::Command) -> Vec<Vec<u8>> {
    use ipb::command::Op;
    match &cmd.op {
        Some(Op::HandleWrite(w)) => vec![handle_key(&w.namespace, &w.store, &w.id)],
        Some(Op::HandleDelete(d)) => vec![handle_key(&d.namespace, &d.store, &d.id)],
        Some(Op::StateWrite(w)) => vec![state_key(&w.namespace, &w.key)],
        Some(Op::StateDelete(d)) => vec![state_key(&d.namespace, &d.key)],
        Some(Op::StateBatch(b)) => b.writes.iter().map(|w| state_key(&w.namespace, &w.key)).collect(),
        // A ring changes as a whole (a rotate demotes the old primary): one
        // key ring operation per entry.
        Some(Op::KeyringRotate(r)) => vec![keyring_prefix(&r.namespace)],
        Some(Op::KeyringRetire(r)) => vec![keyring_prefix(&r.namespace)],
        // The auth state changes as a whole: one auth change per entry.
        Some(Op::AuthChange(_)) => vec![AUTH_CONFLICT_KEY.to_vec()],
        Some(Op::StateDeletePrefix(_)) | Some(Op::Expire(_)) | Some(Op::ClusterIdentity(_)) | None => Vec::new(),
    }
}

/// The conflict slot of auth changes (no data key starts with `a`).
const AUTH_CONFLICT_KEY: &[u8] = b"auth";

fn push_short(k: &mut Vec<u8>, part: &[u8]) {
    // Callers validate lengths (<= 64 bytes) before anything reaches here;
    // saturate rather than wrap so a bug can never alias two keys silently.
    k.push(u8::try_from(part.len()).unwrap_or(u8::MAX));
    k.extend_from_slice(part);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_do_not_alias() {
        // "ab"+"c" and "a"+"bc" must not share a prefix.
        let a = handle_store_prefix("ab", "c");
        let b = handle_store_prefix("a", "bc");
        assert!(!a.starts_with(&b) && !b.starts_with(&a));
        assert_ne!(handle_key("default", "cart", "X"), handle_key("default", "carts", ""));
    }

    #[test]
    fn namespaces_do_not_alias() {
        assert!(!state_key("ab", "c").starts_with(&state_ns_prefix("a")));
        assert!(state_key("a", "bc/d").starts_with(&state_key("a", "bc/")));
        assert_ne!(state_key("a", "x")[0], handle_key("a", "x", "y")[0]);
        assert_eq!(count_scope(&state_key("a", "x")), None, "state keys are not counted");
    }

    #[test]
    fn namespace_of_reads_handle_and_state_keys_only() {
        assert_eq!(namespace_of(&handle_key("ns", "cart", "X")), Some("ns"));
        assert_eq!(namespace_of(&state_key("a.b", "k/1")), Some("a.b"));
        assert_eq!(namespace_of(&keyring_prefix("ns")), None);
        assert_eq!(namespace_of(&[TAG_STATE, 9, b'a']), None, "truncated");
    }

    #[test]
    fn count_scope_is_store_prefix() {
        let k = handle_key("ns", "cart", "ABC");
        assert_eq!(count_scope(&k), Some(handle_store_prefix("ns", "cart").as_slice()));
        assert_eq!(count_scope(b"h"), None);
        assert_eq!(count_scope(&[b'h', 200]), None);
    }

    #[test]
    fn expiry_key_round_trip_and_order() {
        let k1 = expiry_key(5, b"zzz");
        let k2 = expiry_key(6, b"aaa");
        assert!(k1 < k2);
        assert_eq!(split_expiry_key(&k1), Some((5, &b"zzz"[..])));
    }

    #[test]
    fn prefix_end_works() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xFF]), None);
    }
}
