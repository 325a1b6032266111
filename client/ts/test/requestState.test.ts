import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { RequestStateCodec, type RingKey, redeemedId } from "../src/index.js";
import { loadVectors, VECTORS_PATH, type Vector, type Vectors } from "./vectors.js";

const vectors: Vectors = loadVectors();

function ring(v: Vector): RingKey[] {
  return v.ring.map((id) => ({
    id,
    primary: id === vectors.primary,
    createdMs: 0,
    secret: Buffer.from(vectors.keys[id] ?? "", "hex"),
  }));
}

function codec(v: Vector): RequestStateCodec {
  return RequestStateCodec.withKeys(ring(v), v.mode);
}

describe(`request-state vectors (${VECTORS_PATH})`, () => {
  test("there are vectors of both modes, valid and refused", () => {
    assert.ok(vectors.vectors.some((v) => v.mode === "encrypted" && v.expect !== null));
    assert.ok(vectors.vectors.some((v) => v.mode === "signed" && v.expect === null));
  });

  for (const v of vectors.vectors) {
    test(`opens as expected: ${v.name}`, () => {
      const got = codec(v).decodeAt(v.blob, v.subject, v.tool ?? undefined, v.now);
      assert.deepEqual(got, v.expect ?? undefined);
    });
    if (v.encodes) {
      test(`seals byte for byte: ${v.name}`, () => {
        // The blob's own key seals it: the ring's primary, or the older key it names.
        const sealer = RequestStateCodec.withKeys(
          ring(v).map((k) => ({ ...k, primary: k.id === vectors.primary })),
          v.mode,
        );
        const nonce = Buffer.from(vectors.nonce, "hex");
        assert.equal(sealer.encodeAt(v.expect, v.subject, v.tool ?? undefined, vectors.exp, nonce), v.blob);
      });
    }
  }
});

describe("single use", () => {
  test("tokens are redeemed under the shared vectors' ids", () => {
    assert.ok(vectors.redemptions.length > 0);
    for (const { token, id } of vectors.redemptions) assert.equal(redeemedId(token), id, JSON.stringify(token));
  });
});

describe("request-state codec", () => {
  const key: RingKey = { id: "k1", primary: true, createdMs: 0, secret: Buffer.alloc(32, 7) };

  test("a sealed state opens for its subject and tool only, until it expires", async () => {
    for (const mode of ["signed", "encrypted"] as const) {
      const c = RequestStateCodec.withKeys([key], mode);
      const blob = await c.encode({ step: 1, b: "ü" }, "alice", { tool: "checkout", ttl: 60 });
      assert.deepEqual(await c.decode(blob, "alice", { tool: "checkout" }), { step: 1, b: "ü" });
      assert.equal(await c.decode(blob, "bob", { tool: "checkout" }), undefined);
      assert.equal(await c.decode(blob, "alice"), undefined);
      assert.equal(c.decodeAt(blob, "alice", "checkout", Math.floor(Date.now() / 1000) + 61), undefined);
    }
  });

  test("an encrypted blob does not show its state", async () => {
    const c = RequestStateCodec.withKeys([key], "encrypted");
    const blob = await c.encode({ secret: "hunter2" }, "alice");
    assert.ok(blob.startsWith("v1e."));
    assert.ok(!Buffer.from(blob.slice(4), "base64url").toString("latin1").includes("hunter2"));
  });

  test("object keys are sealed sorted, as serde_json writes them", () => {
    const c = RequestStateCodec.withKeys([key], "signed");
    const a = c.encodeAt({ b: 1, a: { d: 2, c: 3 } }, "s", undefined, 100);
    const b = c.encodeAt({ a: { c: 3, d: 2 }, b: 1 }, "s", undefined, 100);
    assert.equal(a, b);
    const payload = Buffer.from(a.split(".")[1] ?? "", "base64url").toString();
    assert.ok(payload.startsWith('{"s":{"a":{"c":3,"d":2},"b":1},"exp":100,"b":"'), payload);
  });

  test("a key without a 32-byte secret is refused", () => {
    assert.throws(() => RequestStateCodec.withKeys([{ ...key, secret: Buffer.alloc(8) }], "signed"), {
      name: "InvalidArgumentError",
    });
  });
});
