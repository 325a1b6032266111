#!/usr/bin/env python3
"""Generates request_state_vectors.json: test vectors for handlestore's
RequestStateCodec, computed by this independent implementation of the format
(Python's hmac/hashlib and the `cryptography` package for AES-256-GCM), so the
Rust tests check the codec against a second implementation, not against
itself.

    python3 proto/vectors/gen_request_state_vectors.py > proto/vectors/request_state_vectors.json

Format (see client/rust/src/request_state.rs):
  mac_key = HKDF-SHA256(ikm=secret, salt=none, info="handlestore/request-state/v1/mac", 32)
  aes_key = HKDF-SHA256(ikm=secret, salt=none, info="handlestore/request-state/v1/aes", 32)
  bind    = hex(HMAC-SHA256(mac_key, subject [+ b"\\0" + tool]))
  payload = {"s": state, "exp": unix_seconds, "b": bind}   (compact JSON)
  signed    = "v1."  + b64url(payload) + "." + b64url(HMAC-SHA256(mac_key, payload))
  encrypted = "v1e." + b64url(nonce12 + AES-256-GCM(aes_key, nonce, payload, aad=bind))

Single use (client/rust/src/single_use.rs): a token is redeemed by a
create-only mint in handle store "mcp-redeemed" under the id
  base32(SHA-256(token)[:16]), RFC 4648 upper case, no padding
so that replicas in any language refuse each other's redeemed tokens.
"""
import base64
import hashlib
import hmac
import json
import sys

from cryptography.hazmat.primitives.ciphers.aead import AESGCM


def hkdf(ikm: bytes, info: bytes, length: int = 32) -> bytes:
    prk = hmac.new(b"\0" * 32, ikm, hashlib.sha256).digest()  # no salt = zeros
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:length]


def b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def keys(secret: bytes):
    return (hkdf(secret, b"handlestore/request-state/v1/mac"),
            hkdf(secret, b"handlestore/request-state/v1/aes"))


def bind(mac_key: bytes, subject: str, tool):
    msg = subject.encode() + (b"\0" + tool.encode() if tool is not None else b"")
    return hmac.new(mac_key, msg, hashlib.sha256).hexdigest()


def payload(state, exp, b):
    return json.dumps({"s": state, "exp": exp, "b": b}, separators=(",", ":")).encode()


def signed(secret, state, subject, tool, exp):
    mac_key, _ = keys(secret)
    p = payload(state, exp, bind(mac_key, subject, tool))
    return "v1." + b64(p) + "." + b64(hmac.new(mac_key, p, hashlib.sha256).digest())


def encrypted(secret, state, subject, tool, exp, nonce):
    mac_key, aes_key = keys(secret)
    b = bind(mac_key, subject, tool)
    ct = AESGCM(aes_key).encrypt(nonce, payload(state, exp, b), b.encode())
    return "v1e." + b64(nonce + ct)


def tamper(blob: str) -> str:
    # Flip one character in the middle of the body (keeping it base64url).
    i = len(blob) // 2
    c = blob[i]
    return blob[:i] + ("A" if c != "A" else "B") + blob[i + 1:]


KEY1 = bytes(range(32))
KEY2 = bytes(range(100, 132))
NOW = 1_800_000_000
EXP = NOW + 600
NONCE = bytes.fromhex("000102030405060708090a0b")
STATE = {"cart_id": "cart-ABC", "step": 2}
SUBJECT = "user-42"
TOOL = "checkout"

vectors = []
for mode, make in (("signed", lambda *a: signed(*a)),
                   ("encrypted", lambda *a: encrypted(*a, NONCE))):
    good = make(KEY1, STATE, SUBJECT, TOOL, EXP)
    subject_only = make(KEY1, STATE, SUBJECT, None, EXP)
    by_old_key = make(KEY2, STATE, SUBJECT, TOOL, EXP)
    vectors += [
        {"name": f"{mode}: valid", "mode": mode, "blob": good, "encodes": True,
         "subject": SUBJECT, "tool": TOOL, "ring": ["key1"], "now": NOW, "expect": STATE},
        {"name": f"{mode}: valid, bound to the subject only", "mode": mode, "blob": subject_only, "encodes": True,
         "subject": SUBJECT, "tool": None, "ring": ["key1"], "now": NOW, "expect": STATE},
        {"name": f"{mode}: tampered", "mode": mode, "blob": tamper(good),
         "subject": SUBJECT, "tool": TOOL, "ring": ["key1"], "now": NOW, "expect": None},
        {"name": f"{mode}: wrong subject", "mode": mode, "blob": good,
         "subject": "user-43", "tool": TOOL, "ring": ["key1"], "now": NOW, "expect": None},
        {"name": f"{mode}: wrong tool", "mode": mode, "blob": good,
         "subject": SUBJECT, "tool": "get_cart", "ring": ["key1"], "now": NOW, "expect": None},
        {"name": f"{mode}: tool-bound blob opened without a tool", "mode": mode, "blob": good,
         "subject": SUBJECT, "tool": None, "ring": ["key1"], "now": NOW, "expect": None},
        {"name": f"{mode}: expired", "mode": mode, "blob": good,
         "subject": SUBJECT, "tool": TOOL, "ring": ["key1"], "now": EXP, "expect": None},
        {"name": f"{mode}: signed by an older key still in the ring", "mode": mode, "blob": by_old_key,
         "subject": SUBJECT, "tool": TOOL, "ring": ["key1", "key2"], "now": NOW, "expect": STATE},
        {"name": f"{mode}: signed by a retired key", "mode": mode, "blob": by_old_key,
         "subject": SUBJECT, "tool": TOOL, "ring": ["key1"], "now": NOW, "expect": None},
    ]

for name, blob in [("empty", ""), ("unknown version", "v2.e30.e30"), ("no tag", "v1.e30"),
                   ("not base64", "v1.!!!.!!!"), ("short ciphertext", "v1e.AAAA"),
                   ("garbage", "\u00e9\u00e9\u00e9")]:
    vectors.append({"name": f"malformed: {name}", "mode": "signed", "blob": blob,
                    "subject": SUBJECT, "tool": TOOL, "ring": ["key1"], "now": NOW, "expect": None})

def redeemed_id(token: str) -> str:
    return base64.b32encode(hashlib.sha256(token.encode()).digest()[:16]).decode().rstrip("=")


redemptions = [{"token": t, "id": redeemed_id(t)}
               for t in (vectors[0]["blob"], vectors[9]["blob"], "", "v1.e30.e30", "\u00e9t\u00e9")]

json.dump({
    "keys": {"key1": KEY1.hex(), "key2": KEY2.hex()},
    "primary": "key1",
    "exp": EXP,
    "nonce": NONCE.hex(),
    "vectors": vectors,
    "redemptions": redemptions,
}, sys.stdout, indent=2)
print()
