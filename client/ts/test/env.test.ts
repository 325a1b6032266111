/** Client.fromEnv reads the HANDLESTORE_* variables the CLI and the other clients read. */
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Client, InvalidArgumentError, optionsFromEnv } from "../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "handlestore-ts-env-"));

test("endpoints, namespace and token from the environment", () => {
  const client = Client.fromEnv(
    {},
    {
      HANDLESTORE_ENDPOINTS: "127.0.0.1:7401, 127.0.0.1:7402,",
      HANDLESTORE_NAMESPACE: "tenant-a",
      HANDLESTORE_TOKEN: "t0k",
    },
  );
  assert.deepEqual(client.endpoints, ["127.0.0.1:7401", "127.0.0.1:7402"]);
  assert.equal(client.namespace, "tenant-a");
  client.close();
});

test("the token from a file (its first line), HANDLESTORE_TOKEN first", () => {
  const file = join(dir, "token");
  writeFileSync(file, "  from-file \nsecond line\n");
  assert.equal(optionsFromEnv({ HANDLESTORE_TOKEN_FILE: file }).token, "from-file");
  assert.equal(optionsFromEnv({ HANDLESTORE_TOKEN_FILE: file, HANDLESTORE_TOKEN: "direct" }).token, "direct");
  writeFileSync(file, "\n\n");
  assert.throws(() => optionsFromEnv({ HANDLESTORE_TOKEN_FILE: file }), InvalidArgumentError);
});

test("TLS from the CA (and a client certificate with its key); endpoints then use https", () => {
  const ca = join(dir, "ca.pem");
  writeFileSync(ca, "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n");
  const opts = optionsFromEnv({ HANDLESTORE_CACERT: ca, HANDLESTORE_ENDPOINTS: "https://n1:7401" });
  assert.ok(opts.tls);
  assert.throws(() => optionsFromEnv({ HANDLESTORE_CACERT: ca, HANDLESTORE_CERT: ca }), InvalidArgumentError);
  assert.throws(() => Client.fromEnv({}, { HANDLESTORE_ENDPOINTS: "https://n1:7401" }), InvalidArgumentError);
});

test("no endpoints is an error; overrides win", () => {
  assert.throws(() => Client.fromEnv({}, {}), InvalidArgumentError);
  const client = Client.fromEnv({ endpoints: ["127.0.0.1:9"], namespace: "other" }, { HANDLESTORE_NAMESPACE: "ns" });
  assert.equal(client.namespace, "other");
  client.close();
});
