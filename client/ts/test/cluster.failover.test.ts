/** Leader following and failover: retried writes apply once, a killed leader is replaced, no quorum fails closed. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { transportOf } from "../src/cluster.js";
import { StateService } from "../src/gen/handlestore/v1/state.js";
import { Client, DeadlineExceededError, newHandleId, UnavailableError } from "../src/index.js";
import { Cluster, skipReason, useCluster } from "./cluster.js";

describe("failover", { skip: skipReason }, () => {
  const fx = useCluster();

  test("the same write id twice: the second call gets the first answer, and the write happened once", async () => {
    const client = fx.client({ namespace: "ts-once" });
    const transport = transportOf(client);
    const ticket = transport.writeTicket();
    const request = {
      namespace: client.namespace,
      key: "once",
      value: { kind: { $case: "json" as const, value: "1" } },
      ttl: undefined,
      // Create-only: applied twice, it would conflict.
      expectedRevision: 0n,
      writeId: ticket.id,
    };
    const first = await transport.call(StateService.store, request);
    const again = await transport.call(StateService.store, request);
    ticket.release();
    assert.equal(again.revision, first.revision);
    assert.equal((await client.stateTool().retrieve("once"))?.modRevision, Number(first.revision));
  });

  test("writes sent to a follower move to the leader it names", async () => {
    const leader = await fx.cluster.waitLeader();
    const addr = fx.cluster.node(leader).addr;
    const others = fx.cluster.endpoints.filter((e) => e !== addr);
    const client = fx.track(new Client({ endpoints: [...others, addr], namespace: "ts-move" }));
    await client.stateTool().store("k", 1); // sent to a follower, forwarded
    await client.stateTool().store("k", 2);
    assert.equal(client.endpoints[client.preferred], addr, "the follower named the leader");
  });

  test("an unreachable endpoint is skipped", async () => {
    const client = fx.track(new Client({ endpoints: ["127.0.0.1:1", ...fx.cluster.endpoints], namespace: "ts-skip" }));
    await client.stateTool().store("k", "v");
    assert.equal(await client.stateTool().get("k"), "v");
  });

  test("writes through a leader kill apply exactly once, and a new leader takes over", async () => {
    const client = fx.client({ namespace: "ts-failover", deadline: 30_000, attemptTimeout: 1_000 });
    const t = client.stateTool();
    const jobs = client.handleStore<{ n: number }>("jobs");
    await t.batchStore(Array.from({ length: 60 }, (_, i) => ({ key: `old/${String(i).padStart(3, "0")}`, value: i })));
    const leader = await fx.cluster.waitLeader();
    const key = (prefix: string, i: number) => `${prefix}/${String(i).padStart(3, "0")}`;
    const done: number[] = [];
    let killedAt = -1;
    const writes = async () => {
      const minted: string[] = [];
      for (let i = 0; i < 60; i++) {
        await Promise.all([
          // Create-only: a second application would fail with a conflict.
          t.store(key("new", i), i, { expectedRevision: 0 }),
          // A second application would say the key did not exist.
          t.delete(key("old", i)).then((d) => assert.equal(d.count, 1, `${key("old", i)} deleted once`)),
        ]);
        // A second application would say the id exists.
        const id = newHandleId("job");
        await jobs.mintWithId(id, { n: i });
        minted.push(id);
        done.push(i);
      }
      return minted;
    };
    const killer = async () => {
      while (done.length < 20) await sleep(1);
      await fx.cluster.kill(leader);
      killedAt = done.length;
    };
    const [minted] = await Promise.all([writes(), killer()]);
    assert.ok(killedAt < 30, `the leader died with ${killedAt} of 60 writes acknowledged`);
    const fresh: string[] = [];
    for await (const e of t.scan("new/")) fresh.push(e.key);
    assert.deepEqual(
      fresh,
      Array.from({ length: 60 }, (_, i) => key("new", i)),
    );
    const old: string[] = [];
    for await (const e of t.scan("old/")) old.push(e.key);
    assert.deepEqual(old, []);
    assert.equal(await jobs.len(), 60);
    const values = await Promise.all(minted.map((id) => jobs.get(id)));
    assert.deepEqual(
      values.map((v) => v?.n),
      Array.from({ length: 60 }, (_, i) => i),
    );
    const now = await fx.cluster.waitLeader();
    assert.notEqual(now, leader, "a new leader took over");
    await t.store("after", 1);
    assert.equal(client.endpoints[client.preferred], fx.cluster.node(now).addr, "the client follows the new leader");
  });
});

describe("no quorum", { skip: skipReason }, () => {
  test("writes fail fast and closed, and the cluster serves again once a majority is back", async () => {
    const cluster = await Cluster.start();
    const client = cluster.client({ namespace: "ts-quorum", deadline: 2_000, attemptTimeout: 500 });
    try {
      const t = client.stateTool();
      await t.store("before", 1);
      await cluster.kill(1);
      await cluster.kill(2);
      const started = performance.now();
      await assert.rejects(
        t.store("during", 1),
        (e: unknown) => e instanceof UnavailableError || e instanceof DeadlineExceededError,
      );
      assert.ok(performance.now() - started < 5_000, "bounded by the deadline");
      cluster.spawn(1);
      cluster.spawn(2);
      await cluster.waitLeader();
      assert.equal(await client.withDeadline(30_000).stateTool().get("before"), 1);
    } finally {
      client.close();
      await cluster.stop();
    }
  });
});
