//! The shared error-details vectors (proto/vectors/error_details.json): what
//! the node sends in an error's details is byte for byte what an
//! independent encoder makes, and `status_details::decode` finds in every
//! case the detail the vectors say (the cases every client is held to).

use handlestore_proto::status_details;
use handlestore_proto::v1 as pb;
use serde_json::Value;

fn cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors/error_details.json");
    let all: Value = serde_json::from_str(&std::fs::read_to_string(path).expect(path)).expect("error_details.json");
    assert_eq!(all["type_url"], status_details::TYPE_URL);
    let cases = all["cases"].as_array().expect("cases").clone();
    assert!(cases.len() >= 10, "too few cases");
    cases
}

fn hex(s: &Value) -> Vec<u8> {
    data_encoding::HEXLOWER
        .decode(s.as_str().expect("hex").as_bytes())
        .expect("hex")
}

/// The detail a case expects, or `None`.
fn expected(case: &Value) -> Option<pb::ErrorDetail> {
    let e = &case["expect"];
    let n = |k: &str| e[k].as_u64().expect(k);
    (!e.is_null()).then(|| pb::ErrorDetail {
        reason: e["reason"].as_str().expect("reason").into(),
        leader_id: n("leader_id"),
        leader_addr: e["leader_addr"].as_str().expect("leader_addr").into(),
        current_revision: n("current_revision"),
        compact_revision: n("compact_revision"),
    })
}

#[test]
fn every_case_decodes_to_its_detail() {
    for case in cases() {
        let name = case["name"].as_str().expect("name");
        assert_eq!(
            status_details::decode(&hex(&case["details"])),
            expected(&case),
            "{name}"
        );
    }
}

#[test]
fn the_node_encodes_as_the_vectors_do() {
    let mut sent = 0;
    for case in cases().iter().filter(|c| c["node_sends"] == true) {
        let name = case["name"].as_str().expect("name");
        let code = tonic::Code::from_i32(i32::try_from(case["code"].as_i64().expect("code")).expect("code"));
        let detail = expected(case).expect("a detail");
        let message = case["message"].as_str().expect("message");
        assert_eq!(
            status_details::encode(code, message, &detail),
            hex(&case["details"]),
            "{name}"
        );
        sent += 1;
    }
    assert!(sent >= 4, "too few cases the node sends");
}
