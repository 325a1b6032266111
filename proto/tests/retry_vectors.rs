//! The shared retry vectors (proto/vectors/retry.json) agree with the error
//! table: every reason of `reasons.txt` has a case, with its code, and the
//! decision its `retried` column gives (yes: retry / resume; resume:
//! give up / resume; no: give up both). The clients each run every case
//! through their own rule.

use std::collections::BTreeSet;

use handlestore_proto::reason::{Reason, Retry};
use serde_json::Value;

fn cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors/retry.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).expect(path)).expect("retry.json");
    all["cases"].as_array().expect("cases").clone()
}

#[test]
fn every_reason_has_a_case_that_decides_as_its_row() {
    let mut seen = BTreeSet::new();
    for case in cases() {
        let Some(name) = case["reason"].as_str() else { continue };
        let Some(reason) = Reason::from_name(name) else {
            continue;
        };
        let (call, watch) = match reason.retry() {
            Retry::Yes => ("retry", "resume"),
            Retry::Resume => ("give_up", "resume"),
            Retry::No => ("give_up", "give_up"),
        };
        assert_eq!(case["code"], reason.code_name(), "{name}: its code");
        assert_eq!(
            (case["call"].as_str(), case["watch"].as_str()),
            (Some(call), Some(watch)),
            "{name}"
        );
        seen.insert(name.to_string());
    }
    let missing: Vec<&str> = Reason::ALL
        .iter()
        .map(|r| r.name())
        .filter(|n| !seen.contains(*n))
        .collect();
    assert!(missing.is_empty(), "reasons without a retry case: {missing:?}");
}

#[test]
fn every_code_has_a_case_without_a_reason() {
    let codes: BTreeSet<String> = cases()
        .iter()
        .filter(|c| c["reason"].is_null())
        .map(|c| c["code"].as_str().expect("code").to_string())
        .collect();
    let all = [
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    let missing: Vec<&str> = all.into_iter().filter(|c| !codes.contains(*c)).collect();
    assert!(missing.is_empty(), "codes without a reasonless case: {missing:?}");
}

#[test]
fn every_case_says_each_decision_in_the_contracts_words() {
    for case in cases() {
        let ok = |k: &str, words: &[&str]| words.contains(&case[k].as_str().unwrap_or_default());
        assert!(
            ok("call", &["retry", "give_up"]) && ok("watch", &["resume", "give_up"]),
            "{case}"
        );
        assert!(
            case["call"] != "retry" || case["watch"] == "resume",
            "a retried call resumes a watch: {case}"
        );
    }
}
