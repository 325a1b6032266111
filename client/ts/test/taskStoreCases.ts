/**
 * What an MCP SDK `TaskStore` and `TaskMessageQueue` must do: the cases of
 * the SDK's tests of its InMemoryTaskStore and InMemoryTaskMessageQueue
 * (typescript-sdk packages/core/test/experimental/in-memory.test.ts and
 * inMemory.test.ts), written anew, with real time instead of fake timers
 * (a cluster's clock cannot be faked), run against the SDK's in-memory
 * stores and against the cluster's.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type {
  QueuedMessage,
  TaskMessageQueue,
  TaskStore,
} from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import type { Request } from "@modelcontextprotocol/sdk/types.js";

const call: Request = { method: "tools/call", params: {} };
const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });

/** A fresh store (and its cleanup) per case. */
export type MakeStore = () => { store: TaskStore; cleanup?: () => void };

function withStore(make: MakeStore, body: (store: TaskStore) => Promise<void>): (t: test.TestContext) => Promise<void> {
  return async (t) => {
    const { store, cleanup } = make();
    if (cleanup) t.after(cleanup);
    await body(store);
  };
}

function createCases(make: MakeStore): void {
  test(
    "creates a working task with its ttl, poll interval and creation time",
    withStore(make, async (store) => {
      const task = await store.createTask({ ttl: 60_000 }, 123, { method: "tools/call", params: { name: "t" } });
      assert.equal(typeof task.taskId, "string");
      assert.ok(task.taskId.length > 0);
      assert.equal(task.status, "working");
      assert.equal(task.ttl, 60_000);
      assert.equal(task.pollInterval, 1_000);
      assert.ok(new Date(task.createdAt).getTime() > 0);
    }),
  );

  test(
    "a task without ttl has ttl null; ids are unique; a missing task is null",
    withStore(make, async (store) => {
      const a = await store.createTask({}, 456, call);
      const b = await store.createTask({}, 457, call);
      assert.equal(a.ttl, null);
      assert.notEqual(a.taskId, b.taskId);
      assert.equal(await store.getTask("non-existent"), null);
      await store.updateTaskStatus(a.taskId, "working");
      assert.equal((await store.getTask(a.taskId))?.status, "working");
    }),
  );
}

function statusCases(make: MakeStore): void {
  const transitions: [string[], string][] = [
    [["input_required"], "input_required"],
    [["completed"], "completed"],
    [["failed"], "failed"],
    [["cancelled"], "cancelled"],
    [["input_required", "working"], "working"],
    [["input_required", "completed"], "completed"],
    [["input_required", "failed"], "failed"],
    [["input_required", "cancelled"], "cancelled"],
  ];
  test(
    "every allowed status transition, and the failure message",
    withStore(make, async (store) => {
      for (const [steps, last] of transitions) {
        const { taskId } = await store.createTask({}, 222, call);
        for (const s of steps)
          await store.updateTaskStatus(taskId, s as "working", s === "failed" ? "went wrong" : undefined);
        const task = await store.getTask(taskId);
        assert.equal(task?.status, last, steps.join(" -> "));
        if (last === "failed") assert.equal(task?.statusMessage, "went wrong");
      }
    }),
  );

  test(
    "a terminal status is final; an unknown task is not found",
    withStore(make, async (store) => {
      for (const terminal of ["completed", "failed", "cancelled"] as const) {
        const { taskId } = await store.createTask({}, 1, call);
        await store.updateTaskStatus(taskId, terminal);
        for (const s of ["working", "input_required", "completed", "failed", "cancelled"] as const) {
          if (s !== terminal) await assert.rejects(store.updateTaskStatus(taskId, s), /Cannot update task/);
        }
      }
      await assert.rejects(store.updateTaskStatus("non-existent", "working"), /Task with ID non-existent not found/);
    }),
  );
}

