//! The shared format vectors (proto/vectors/formats.json) are what these
//! functions decide: the cases every client's validators are held to.

use handlestore_proto::id::{MAX_PREFIX_LEN, is_name, validate_handle_id};
use handlestore_proto::key::{MAX_KEY_LEN, validate_key, validate_prefix};
use handlestore_proto::limits::MAX_NAME_LEN;
use serde_json::Value;

/// Whether an input is accepted.
type Check = fn(&str) -> bool;

/// A case's input: a string, or parts (strings or `{"repeat", "times"}`) concatenated.
fn expand(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().map(expand).collect(),
        Value::Object(o) => {
            let times = usize::try_from(o["times"].as_u64().expect("times")).expect("times");
            o["repeat"].as_str().expect("repeat").repeat(times)
        }
        other => panic!("bad input {other}"),
    }
}

#[test]
fn format_vectors() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors/formats.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).expect(path)).expect("formats.json");
    assert_eq!(MAX_PREFIX_LEN, MAX_NAME_LEN);
    let kinds: [(&str, Check); 4] = [
        ("handle_ids", |s| validate_handle_id(s).is_ok()),
        ("names", |s| is_name(s, MAX_NAME_LEN)),
        ("keys", |s| validate_key(s, MAX_KEY_LEN).is_ok()),
        ("prefixes", |s| validate_prefix(s, MAX_KEY_LEN).is_ok()),
    ];
    for (kind, check) in kinds {
        let cases = all[kind].as_array().expect(kind);
        assert!(!cases.is_empty(), "{kind}: no cases");
        for case in cases {
            let (input, valid) = (&case["input"], case["valid"].as_bool().expect("valid"));
            let why = &case["why"];
            assert_eq!(check(&expand(input)), valid, "{kind} {input}: {why}");
        }
    }
}
