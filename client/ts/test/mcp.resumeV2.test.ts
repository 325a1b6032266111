/**
 * The v2 SDK's resumption path: 2025-era clients served by
 * `@modelcontextprotocol/server` 2.4's WebStandardStreamableHTTPServerTransport
 * with a ClusterEventStore, through `handleResumable` (createMcpHandler has
 * none: its 2025-era leg has no event store, and 2026-07-28 has no
 * resumption). That transport ends a resumed response when the replay
 * returns, so the store holds each resumption until an event goes out and
 * the SDK 1.32 client reconnects from it: the same outcomes as with SDK
 * 1.32 servers, for a slow tool cut at K = 0 and in the middle, origin
 * alive and killed, and a fast tool cut at the end.
 */
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { skipReason, useCluster } from "./cluster.js";
import { ServerProcess } from "./mcpHttp.js";
import { assertStoredOnce, assertWhole, cutCall, FAST, SLOW } from "./resumeCall.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/resumeServerV2.ts", import.meta.url));
const NAMESPACE = "ts-resume-v2";

describe("SDK 2.4 (2025-era transport): a resumption on another replica follows its origin", {
  skip: skipReason,
}, () => {
  const fx = useCluster();
  const started: ServerProcess[] = [];
  const start = async () => {
    const s = await ServerProcess.start(FIXTURE, [fx.cluster.endpoints.join(","), NAMESPACE]);
    started.push(s);
    return s;
  };
  let a: ServerProcess;
  let b: ServerProcess;

  before(async () => {
    [a, b] = await Promise.all([start(), start()]);
  });
  after(async () => {
    await Promise.all(started.map((s) => s.stop()));
  });

  describe("cases at once", { concurrency: true }, () => {
    for (const k of [0, SLOW.count / 2]) {
      test(`a slow tool, cut after ${k} events, origin alive: every event once, in order, the result once`, async () => {
        assertWhole(await cutCall(SLOW, k, false, a, b), SLOW);
      });
    }

    test("a fast tool, cut at the end, origin alive: the result once", async () => {
      assertWhole(await cutCall(FAST, FAST.count, false, a, b), FAST);
    });

    test("a slow tool, cut in the middle, origin killed: every stored event once, then origin_lost", async () => {
      const got = await cutCall(SLOW, SLOW.count / 2, true, await start(), b);
      await assertStoredOnce(got, fx.client({ namespace: NAMESPACE }), SLOW, true);
    });
  });
});