function resultCases(make: MakeStore): void {
  test(
    "a result is stored once, with its status, from working or input_required",
    withStore(make, async (store) => {
      const a = await store.createTask({ ttl: 60_000 }, 333, call);
      await store.storeTaskResult(a.taskId, "completed", text("Success!"));
      assert.equal((await store.getTask(a.taskId))?.status, "completed");
      assert.deepEqual(await store.getTaskResult(a.taskId), text("Success!"));
      await assert.rejects(store.storeTaskResult(a.taskId, "completed", text("again")), /Cannot store result for task/);
      const b = await store.createTask({}, 334, call);
      await store.storeTaskResult(b.taskId, "failed", { ...text("Error details"), isError: true });
      assert.equal((await store.getTask(b.taskId))?.status, "failed");
      assert.deepEqual(await store.getTaskResult(b.taskId), { ...text("Error details"), isError: true });
      await assert.rejects(store.storeTaskResult(b.taskId, "failed", text("again")), /Cannot store result for task/);
      const c = await store.createTask({}, 335, call);
      await store.updateTaskStatus(c.taskId, "cancelled");
      await assert.rejects(store.storeTaskResult(c.taskId, "completed", text("late")), /Cannot store result for task/);
      const d = await store.createTask({}, 336, call);
      await store.updateTaskStatus(d.taskId, "input_required");
      await store.storeTaskResult(d.taskId, "completed", text("ok"));
      assert.equal((await store.getTask(d.taskId))?.status, "completed");
    }),
  );

  test(
    "results of unknown tasks, and of tasks without one, are refused",
    withStore(make, async (store) => {
      await assert.rejects(
        store.storeTaskResult("non-existent", "completed", {}),
        /Task with ID non-existent not found/,
      );
      await assert.rejects(store.getTaskResult("non-existent"), /Task with ID non-existent not found/);
      const { taskId } = await store.createTask({}, 444, call);
      await assert.rejects(store.getTaskResult(taskId), new RegExp(`Task ${taskId} has no result stored`));
    }),
  );
}

/** TTLs in real time: 1.5 s, with half a second of margin either side of every expiry. */
function ttlCases(make: MakeStore): void {
  const TTL = 1_500;
  test(
    "a task expires its ttl after creation, whatever its status; one without ttl stays",
    withStore(make, async (store) => {
      const working = await store.createTask({ ttl: TTL }, 666, call);
      const done = await store.createTask({ ttl: TTL }, 667, call);
      const failed = await store.createTask({ ttl: TTL }, 668, call);
      const forever = await store.createTask({}, 669, call);
      assert.equal(working.ttl, TTL);
      assert.ok(await store.getTask(working.taskId));
      await sleep(TTL + 600);
      for (const t of [working, done, failed]) assert.equal(await store.getTask(t.taskId), null);
      assert.equal((await store.getTask(forever.taskId))?.taskId, forever.taskId);
    }),
  );

  test(
    "storing the result, or a terminal status, starts the ttl again",
    withStore(make, async (store) => {
      const a = await store.createTask({ ttl: TTL }, 777, call);
      const b = await store.createTask({ ttl: TTL }, 778, call);
      await sleep(800);
      await store.storeTaskResult(a.taskId, "completed", text("Done"));
      await store.updateTaskStatus(b.taskId, "completed");
      await sleep(1_100);
      // 1.9 s after creation, 1.1 s after the reset.
      assert.ok(await store.getTask(a.taskId), "the result restarted the ttl");
      assert.ok(await store.getTask(b.taskId), "the terminal status restarted the ttl");
      await sleep(1_000);
      assert.equal(await store.getTask(a.taskId), null);
      assert.equal(await store.getTask(b.taskId), null);
    }),
  );
}

function listCases(make: MakeStore): void {
  test(
    "lists pages of 10 with a cursor; a bad cursor is refused",
    withStore(make, async (store) => {
      const empty = await store.listTasks();
      assert.deepEqual(empty.tasks, []);
      assert.equal(empty.nextCursor, undefined);
      for (let i = 1; i <= 15; i++) await store.createTask({}, i, call);
      const page1 = await store.listTasks();
      assert.equal(page1.tasks.length, 10);
      assert.ok(page1.nextCursor);
      const page2 = await store.listTasks(page1.nextCursor);
      assert.equal(page2.tasks.length, 5);
      assert.equal(page2.nextCursor, undefined);
      const all = [...page1.tasks, ...page2.tasks].map((t) => t.taskId);
      assert.equal(new Set(all).size, 15);
      await assert.rejects(store.listTasks("non-existent-cursor"), /Invalid cursor: non-existent-cursor/);
    }),
  );

  test(
    "a listing continues after its cursor",
    withStore(make, async (store) => {
      for (let i = 1; i <= 5; i++) await store.createTask({}, i, call);
      const { tasks } = await store.listTasks();
      const rest = await store.listTasks(tasks[2]?.taskId);
      assert.deepEqual(
        rest.tasks.map((t) => t.taskId),
        tasks.slice(3).map((t) => t.taskId),
      );
    }),
  );
}

