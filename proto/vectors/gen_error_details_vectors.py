#!/usr/bin/env python3
"""Generates error_details.json: what every client must read from an error's
details, the bytes a node puts in `grpc-status-details-bin` and in
`WriteFailure.details` (proto/src/status_details.rs). The bytes are encoded
here by hand from the protobuf wire format, with no protobuf runtime, so the
clients' runtimes are checked against an independent encoder.

    python3 proto/vectors/gen_error_details_vectors.py > proto/vectors/error_details.json

The forms:
  new  google.rpc.Status {1: code, 2: message, 3: [Any {1: type_url, 2: ErrorDetail}]}
       with type_url "type.googleapis.com/handlestore.v1.ErrorDetail" (the node's);
  old  the bare ErrorDetail {1: reason, 2: leader_id, 3: leader_addr,
       4: current_revision, 5: compact_revision} (nodes of the previous release;
       read for one release).

A reader tries the new form first and takes the old one only when it names a
reason. Each case gives the status's code and message, its details as hex,
whether they are the very bytes a node sends for that status (node_sends),
and the ErrorDetail a client must find (null: none, so no reason).
"""
import json

TYPE_URL = "type.googleapis.com/handlestore.v1.ErrorDetail"

# gRPC codes by name (the numbers every gRPC library uses).
CODES = {
    "NOT_FOUND": 5,
    "FAILED_PRECONDITION": 9,
    "OUT_OF_RANGE": 11,
    "UNAVAILABLE": 14,
}


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    """A varint field (wire type 0); proto3 leaves a zero out."""
    return varint(number << 3) + varint(value) if value else b""


def field_bytes(number: int, value: bytes) -> bytes:
    """A length-delimited field (wire type 2); proto3 leaves an empty one out."""
    return varint(number << 3 | 2) + varint(len(value)) + value if value else b""


def error_detail(reason="", leader_id=0, leader_addr="", current_revision=0, compact_revision=0) -> bytes:
    return (
        field_bytes(1, reason.encode())
        + field_varint(2, leader_id)
        + field_bytes(3, leader_addr.encode())
        + field_varint(4, current_revision)
        + field_varint(5, compact_revision)
    )


def any_of(type_url: str, value: bytes) -> bytes:
    return field_bytes(1, type_url.encode()) + field_bytes(2, value)


def status(code: str, message: str, *anys: bytes) -> bytes:
    out = field_varint(1, CODES[code]) + field_bytes(2, message.encode())
    for a in anys:
        # A repeated message field: every element is written, even an empty one.
        out += varint(3 << 3 | 2) + varint(len(a)) + a
    return out


def expect(reason, leader_id=0, leader_addr="", current_revision=0, compact_revision=0):
    return {
        "reason": reason,
        "leader_id": leader_id,
        "leader_addr": leader_addr,
        "current_revision": current_revision,
        "compact_revision": compact_revision,
    }


def case(name, code, message, details: bytes, expected, node_sends=False):
    """node_sends: these are the very bytes a node sends for this status."""
    return {
        "name": name,
        "code": CODES[code],
        "message": message,
        "details": details.hex(),
        "node_sends": node_sends,
        "expect": expected,
    }


def cases():
    mismatch = dict(reason="revision_mismatch", current_revision=7)
    leader = dict(reason="not_leader", leader_id=2, leader_addr="10.0.0.2:7001")
    compacted = dict(reason="compacted", compact_revision=41)
    retry_info = any_of("type.googleapis.com/google.rpc.RetryInfo", field_bytes(1, field_varint(1, 1)))
    new_mismatch = status("FAILED_PRECONDITION", "lost", any_of(TYPE_URL, error_detail(**mismatch)))
    return [
        case("new: revision_mismatch with its current revision", "FAILED_PRECONDITION", "lost", new_mismatch,
             expect(**mismatch), node_sends=True),
        case("new: not_leader naming the leader", "UNAVAILABLE", "not the leader",
             status("UNAVAILABLE", "not the leader", any_of(TYPE_URL, error_detail(**leader))),
             expect(**leader), node_sends=True),
        case("new: compacted with the oldest revision kept", "OUT_OF_RANGE", "compacted",
             status("OUT_OF_RANGE", "compacted", any_of(TYPE_URL, error_detail(**compacted))),
             expect(**compacted), node_sends=True),
        case("new: not_found, nothing else", "NOT_FOUND", "no such handle",
             status("NOT_FOUND", "no such handle", any_of(TYPE_URL, error_detail(reason="not_found"))),
             expect("not_found"), node_sends=True),
        case("new: the ErrorDetail after another detail", "UNAVAILABLE", "not the leader",
             status("UNAVAILABLE", "not the leader", retry_info, any_of(TYPE_URL, error_detail(**leader))),
             expect(**leader)),
        case("new: a type URL of another host names the same type", "NOT_FOUND", "gone",
             status("NOT_FOUND", "gone", any_of("example.com/x/handlestore.v1.ErrorDetail",
                                                error_detail(reason="not_found"))),
             expect("not_found")),
        case("new: a reason this build may not know is kept", "UNAVAILABLE", "later",
             status("UNAVAILABLE", "later", any_of(TYPE_URL, error_detail(reason="some_future_reason"))),
             expect("some_future_reason"), node_sends=True),
        case("old: revision_mismatch with its current revision", "FAILED_PRECONDITION", "lost",
             error_detail(**mismatch), expect(**mismatch)),
        case("old: not_leader naming the leader", "UNAVAILABLE", "not the leader", error_detail(**leader),
             expect(**leader)),
        case("old: compacted with the oldest revision kept", "OUT_OF_RANGE", "compacted",
             error_detail(**compacted), expect(**compacted)),
        case("none: no details", "UNAVAILABLE", "connection reset", b"", None),
        case("none: garbage", "UNAVAILABLE", "garbage", bytes([0xFF, 0xFF, 0xFF]), None),
        case("none: a proxy's google.rpc.Status without details", "UNAVAILABLE", "upstream connect error",
             status("UNAVAILABLE", "upstream connect error"), None),
        case("none: a google.rpc.Status with another detail only", "UNAVAILABLE", "try later",
             status("UNAVAILABLE", "try later", retry_info), None),
        case("none: a google.rpc.Status cut short inside its detail", "FAILED_PRECONDITION", "lost",
             new_mismatch[: len(new_mismatch) - 3], None),
    ]


def main():
    doc = {
        "comment": "Generated by proto/vectors/gen_error_details_vectors.py; the forms are described there.",
        "type_url": TYPE_URL,
        "cases": cases(),
    }
    print(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
