/**
 * An auth-enabled cluster over TLS, tried the way a careless client and an
 * attacker would: no token, a malformed or a wrong one, a token used in a
 * namespace or a store it was not granted, a read-only token writing, a
 * watch without read, a revoked role and a rotated token on every node, a
 * client certificate in place of a token. Each refusal is the right class
 * with its reason, comes at once (not retried to the deadline), and changes
 * nothing.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import { transportOf } from "../src/cluster.js";
import { Access, AuthService, type Permission } from "../src/gen/handlestore/v1/auth.js";
import {
  Client,
  type HandlestoreError,
  PermissionDeniedError,
  RequestStateCodec,
  tlsFromFiles,
  UnauthenticatedError,
} from "../src/index.js";
import { skipReason, useCluster } from "./cluster.js";

const SHOP = "ts-shop";
const WRITE: Grant = { access: Access.ACCESS_WRITE, store: "", keyPrefix: "" };
const READ: Grant = { access: Access.ACCESS_READ, store: "", keyPrefix: "" };

type Grant = Omit<Permission, "namespace">;

/** A user holding one role of its own name with `grants` in SHOP; its token ("" with `noToken`). */
async function addUser(root: Client, name: string, grants: Grant[], noToken = false): Promise<string> {
  await transportOf(root).call(AuthService.roleAdd, { name });
  for (const g of grants) {
    await transportOf(root).call(AuthService.roleGrant, { role: name, permission: { namespace: SHOP, ...g } });
  }
  return (await transportOf(root).call(AuthService.userAdd, { name, roles: [name], noToken })).token;
}

/** `p` rejects with `cls` and its reason, within `ms` (not retried until the deadline). */
async function refused(p: Promise<unknown>, cls: typeof HandlestoreError, reason: string, ms = 5_000): Promise<void> {
  const started = performance.now();
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof cls, `${String(e)} is not a ${cls.name}`);
    assert.equal((e as HandlestoreError).reason, reason);
    return true;
  });
  assert.ok(performance.now() - started < ms, `refused after ${performance.now() - started} ms`);
}

describe("an auth-enabled cluster", { skip: skipReason }, () => {
  const fx = useCluster({ tls: true });
  let rootToken = "";
  let root: Client;
  const as = (token: string | undefined, namespace = SHOP) => fx.client({ namespace, token, deadline: 20_000 });
  const user = (name: string, grants: Grant[]) => addUser(root, name, grants);

  before(async () => {
    const open = fx.client({ namespace: SHOP });
    rootToken = (await transportOf(open).call(AuthService.authEnable, { rootToken: "" })).rootToken;
    root = as(rootToken);
  });

  test("root's token reads, writes and watches", async () => {
    const w = fx.track(await root.watch({ prefix: "root/" }));
    const t = root.stateTool();
    await t.store("root/k", { by: "root" });
    assert.deepEqual(await t.get("root/k"), { by: "root" });
    const batch = await w.nextBatch();
    assert.deepEqual(
      batch.changes.map((c) => [c.kind, c.key]),
      [["put", "root/k"]],
    );
    const carts = root.handleStore<{ n: number }>("cart", { prefix: "cart" });
    assert.deepEqual(await carts.get(await carts.mint({ n: 1 })), { n: 1 });
  });

  test("no token, a malformed one, a wrong one: unauthenticated at once, nothing written", async () => {
    const forged = `${rootToken.slice(0, -4)}AAAA`;
    for (const token of [undefined, "not-a-token", "hs1_x_y", forged]) {
      const t = as(token).stateTool();
      await refused(t.store("anon/k", 1), UnauthenticatedError, "unauthenticated");
      await refused(t.get("anon/k"), UnauthenticatedError, "unauthenticated");
      await refused(as(token).watch({ prefix: "anon/" }), UnauthenticatedError, "unauthenticated");
    }
    assert.equal(await root.stateTool().exists("anon/k"), false);
  });

  test("a token used where it was not granted is denied, and nothing changes", async () => {
    const bob = await user("bob", [WRITE]);
    await as(bob).stateTool().store("bob/k", "mine");
    // Another namespace.
    await refused(as(bob, "ts-other").stateTool().store("bob/k", "theirs"), PermissionDeniedError, "permission_denied");
    await refused(as(bob, "ts-other").stateTool().get("bob/k"), PermissionDeniedError, "permission_denied");
    await refused(as(bob, "ts-other").watch({ prefix: "bob/" }), PermissionDeniedError, "permission_denied");
    assert.equal(await as(rootToken, "ts-other").stateTool().exists("bob/k"), false);
    // The key ring's secrets need the keyring access, not write.
    await refused(RequestStateCodec.fromCluster(as(bob), "signed"), PermissionDeniedError, "permission_denied");
  });

  test("a read-only token reads but cannot write; a grant narrowed to a store covers only that store", async () => {
    await root.stateTool().store("shared/k", "v1");
    const reader = await user("reader", [READ]);
    const r = as(reader).stateTool();
    assert.equal(await r.get("shared/k"), "v1");
    await refused(r.store("shared/k", "v2"), PermissionDeniedError, "permission_denied");
    await refused(r.deletePrefix("shared/"), PermissionDeniedError, "permission_denied");
    await refused(as(reader).handleStore("cart").mint({}), PermissionDeniedError, "permission_denied");
    assert.equal(await root.stateTool().get("shared/k"), "v1");

    const carter = await user("carter", [{ access: Access.ACCESS_WRITE, store: "cart", keyPrefix: "" }]);
    const carts = as(carter).handleStore<{ n: number }>("cart");
    const id = await carts.mint({ n: 2 });
    assert.deepEqual(await carts.get(id), { n: 2 });
    await refused(as(carter).handleStore("order").mint({}), PermissionDeniedError, "permission_denied");
    await refused(as(carter).stateTool().store("shared/k", "v3"), PermissionDeniedError, "permission_denied");
    assert.equal(await root.stateTool().get("shared/k"), "v1");
  });

  test("a revoked role and a rotated token stop working on every node at once", async () => {
    const carol = await user("carol", [WRITE]);
    await as(carol).stateTool().store("carol/k", 1);
    await transportOf(root).call(AuthService.userRevokeRole, { name: "carol", role: "carol" });
    for (const first of fx.cluster.endpoints) {
      const endpoints = [first, ...fx.cluster.endpoints.filter((e) => e !== first)];
      const c = fx.client({ endpoints, namespace: SHOP, token: carol, deadline: 20_000 });
      await refused(c.stateTool().store("carol/k", 2), PermissionDeniedError, "permission_denied");
    }
    await transportOf(root).call(AuthService.userGrantRole, { name: "carol", role: "carol" });
    const rotated = (await transportOf(root).call(AuthService.userTokenRotate, { name: "carol" })).token;
    for (const first of fx.cluster.endpoints) {
      const endpoints = [first, ...fx.cluster.endpoints.filter((e) => e !== first)];
      const old = fx.client({ endpoints, namespace: SHOP, token: carol, deadline: 20_000 });
      await refused(old.stateTool().store("carol/k", 3), UnauthenticatedError, "unauthenticated");
    }
    await as(rotated).stateTool().store("carol/k", 4);
    assert.equal(await root.stateTool().get("carol/k"), 4);
  });

  test("a watch whose grant is revoked ends with permission_denied", async () => {
    const dave = await user("dave", [READ]);
    const w = fx.track(await as(dave).watch({ prefix: "dave/" }));
    await root.stateTool().store("dave/1", 1);
    assert.deepEqual(
      (await w.nextBatch()).changes.map((c) => c.key),
      ["dave/1"],
    );
    await transportOf(root).call(AuthService.userRevokeRole, { name: "dave", role: "dave" });
    await root.stateTool().store("dave/2", 2);
    await refused(
      (async () => {
        for (;;) await w.nextBatch();
      })(),
      PermissionDeniedError,
      "permission_denied",
      15_000,
    );
  });
});

