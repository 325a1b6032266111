/** Ids, keys and names are checked as the node checks them, and malformed ones are refused before any call. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Client, checkHandleId, checkKey, checkPrefix, InvalidArgumentError, newHandleId } from "../src/index.js";

test("minted ids are 26 base32 characters, optionally after a prefix", () => {
  const id = newHandleId();
  assert.match(id, /^[A-Z2-7]{26}$/);
  assert.equal(checkHandleId(id), undefined);
  assert.match(newHandleId("cart"), /^cart-[A-Z2-7]{26}$/);
  assert.equal(checkHandleId(newHandleId("my-cart.v2")), undefined);
  assert.notEqual(newHandleId(), newHandleId());
});

test("malformed handle ids are refused with a reason", () => {
  const bad = [
    "",
    "short",
    "-AAAAAAAAAAAAAAAAAAAAAAAAAA",
    "AAAAAAAAAAAAAAAAAAAAAAAAA1",
    "aaaaaaaaaaaaaaaaaaaaaaaaaa",
    "AAAAAAAAAAAAAAAAAAAAAAAAAB", // not canonical: the last two bits are set
    "bad prefix-AAAAAAAAAAAAAAAAAAAAAAAAAA",
    `${"p".repeat(65)}-AAAAAAAAAAAAAAAAAAAAAAAAAA`,
  ];
  for (const id of bad) assert.ok(checkHandleId(id), id);
  assert.equal(checkHandleId("AAAAAAAAAAAAAAAAAAAAAAAAAA"), undefined);
  assert.equal(checkHandleId("cart-AAAAAAAAAAAAAAAAAAAAAAAAAE"), undefined);
});

test("keys and prefixes", () => {
  for (const good of ["a", "checkpoints/agent-7/latest", "logs/agent/2026-11-21T00:00:00Z", "ünï/cödé"]) {
    assert.equal(checkKey(good), undefined, good);
  }
  for (const bad of ["", "/a", "a/", "a//b", "/", "a\nb", "a\0b", "a\u0085b", "k".repeat(1025)]) {
    assert.ok(checkKey(bad), JSON.stringify(bad));
  }
  assert.equal(checkPrefix(""), undefined);
  assert.equal(checkPrefix("logs/"), undefined);
  assert.ok(checkPrefix("a\tb"));
});

test("malformed ids, keys and names are refused before any call", async () => {
  // Nothing listens on port 1: a call would fail only after retries.
  const client = new Client({ endpoints: ["127.0.0.1:1"], deadline: 60_000 });
  const carts = client.handleStore<{ n: number }>("cart");
  const tool = client.stateTool();
  const refused = [
    () => carts.get("nope"),
    () => carts.put("cart-nope", { n: 1 }),
    () => carts.delete(""),
    () => carts.update("AAAAAAAAAAAAAAAAAAAAAAAAA1", (c) => c),
    () => carts.mintWithId("x-y", { n: 1 }),
    () => tool.store("/a", 1),
    () => tool.retrieve("a//b"),
    () => tool.delete("a/"),
    () => tool.exists(""),
    () => tool.list("a\u0000"),
    () => tool.deletePrefix(""),
    () =>
      tool.batchStore([
        { key: "ok", value: 1 },
        { key: "", value: 2 },
      ]),
    () => tool.batchRetrieve(["ok", "bad//key"]),
    () => carts.mint({ n: 1n } as unknown as { n: number }),
  ];
  for (const call of refused) await assert.rejects(call, (e: Error) => e.name.endsWith("Error") && e.name !== "Error");
  await assert.rejects(() => carts.get("nope"), InvalidArgumentError);
  assert.deepEqual(client.writeStats, { writes: 0, calls: 0 });
  assert.deepEqual(client.readStats, { reads: 0, calls: 0 });
  assert.throws(() => client.withNamespace("bad namespace"), InvalidArgumentError);
  assert.throws(() => new Client({ endpoints: [] }), InvalidArgumentError);
  assert.throws(() => new Client({ endpoints: "https://127.0.0.1:1" }), InvalidArgumentError);
  assert.throws(() => new Client({ endpoints: "127.0.0.1" }), InvalidArgumentError);
  client.close();
});