function sessionCases(make: MakeStore): void {
  const req: Request = { method: "tools/call", params: { name: "demo" } };
  test(
    "another session neither sees, lists, updates nor reads a session's task",
    withStore(make, async (store) => {
      const task = await store.createTask({}, 1, req, "session-a");
      await store.createTask({}, 2, req, "session-a");
      assert.deepEqual((await store.listTasks(undefined, "session-b")).tasks, []);
      assert.equal(await store.getTask(task.taskId, "session-b"), null);
      await assert.rejects(store.updateTaskStatus(task.taskId, "cancelled", undefined, "session-b"), /not found/);
      await assert.rejects(store.storeTaskResult(task.taskId, "completed", { content: [] }, "session-b"), /not found/);
      await store.storeTaskResult(task.taskId, "completed", text("secret"), "session-a");
      await assert.rejects(store.getTaskResult(task.taskId, "session-b"), /not found/);
      await assert.rejects(store.listTasks(task.taskId, "session-b"), /Invalid cursor/);
      assert.equal((await store.getTask(task.taskId, "session-a"))?.taskId, task.taskId);
    }),
  );

  test(
    "no session sees all; a task without session is everyone's",
    withStore(make, async (store) => {
      const owned = await store.createTask({}, 1, req, "session-a");
      const shared = await store.createTask({}, 2, req);
      await store.createTask({}, 3, req, "session-b");
      assert.ok(await store.getTask(owned.taskId));
      assert.ok(await store.getTask(shared.taskId, "session-b"));
      assert.equal((await store.listTasks(undefined, "session-a")).tasks.length, 2);
      assert.equal((await store.listTasks(undefined, "session-b")).tasks.length, 2);
      assert.equal((await store.listTasks()).tasks.length, 3);
    }),
  );

  test(
    "pages within a session",
    withStore(make, async (store) => {
      for (let i = 1; i <= 15; i++) await store.createTask({}, i, req, "session-a");
      for (let i = 16; i <= 20; i++) await store.createTask({}, i, req, "session-b");
      const page1 = await store.listTasks(undefined, "session-a");
      assert.equal(page1.tasks.length, 10);
      const page2 = await store.listTasks(page1.nextCursor, "session-a");
      assert.equal(page2.tasks.length, 5);
      assert.equal(page2.nextCursor, undefined);
      const b = await store.listTasks(undefined, "session-b");
      assert.equal(b.tasks.length, 5);
      assert.equal(b.nextCursor, undefined);
    }),
  );
}

export function taskStoreCases(name: string, make: MakeStore): void {
  describe(`${name} (the SDK's InMemoryTaskStore cases)`, () => {
    createCases(make);
    statusCases(make);
    resultCases(make);
    ttlCases(make);
    listCases(make);
    sessionCases(make);
  });
}

const request = (id: number, method = "tools/call"): QueuedMessage => ({
  type: "request",
  message: { jsonrpc: "2.0", id, method, params: {} },
  timestamp: 1_000,
});
const notification: QueuedMessage = {
  type: "notification",
  message: { jsonrpc: "2.0", method: "notifications/progress", params: {} },
  timestamp: 2_000,
};
const response = (id: number): QueuedMessage => ({
  type: "response",
  message: { jsonrpc: "2.0", id, result: {} },
  timestamp: 3_000,
});
const error: QueuedMessage = {
  type: "error",
  message: { jsonrpc: "2.0", id: 1, error: { code: -32600, message: "Invalid Request" } },
  timestamp: 4_000,
};

export function taskQueueCases(name: string, make: () => TaskMessageQueue): void {
  describe(`${name} (the SDK's InMemoryTaskMessageQueue cases)`, () => {
    test("FIFO over every kind of message; an empty queue gives undefined", async () => {
      const q = make();
      assert.equal(await q.dequeue("task-empty"), undefined);
      for (const m of [request(1), notification, response(1), error]) await q.enqueue("task-fifo", m);
      for (const m of [request(1), notification, response(1), error]) assert.deepEqual(await q.dequeue("task-fifo"), m);
      assert.equal(await q.dequeue("task-fifo"), undefined);
    });

    test("dequeueAll takes everything in order and empties the queue", async () => {
      const q = make();
      assert.deepEqual(await q.dequeueAll("non-existent"), []);
      for (const m of [request(1), response(1), notification]) await q.enqueue("task-all", m);
      assert.deepEqual(await q.dequeueAll("task-all"), [request(1), response(1), notification]);
      assert.equal(await q.dequeue("task-all"), undefined);
    });

    test("maxSize refuses the message that would exceed it", async () => {
      const q = make();
      await q.enqueue("task-limit", request(1), undefined, 2);
      await q.enqueue("task-limit", request(2), undefined, 2);
      await assert.rejects(q.enqueue("task-limit", request(3), undefined, 2), /Task message queue overflow/);
      await q.enqueue("task-ok", response(1), undefined, 5);
      await q.dequeue("task-limit");
      await q.enqueue("task-limit", request(3), undefined, 2);
    });

    test("tasks' queues are apart", async () => {
      const q = make();
      await q.enqueue("task-a", request(1, "test1"));
      await q.enqueue("task-b", response(2));
      assert.deepEqual(await q.dequeue("task-a"), request(1, "test1"));
      assert.deepEqual(await q.dequeue("task-b"), response(2));
      assert.equal(await q.dequeue("task-a"), undefined);
      assert.equal(await q.dequeue("task-b"), undefined);
    });
  });
}
