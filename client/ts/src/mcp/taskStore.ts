/**
 * The MCP TypeScript SDK's experimental `TaskStore` on the cluster: a task
 * created on one replica is listed, polled, updated and its result fetched
 * on any other, and outlives every replica (the SDK's InMemoryTaskStore
 * lives and dies with one process).
 *
 * Behaviour is the InMemoryTaskStore's, rule for rule: ids drawn by the
 * store, status `working` and poll interval 1000 ms by default, terminal
 * statuses (completed, failed, cancelled) final, a result stored once, the
 * task's TTL counted from its creation and again from the moment it turns
 * terminal or its result is stored (none: it never expires), pages of 10
 * with the last task id as the cursor, and the same error messages. A task
 * created with a sessionId belongs to that session: calls that pass another
 * sessionId find nothing (and list nothing of it); calls that pass none are
 * not restricted, and tasks created without one are everyone's.
 *
 * Each task is one state key in the client's namespace,
 * `mcp/tasks/records/<task id>`, holding the task, its request, the session
 * and the result; every change is a compare-and-set on it, so replicas
 * changing one task at once never undo each other's terminal status. (No
 * Rust or Python twin exists: their SDKs have no task store seam yet.)
 */
import type { CreateTaskOptions, TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import type { Request, RequestId, Result, Task } from "@modelcontextprotocol/sdk/types.js";
import type { Client } from "../cluster.js";
import { FailedPreconditionError, InvalidArgumentError, NotFoundError, RevisionMismatchError } from "../gen/reasons.js";
import { checkHandleId, newHandleId } from "../ids.js";
import type { StateEntry, StateTool } from "../state.js";
import { pageTokenAfter } from "./keys.js";

export const TASKS_PREFIX = "mcp/tasks";
/** Tasks per page of `listTasks`, as the SDK's in-memory store. */
export const TASK_PAGE = 10;
const DEFAULT_POLL_INTERVAL = 1_000;
const SCAN_PAGE = 100;

type Status = Task["status"];

/** What one task's key holds. */
interface TaskRecord {
  task: Task;
  requestId: RequestId;
  request: Request;
  /** The session that created it; absent: everyone's. */
  sessionId?: string;
  result?: Result;
}

export function isTerminal(status: Status): boolean {
  return status === "completed" || status === "failed" || status === "cancelled";
}

function notFound(taskId: string): NotFoundError {
  return new NotFoundError(`Task with ID ${taskId} not found`);
}

function visible(record: TaskRecord, sessionId: string | undefined): boolean {
  return sessionId === undefined || record.sessionId === undefined || record.sessionId === sessionId;
}

function isRecord(v: unknown): v is TaskRecord {
  const task = (v as TaskRecord | null)?.task;
  return typeof task?.taskId === "string" && typeof task.status === "string";
}

export interface ClusterTaskStoreOptions {
  /** The key prefix (several servers in one namespace). */
  readonly prefix?: string | undefined;
}

/** Tasks shared by every replica: pass it as `taskStore` in the server's options. */
export class ClusterTaskStore implements TaskStore {
  private readonly state: StateTool;
  private readonly prefix: string;

  constructor(client: Client, options: ClusterTaskStoreOptions = {}) {
    this.state = client.stateTool();
    this.prefix = `${options.prefix ?? TASKS_PREFIX}/records/`;
  }

  private key(taskId: string): string {
    return this.prefix + taskId;
  }

  /** The TTL of a write that starts the task's clock: its own, or never. */
  private static ttl(task: Task): number {
    return task.ttl ? task.ttl : -1;
  }

  async createTask(taskParams: CreateTaskOptions, requestId: RequestId, request: Request, sessionId?: string) {
    const now = new Date().toISOString();
    const task: Task = {
      taskId: newHandleId(),
      status: "working",
      ttl: taskParams.ttl ?? null,
      createdAt: now,
      lastUpdatedAt: now,
      pollInterval: taskParams.pollInterval ?? DEFAULT_POLL_INTERVAL,
    };
    const record: TaskRecord = { task, requestId, request: { method: request.method, params: request.params } };
    if (sessionId !== undefined) record.sessionId = sessionId;
    try {
      await this.state.store(this.key(task.taskId), record, { ttl: ClusterTaskStore.ttl(task), expectedRevision: 0 });
    } catch (e) {
      if (e instanceof RevisionMismatchError)
        throw new FailedPreconditionError(`Task with ID ${task.taskId} already exists`);
      throw e;
    }
    return { ...task };
  }

  /** The record and its revision, if the task exists and `sessionId` may see it; a malformed id finds nothing without a call. */
  private async lookup(taskId: string, sessionId: string | undefined): Promise<[TaskRecord, number] | undefined> {
    if (checkHandleId(taskId) !== undefined) return undefined;
    const entry = await this.state.retrieve(this.key(taskId));
    if (!entry || !isRecord(entry.value) || !visible(entry.value, sessionId)) return undefined;
    return [entry.value, entry.modRevision];
  }

  async getTask(taskId: string, sessionId?: string): Promise<Task | null> {
    const found = await this.lookup(taskId, sessionId);
    return found ? { ...found[0].task } : null;
  }

  /**
   * Read, check, write back if nobody wrote in between (else again):
   * `change` throws to refuse, or returns whether the write restarts the
   * task's TTL (else the key keeps its expiry).
   */
  private async change(taskId: string, sessionId: string | undefined, change: (r: TaskRecord) => boolean) {
    for (;;) {
      const found = await this.lookup(taskId, sessionId);
      if (!found) throw notFound(taskId);
      const [record, revision] = found;
      const restart = change(record);
      record.task.lastUpdatedAt = new Date().toISOString();
      const ttl = restart ? ClusterTaskStore.ttl(record.task) : undefined;
      try {
        await this.state.store(this.key(taskId), record, { expectedRevision: revision, ttl, keepTtl: !restart });
        return;
      } catch (e) {
        if (!(e instanceof RevisionMismatchError || e instanceof NotFoundError)) throw e;
      }
    }
  }

  async storeTaskResult(taskId: string, status: "completed" | "failed", result: Result, sessionId?: string) {
    await this.change(taskId, sessionId, (record) => {
      if (isTerminal(record.task.status)) {
        throw new FailedPreconditionError(
          `Cannot store result for task ${taskId} in terminal status '${record.task.status}'. Task results can only be stored once.`,
        );
      }
      record.result = result;
      record.task.status = status;
      return true;
    });
  }

  async getTaskResult(taskId: string, sessionId?: string): Promise<Result> {
    const found = await this.lookup(taskId, sessionId);
    if (!found) throw notFound(taskId);
    if (!found[0].result) throw new NotFoundError(`Task ${taskId} has no result stored`);
    return found[0].result;
  }

  async updateTaskStatus(taskId: string, status: Status, statusMessage?: string, sessionId?: string) {
    await this.change(taskId, sessionId, (record) => {
      const from = record.task.status;
      if (isTerminal(from)) {
        throw new FailedPreconditionError(
          `Cannot update task ${taskId} from terminal status '${from}' to '${status}'. Terminal states (completed, failed, cancelled) cannot transition to other states.`,
        );
      }
      record.task.status = status;
      if (statusMessage) record.task.statusMessage = statusMessage;
      return isTerminal(status);
    });
  }

  /** A page of the tasks `sessionId` may see, in id order, after the task `cursor` (which must be one of them). */
  async listTasks(cursor?: string, sessionId?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    if (cursor !== undefined && !(await this.lookup(cursor, sessionId))) {
      throw new InvalidArgumentError(`Invalid cursor: ${cursor}`);
    }
    const tasks: Task[] = [];
    for await (const entry of this.visibleAfter(cursor, sessionId)) {
      if (tasks.length === TASK_PAGE) return { tasks, nextCursor: tasks[TASK_PAGE - 1]?.taskId as string };
      tasks.push({ ...(entry.value as TaskRecord).task });
    }
    return { tasks };
  }

  /** The task entries `sessionId` may see, in id order, after `cursor`. */
  private async *visibleAfter(cursor: string | undefined, sessionId: string | undefined): AsyncGenerator<StateEntry> {
    const pageToken = cursor === undefined ? undefined : pageTokenAfter(this.key(cursor));
    for await (const entry of this.state.scan(this.prefix, { withValues: true, pageToken, limit: SCAN_PAGE })) {
      if (isRecord(entry.value) && visible(entry.value, sessionId)) yield entry;
    }
  }
}
