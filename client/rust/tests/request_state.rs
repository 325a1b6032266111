//! The request-state codec against vectors computed by an independent
//! implementation (proto/vectors/gen_request_state_vectors.py), plus properties:
//! round trips, and no input can make decode panic or accept a forgery.

use std::collections::HashMap;

use handlestore_client::RequestStateCodec;
use handlestore_client::RingKey;
use handlestore_client::request_state::Mode;
use proptest::prelude::*;
use serde_json::{Value, json};

fn key(id: &str, hex: &str, primary: bool) -> RingKey {
    RingKey {
        id: id.into(),
        primary,
        created_ms: 0,
        secret: data_encoding::HEXLOWER.decode(hex.as_bytes()).expect("hex"),
    }
}

#[test]
fn vectors() {
    let file: Value =
        serde_json::from_str(include_str!("../../../proto/vectors/request_state_vectors.json")).expect("vectors parse");
    let keys: HashMap<String, String> = serde_json::from_value(file["keys"].clone()).expect("keys");
    let primary = file["primary"].as_str().expect("primary");
    let exp = file["exp"].as_u64().expect("exp");
    let nonce: [u8; 12] = data_encoding::HEXLOWER
        .decode(file["nonce"].as_str().expect("nonce").as_bytes())
        .expect("hex")
        .try_into()
        .expect("12 bytes");
    let vectors = file["vectors"].as_array().expect("vectors");
    assert!(vectors.len() >= 20);
    for v in vectors {
        let name = v["name"].as_str().expect("name");
        let mode = if v["mode"] == "encrypted" {
            Mode::Encrypted
        } else {
            Mode::Signed
        };
        let ring: Vec<RingKey> = v["ring"]
            .as_array()
            .expect("ring")
            .iter()
            .map(|id| {
                let id = id.as_str().expect("id");
                key(id, &keys[id], id == primary)
            })
            .collect();
        let codec = RequestStateCodec::with_keys(&ring, mode).expect("codec");
        let (blob, subject, tool) = (
            v["blob"].as_str().expect("blob"),
            v["subject"].as_str().expect("subject"),
            v["tool"].as_str(),
        );
        let got = codec.decode_at(blob, subject, tool, v["now"].as_u64().expect("now"));
        let want = if v["expect"].is_null() {
            None
        } else {
            Some(v["expect"].clone())
        };
        assert_eq!(got, want, "{name}");
        if v["encodes"] == json!(true) {
            let ours = codec
                .encode_at(&v["expect"], subject, tool, exp, Some(nonce))
                .expect("encode");
            assert_eq!(ours, blob, "{name}: encoding matches the reference implementation");
        }
    }
}

fn codec(mode: Mode) -> RequestStateCodec {
    let ring = [key("a", &"11".repeat(32), true), key("b", &"22".repeat(32), false)];
    RequestStateCodec::with_keys(&ring, mode).expect("codec")
}

proptest! {
    #[test]
    fn decode_never_panics(blob in ".{0,300}", subject in ".{0,20}") {
        for mode in [Mode::Signed, Mode::Encrypted] {
            prop_assert!(codec(mode).decode_at(&blob, &subject, None, 0).is_none());
            let prefixed = format!("v1.{blob}");
            prop_assert!(codec(mode).decode_at(&prefixed, &subject, Some("t"), 0).is_none());
            let prefixed = format!("v1e.{blob}");
            prop_assert!(codec(mode).decode_at(&prefixed, &subject, Some("t"), 0).is_none());
        }
    }

    #[test]
    fn round_trip_and_bit_flips(n in any::<i64>(), text in "[a-z]{0,30}", subject in "[a-z]{1,10}", flip in any::<usize>()) {
        for mode in [Mode::Signed, Mode::Encrypted] {
            let c = codec(mode);
            let state = json!({"n": n, "text": text});
            let blob = c.encode_at(&state, &subject, Some("tool"), 2_000, None).expect("encode");
            prop_assert_eq!(c.decode_at(&blob, &subject, Some("tool"), 1_000), Some(state.clone()));
            prop_assert_eq!(c.decode_at(&blob, &subject, Some("tool"), 2_000), None, "expired at exp");
            // Any single changed character is rejected.
            let mut chars: Vec<char> = blob.chars().collect();
            let i = flip % chars.len();
            chars[i] = if chars[i] == 'x' { 'y' } else { 'x' };
            let tampered: String = chars.into_iter().collect();
            if tampered != blob {
                prop_assert_eq!(c.decode_at(&tampered, &subject, Some("tool"), 1_000), None);
            }
        }
    }
}

#[test]
fn a_ring_without_primary_cannot_encode() {
    let c = RequestStateCodec::with_keys(&[key("b", &"22".repeat(32), false)], Mode::Signed).expect("codec");
    assert!(c.encode_at(&json!(1), "s", None, 10, None).is_err());
    assert!(RequestStateCodec::with_keys(&[key("short", "00", true)], Mode::Signed).is_err());
}
