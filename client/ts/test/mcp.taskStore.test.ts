/**
 * ClusterTaskStore and ClusterTaskMessageQueue: the SDK's in-memory stores'
 * cases (run against those stores too), tasks and queues shared by two
 * clients (replicas), bad input refused before any call, and a task created
 * through one SDK server process, listed, polled, finished and its result
 * fetched through another while the first is down, and again through the
 * first once it is back.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  InMemoryTaskMessageQueue,
  InMemoryTaskStore,
} from "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js";
import { CallToolResultSchema, CreateTaskResultSchema, type Request } from "@modelcontextprotocol/sdk/types.js";
import { Client, DeadlineExceededError, InvalidArgumentError, NotFoundError } from "../src/index.js";
import { ClusterTaskMessageQueue, ClusterTaskStore } from "../src/mcp/index.js";
import { skipReason, useCluster } from "./cluster.js";
import { Front, ServerProcess } from "./mcpHttp.js";
import { taskQueueCases, taskStoreCases } from "./taskStoreCases.js";

const FIXTURE = fileURLToPath(new URL("./fixtures/taskServer.ts", import.meta.url));
const call: Request = { method: "tools/call", params: { name: "job" } };

describe("the SDK's in-memory stores", () => {
  taskStoreCases("InMemoryTaskStore", () => {
    const store = new InMemoryTaskStore();
    return { store, cleanup: () => store.cleanup() };
  });
  taskQueueCases("InMemoryTaskMessageQueue", () => new InMemoryTaskMessageQueue());
});

describe("malformed task ids", () => {
  test("find nothing, and are refused, before any call", async () => {
    // Nothing listens there: a call would end in a deadline error.
    const dead = new Client({ endpoints: ["127.0.0.1:1"], deadline: 300 });
    const store = new ClusterTaskStore(dead);
    for (const id of ["non-existent", "", "a/b", "ABCDEFGHIJKLMNOPQRSTUVWXY", "../records/x"]) {
      assert.equal(await store.getTask(id), null, id);
      await assert.rejects(store.updateTaskStatus(id, "cancelled"), NotFoundError);
      await assert.rejects(store.getTaskResult(id), NotFoundError);
      await assert.rejects(store.listTasks(id), InvalidArgumentError);
    }
    await assert.rejects(store.getTask("ABCDEFGHIJKLMNOPQRSTUVWXYA"), DeadlineExceededError);
    dead.close();
  });
});

describe("ClusterTaskStore on a cluster", { skip: skipReason }, () => {
  const fx = useCluster();
  let n = 0;
  const client = (namespace = `ts-tasks-${++n}`) => fx.client({ namespace });

  taskStoreCases("ClusterTaskStore", () => ({ store: new ClusterTaskStore(client()) }));
  taskQueueCases("ClusterTaskMessageQueue", () => new ClusterTaskMessageQueue(client()));

  test("a task made through one replica is listed, polled, updated and read through another", async () => {
    const ns = `ts-tasks-${++n}`;
    const [a, b] = [new ClusterTaskStore(client(ns)), new ClusterTaskStore(client(ns))];
    const task = await a.createTask({ ttl: 60_000 }, 7, call, "session-a");
    assert.deepEqual((await b.listTasks(undefined, "session-a")).tasks, [task]);
    assert.deepEqual((await b.listTasks(undefined, "session-b")).tasks, []);
    assert.equal(await b.getTask(task.taskId, "session-b"), null);
    await b.updateTaskStatus(task.taskId, "input_required", "need a name", "session-a");
    assert.equal((await a.getTask(task.taskId, "session-a"))?.statusMessage, "need a name");
    await a.storeTaskResult(task.taskId, "completed", { content: [{ type: "text", text: "done" }] }, "session-a");
    await assert.rejects(b.updateTaskStatus(task.taskId, "cancelled", undefined, "session-a"), /terminal status/);
    assert.deepEqual(await b.getTaskResult(task.taskId, "session-a"), { content: [{ type: "text", text: "done" }] });
  });

  test("replicas finishing one task at once: exactly one terminal status wins", async () => {
    const ns = `ts-tasks-${++n}`;
    const [a, b] = [new ClusterTaskStore(client(ns)), new ClusterTaskStore(client(ns))];
    for (let round = 0; round < 5; round++) {
      const { taskId } = await a.createTask({}, round, call);
      const outcomes = await Promise.allSettled([
        a.storeTaskResult(taskId, "completed", { content: [] }),
        b.updateTaskStatus(taskId, "cancelled"),
      ]);
      assert.equal(outcomes.filter((o) => o.status === "fulfilled").length, 1, JSON.stringify(outcomes));
      const status = (await b.getTask(taskId))?.status;
      assert.equal(status, outcomes[0].status === "fulfilled" ? "completed" : "cancelled");
    }
  });

  test("two replicas take each queued message exactly once", async () => {
    const ns = `ts-tasks-${++n}`;
    const [a, b] = [new ClusterTaskMessageQueue(client(ns)), new ClusterTaskMessageQueue(client(ns))];
    const total = 30;
    await Promise.all(
      Array.from({ length: total }, (_, i) =>
        (i % 2 ? a : b).enqueue("task-x", {
          type: "notification",
          message: { jsonrpc: "2.0", method: "notifications/progress", params: { progress: i } },
          timestamp: i,
        }),
      ),
    );
    const taken: number[] = [];
    const drain = async (q: ClusterTaskMessageQueue) => {
      for (let m = await q.dequeue("task-x"); m; m = await q.dequeue("task-x")) {
        taken.push((m.message as unknown as { params: { progress: number } }).params.progress);
      }
    };
    await Promise.all([drain(a), drain(b), drain(a), drain(b)]);
    assert.deepEqual(
      [...taken].sort((x, y) => x - y),
      Array.from({ length: total }, (_, i) => i),
    );
  });

  test("the node's refusals surface with their reason", async () => {
    const store = new ClusterTaskStore(client());
    // Eleven years: more than the node keeps anything.
    await assert.rejects(store.createTask({ ttl: 11 * 365 * 24 * 3_600_000 }, 1, call), (e: unknown) => {
      assert.ok(e instanceof InvalidArgumentError, String(e));
      assert.match(e.message, /ttl/i);
      return true;
    });
  });

  test("SDK servers: a task outlives the replica that made it", async () => {
    const args = [fx.cluster.endpoints.join(","), `ts-tasks-${++n}`];
    let a = await ServerProcess.start(FIXTURE, args);
    const b = await ServerProcess.start(FIXTURE, args);
    const front = await new Front(a.port).start();
    const mcp = new McpClient({ name: "task-test", version: "0.1.0" });
    const moveTo = async (s: ServerProcess) => {
      front.target = s.port;
      front.cut();
      // Let the client see its pooled connections closed.
      await sleep(200);
    };
    try {
      await mcp.connect(new StreamableHTTPClientTransport(new URL(front.url)));
      const params = { name: "job", arguments: {}, task: { ttl: 120_000 } };
      const { task } = await mcp.request({ method: "tools/call", params }, CreateTaskResultSchema);
      assert.equal(task.status, "working");

      await moveTo(b);
      await a.stop();
      assert.equal((await mcp.experimental.tasks.getTask(task.taskId)).status, "working");
      const listed = await mcp.experimental.tasks.listTasks();
      assert.deepEqual(
        listed.tasks.map((t) => t.taskId),
        [task.taskId],
      );
      await mcp.callTool({ name: "finish", arguments: { taskId: task.taskId, text: "all done" } });

      a = await ServerProcess.start(FIXTURE, args);
      await moveTo(a);
      const polled = await mcp.experimental.tasks.getTask(task.taskId);
      assert.equal(polled.status, "completed");
      assert.equal(polled.statusMessage, "half way");
      const result = await mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      assert.deepEqual(result.content, [{ type: "text", text: "all done" }]);
    } finally {
      await mcp.close();
      await front.stop();
      await a.stop();
      await b.stop();
    }
  });
});
