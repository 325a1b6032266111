/**
 * The MCP TypeScript SDK's experimental `TaskMessageQueue` on the cluster:
 * the messages a task sends its client through `tasks/result` (elicitations,
 * sampling requests, notifications), queued on whichever replica runs the
 * task and taken, each exactly once, by whichever replica serves the
 * client's `tasks/result`.
 *
 * One FIFO per task id, in the client's namespace under
 * `mcp/tasks/queues/<digest of the task id>/`: `tail` holds the last
 * sequence number, `m/<seq>` one message. An enqueue moves the tail by
 * compare-and-set and writes the message in one atomic batch (the size
 * check, read before it, only overestimates: takers only shrink the
 * queue); a dequeue deletes the first message by compare-and-set, so two
 * replicas never take the same one. As the SDK's in-memory queue, the
 * sessionId is not part of the queue's name (task ids are unique; the task
 * store decides who sees a task). Keys expire `ttl` after the last enqueue.
 */
import type { QueuedMessage, TaskMessageQueue } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import type { Client } from "../cluster.js";
import { NotFoundError, ResourceExhaustedError, RevisionMismatchError } from "../gen/reasons.js";
import type { StateEntry, StateTool } from "../state.js";
import { digestName, padded } from "./keys.js";
import { TASKS_PREFIX } from "./taskStore.js";

export interface ClusterTaskMessageQueueOptions {
  /** How long a queue's messages are kept after its last enqueue, in ms (default an hour). */
  readonly ttl?: number | undefined;
  /** The key prefix (several servers in one namespace). */
  readonly prefix?: string | undefined;
}

/** Per-task message queues shared by every replica: pass it as `taskMessageQueue` in the server's options. */
export class ClusterTaskMessageQueue implements TaskMessageQueue {
  private readonly state: StateTool;
  private readonly prefix: string;
  private readonly ttl: number;

  constructor(client: Client, options: ClusterTaskMessageQueueOptions = {}) {
    this.state = client.stateTool();
    this.prefix = `${options.prefix ?? TASKS_PREFIX}/queues/`;
    this.ttl = Math.max(1_000, options.ttl ?? 3_600_000);
  }

  private queue(taskId: string): { tail: string; messages: string } {
    const root = `${this.prefix}${digestName(taskId)}/`;
    return { tail: `${root}tail`, messages: `${root}m/` };
  }

  /** Appends `message`; throws ResourceExhaustedError if the queue already holds `maxSize`. */
  async enqueue(taskId: string, message: QueuedMessage, _sessionId?: string, maxSize?: number): Promise<void> {
    const q = this.queue(taskId);
    for (;;) {
      const tail = await this.state.retrieve(q.tail);
      if (maxSize !== undefined) await this.checkRoom(q.messages, maxSize);
      const seq = ((tail?.value as { seq?: number } | undefined)?.seq ?? 0) + 1;
      try {
        await this.state.batchStore([
          { key: q.tail, value: { seq }, ttl: this.ttl, expectedRevision: tail?.modRevision ?? 0 },
          { key: q.messages + padded(seq, 20), value: message, ttl: this.ttl },
        ]);
        return;
      } catch (e) {
        if (!(e instanceof RevisionMismatchError)) throw e;
      }
    }
  }

  private async checkRoom(prefix: string, maxSize: number): Promise<void> {
    const overflow = (size: number) =>
      new ResourceExhaustedError(`Task message queue overflow: queue size (${size}) exceeds maximum (${maxSize})`);
    let size = 0;
    if (size >= maxSize) throw overflow(size);
    for await (const _ of this.state.scan(prefix, { limit: Math.min(1_000, maxSize + 1) })) {
      if (++size >= maxSize) throw overflow(size);
    }
  }

  /** Takes the first message, or undefined if the queue is empty. */
  async dequeue(taskId: string, _sessionId?: string): Promise<QueuedMessage | undefined> {
    const prefix = this.queue(taskId).messages;
    for (;;) {
      const [first] = (await this.state.list(prefix, { limit: 1, withValues: true })).entries;
      if (first === undefined) return undefined;
      if (await this.take(first)) return first.value as QueuedMessage;
    }
  }

  /** Takes every message, in order. */
  async dequeueAll(taskId: string, _sessionId?: string): Promise<QueuedMessage[]> {
    const taken: QueuedMessage[] = [];
    for await (const entry of this.state.scan(this.queue(taskId).messages, { withValues: true })) {
      if (await this.take(entry)) taken.push(entry.value as QueuedMessage);
    }
    return taken;
  }

  /** Deletes the message if nobody took it first; whether this call took it. */
  private async take(entry: StateEntry): Promise<boolean> {
    try {
      return (await this.state.delete(entry.key, { expectedRevision: entry.modRevision })).count === 1;
    } catch (e) {
      // Taken first by another replica (changed, or already deleted).
      if (e instanceof RevisionMismatchError || e instanceof NotFoundError) return false;
      throw e;
    }
  }
}