describe("an auth-enabled cluster that requires client certificates", { skip: skipReason }, () => {
  const fx = useCluster({ tls: true, clientCerts: ["alice"] });
  let root: Client;

  before(async () => {
    // root's certificate: with auth off, anyone may enable it.
    const token = (await transportOf(fx.client({ namespace: SHOP })).call(AuthService.authEnable, { rootToken: "" }))
      .rootToken;
    root = fx.client({ namespace: SHOP, token });
    await addUser(root, "alice", [WRITE], true);
  });

  test("a certificate stands in for a token: its common name is the user", async () => {
    const alice = fx.client({ namespace: SHOP, certFor: "alice", deadline: 20_000 });
    await alice.stateTool().store("alice/k", "by certificate");
    assert.equal(await root.stateTool().get("alice/k"), "by certificate");
    const elsewhere = fx.client({ namespace: "ts-other", certFor: "alice", deadline: 20_000 });
    await refused(elsewhere.stateTool().store("alice/k", 1), PermissionDeniedError, "permission_denied");
    assert.equal(await fx.client({ namespace: "ts-other" }).stateTool().exists("alice/k"), false);
  });

  test("a token, when sent, decides: a wrong one is refused even with a good certificate", async () => {
    const both = fx.client({ namespace: SHOP, certFor: "alice", token: "not-a-token", deadline: 20_000 });
    await refused(both.stateTool().store("alice/k", "forged"), UnauthenticatedError, "unauthenticated");
    assert.equal(await root.stateTool().get("alice/k"), "by certificate");
  });

  test("no certificate, or one from another CA, is refused at the handshake, at once", async () => {
    const none = fx.client({ namespace: SHOP, certFor: null, deadline: 20_000 });
    await refused(none.stateTool().get("alice/k"), UnauthenticatedError, "unauthenticated", 10_000);
    const other = join(fx.cluster.root, "other-ca");
    execFileSync(fx.cluster.bin, ["certs", "--dir", other, "--client", "alice"], { stdio: "ignore" });
    const foreign = fx.track(
      new Client({
        endpoints: fx.cluster.endpoints,
        namespace: SHOP,
        deadline: 20_000,
        tls: tlsFromFiles(
          join(fx.cluster.certs as string, "ca.pem"),
          join(other, "client-alice.pem"),
          join(other, "client-alice-key.pem"),
        ),
      }),
    );
    await refused(foreign.stateTool().get("alice/k"), UnauthenticatedError, "unauthenticated", 10_000);
  });
});
