/** TLS to the nodes: the cluster's CA is trusted, another CA's nodes are refused at once, not retried. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Client, tlsFromFiles, UnauthenticatedError } from "../src/index.js";
import { skipReason, useCluster } from "./cluster.js";

describe("TLS", { skip: skipReason }, () => {
  const fx = useCluster({ tls: true });

  test("a client trusting the cluster's CA reads and writes over https", async () => {
    const client = fx.cluster.client({ namespace: "ts-tls" });
    try {
      const t = client.stateTool();
      await t.store("k", { over: "tls" });
      assert.deepEqual(await t.get("k"), { over: "tls" });
      const https = new Client({
        endpoints: fx.cluster.endpoints.map((e) => `https://${e}`),
        tls: tlsFromFiles(join(fx.cluster.certs as string, "ca.pem")),
        namespace: "ts-tls",
      });
      assert.deepEqual(await https.stateTool().get("k"), { over: "tls" });
      https.close();
    } finally {
      client.close();
    }
  });

  test("a node whose certificate is not from the trusted CA is refused at once", async () => {
    const other = join(fx.cluster.root, "other-ca");
    execFileSync(fx.cluster.bin, ["certs", "--dir", other, "--node", "1=localhost,127.0.0.1"], { stdio: "ignore" });
    const client = new Client({
      endpoints: fx.cluster.endpoints,
      tls: tlsFromFiles(join(other, "ca.pem")),
      namespace: "ts-tls",
      deadline: 20_000,
    });
    const started = performance.now();
    try {
      await assert.rejects(client.stateTool().get("k"), (e: unknown) => {
        assert.ok(e instanceof UnauthenticatedError, String(e));
        return true;
      });
      assert.ok(performance.now() - started < 10_000, "not retried until the deadline");
    } finally {
      client.close();
    }
  });
});
