/**
 * A stream cut on one replica and resumed on another (SDK 1.32 servers in
 * their own processes, wired with `eventStore.handleRequest`), with the SDK
 * 1.32 client and its own reconnection behind a proxy that cuts the tool
 * call's stream after K events and sends the reconnection to the other
 * replica: K = 0, the middle and the end, for a fast tool and a slow one
 * (events 1.2 s apart). With the origin alive the client gets every event
 * once, in order, and the result once; with the origin killed at the cut,
 * every event it stored, once, in order, then the result if it was stored,
 * else the origin_lost error, before the client's request timeout (three
 * liveness TTLs), never a hang. Then the wirings that differ: none (no
 * scope), and a session resumed on its own transport. The cases of a group
 * run at once (each with its own proxy and client; a killed origin is its
 * case's own).
 */
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { skipReason, useCluster } from "./cluster.js";
import { ServerProcess } from "./mcpHttp.js";
import { assertStoredOnce, assertWhole, cutCall, cuts, FAST, SLOW } from "./resumeCall.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/resumeServer.ts", import.meta.url));
const NAMESPACE = "ts-resume";

describe("SDK 1.32: a resumption on another replica follows its origin", { skip: skipReason }, () => {
  const fx = useCluster();
  const started: ServerProcess[] = [];
  const start = async (...flags: string[]) => {
    const s = await ServerProcess.start(FIXTURE, [fx.cluster.endpoints.join(","), NAMESPACE, ...flags]);
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

  describe("the origin alive", { concurrency: true }, () => {
    for (const tool of [FAST, SLOW]) {
      for (const k of cuts(tool)) {
        test(`${tool.name}, cut after ${k} events: every event once, in order, the result once`, async () => {
          assertWhole(await cutCall(tool, k, false, a, b), tool);
        });
      }
    }
  });

  describe("the origin killed at the cut", { concurrency: true }, () => {
    for (const tool of [FAST, SLOW]) {
      for (const k of cuts(tool)) {
        test(`${tool.name}, cut after ${k} events: every stored event once, then the end`, async () => {
          const got = await cutCall(tool, k, true, await start(), b);
          // The slow tool's next event was more than a second away when its replica died.
          await assertStoredOnce(got, fx.client({ namespace: NAMESPACE }), tool, tool === SLOW);
        });
      }
    }
  });

  describe("other wirings", { concurrency: true }, () => {
    test("without the wrapper a resumption still follows (a slow tool, cut in the middle)", async () => {
      const [ua, ub] = await Promise.all([start("--unscoped"), start("--unscoped")]);
      assertWhole(await cutCall(SLOW, SLOW.count / 2, false, ua, ub), SLOW);
    });

    test("a session resumed on its own transport: the SDK forwards the rest, nothing goes twice", async () => {
      const s = await start("--stateful");
      assertWhole(await cutCall(SLOW, SLOW.count / 2, false, s, s), SLOW);
    });
  });
});
