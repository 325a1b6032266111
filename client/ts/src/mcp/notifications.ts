/**
 * A notification bus across replicas: a replica publishes that a resource
 * changed or a list changed, and every replica's subscribers hear it. The
 * MCP SDK sends `notifications/resources/updated` and the list-changed
 * notifications to the clients of the process that calls it only; here a
 * publish is a replicated write and each replica listens through watches
 * (which resume on another node by themselves), so a subscriber hears every
 * event committed after its `subscribe()` resolved, from any replica, once.
 *
 * Keys, in the client's namespace, as the Rust crate's ResourceBus and the
 * Python package's ClusterSubscriptionBus write them (so replicas in any of
 * the three languages hear each other): `mcp/resources/<digest of the URI>`
 * = `{"uri": ...}` for a resource update, `mcp/lists/{tools,prompts,resources}`
 * = `{"changed": ...}` for list changes, each kept an hour (the latest
 * publish of each). With `followStore`, every change to a handle store's
 * handles is also heard as an update of `<uriPrefix><handle id>`, with
 * nothing to publish (a cart's own write is its notification).
 *
 * `forwardNotifications(bus, server)` sends what the bus hears to an SDK
 * server's clients.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Client } from "../cluster.js";
import { CompactedError, InvalidArgumentError } from "../gen/reasons.js";
import type { StateTool } from "../state.js";
import type { Change, Watch, WatchTarget } from "../watch.js";
import { digestName } from "./keys.js";

export const RESOURCES_PREFIX = "mcp/resources";
export const LISTS_PREFIX = "mcp/lists";
/** How long a published event's key is kept (ms). */
const KEEP = 3_600_000;
const LISTS = ["tools", "prompts", "resources"] as const;
type ListName = (typeof LISTS)[number];

/** What the bus carries: the SDK's server change events (the v2 SDK's `ServerEvent`). */
export type ServerEvent = (
  | { kind: "tools_list_changed" }
  | { kind: "prompts_list_changed" }
  | { kind: "resources_list_changed" }
  | { kind: "resource_updated"; uri: string }
) & { params?: Record<string, unknown> | undefined };

export type Listener = (event: ServerEvent) => void;

export interface ClusterNotificationBusOptions {
  /** Also hear every change to this handle store's handles as an update of `<uriPrefix><id>`. */
  readonly followStore?: { readonly store: string; readonly uriPrefix: string } | undefined;
  /** Told of listener errors and of watches lost and resumed (default: console.warn). */
  readonly onError?: ((error: unknown) => void) | undefined;
}

/** One source of events: a watch target, and what a change on it means. */
interface Source {
  readonly target: WatchTarget;
  readonly keysOnly: boolean;
  readonly event: (change: Change) => ServerEvent | undefined;
}

function listName(event: ServerEvent): ListName | undefined {
  return LISTS.find((name) => event.kind === `${name}_list_changed`);
}

/** The event a published value is, if any. */
export function eventOf(value: unknown): ServerEvent | undefined {
  const v = value as { uri?: unknown; changed?: unknown; params?: Record<string, unknown> } | null;
  const params = v?.params && typeof v.params === "object" ? { params: v.params } : {};
  if (typeof v?.uri === "string") return { kind: "resource_updated", uri: v.uri, ...params };
  const name = LISTS.find((n) => n === v?.changed);
  return name ? ({ kind: `${name}_list_changed`, ...params } as ServerEvent) : undefined;
}

/** Events shared by every replica. */
export class ClusterNotificationBus {
  private readonly state: StateTool;
  private readonly listeners = new Set<Listener>();
  private readonly sources: Source[];
  private readonly onError: (error: unknown) => void;
  private started: Promise<void> | undefined;
  private watches: Watch[] = [];
  private closed = false;

  constructor(
    private readonly client: Client,
    options: ClusterNotificationBusOptions = {},
  ) {
    this.state = client.stateTool();
    this.onError = options.onError ?? ((e) => console.warn("handlestore notification bus:", e));
    const published = (change: Change) => (change.kind === "put" ? eventOf(change.value) : undefined);
    this.sources = [
      { target: { prefix: `${RESOURCES_PREFIX}/` }, keysOnly: false, event: published },
      { target: { prefix: `${LISTS_PREFIX}/` }, keysOnly: false, event: published },
    ];
    const follow = options.followStore;
    if (follow) {
      const event = (change: Change): ServerEvent => ({ kind: "resource_updated", uri: follow.uriPrefix + change.key });
      this.sources.push({ target: { store: follow.store }, keysOnly: true, event });
    }
  }

  /** Tells every subscriber, on every replica; resolves once the event is committed (its revision). */
  async publish(event: ServerEvent): Promise<number> {
    const params = event.params ? { params: event.params } : {};
    if (event.kind === "resource_updated") {
      if (typeof event.uri !== "string") throw new InvalidArgumentError("a resource update needs its uri");
      return this.state.store(
        `${RESOURCES_PREFIX}/${digestName(event.uri)}`,
        { uri: event.uri, ...params },
        { ttl: KEEP },
      );
    }
    const name = listName(event);
    if (!name) throw new InvalidArgumentError(`not an MCP server event: ${JSON.stringify(event)}`);
    return this.state.store(`${LISTS_PREFIX}/${name}`, { changed: name, ...params }, { ttl: KEEP });
  }

  /** Hears every event committed after this resolves, until the returned function is called. */
  async subscribe(listener: Listener): Promise<() => void> {
    await this.start();
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /**
   * Establishes the bus's watches (once; `subscribe` does it too): after
   * this resolves, every event committed is delivered to the listeners
   * registered when it arrives.
   */
  start(): Promise<void> {
    this.started ??= this.open().catch((e: unknown) => {
      this.started = undefined;
      throw e;
    });
    return this.started;
  }

  /** Registers a listener at once (the bus must have been started: `await start()`). */
  listen(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  private async open(): Promise<void> {
    const watches = await Promise.all(this.sources.map((s) => this.watch(s)));
    this.watches = watches;
    watches.forEach((w, i) => {
      void this.follow(this.sources[i] as Source, w, i);
    });
  }

  private watch(source: Source, startRevision?: number): Promise<Watch> {
    return this.client.watch(source.target, { keysOnly: source.keysOnly, startRevision });
  }

  /** Delivers one source's events for the bus's life; after a failure, resumes where it stopped. */
  private async follow(source: Source, watch: Watch, slot: number): Promise<void> {
    for (;;) {
      try {
        for await (const batch of watch) {
          for (const change of batch.changes) this.deliver(source.event(change));
        }
      } catch (e) {
        if (!this.closed) this.onError(e);
      }
      const next = this.closed ? undefined : await this.resume(source, watch.position);
      if (!next) return;
      watch = next;
      this.watches[slot] = watch;
    }
  }

  /** The watch again from `position`, trying every second; undefined once the bus is closed. */
  private async resume(source: Source, position: number): Promise<Watch | undefined> {
    for (;;) {
      await sleep(1_000);
      if (this.closed) return undefined;
      try {
        return await this.watch(source, position);
      } catch (e) {
        this.onError(e);
        // The history moved past it: go on from now.
        if (e instanceof CompactedError) position = 0;
      }
    }
  }

  private deliver(event: ServerEvent | undefined): void {
    if (!event) return;
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (e) {
        // One bad listener must not starve the others.
        this.onError(e);
      }
    }
  }

  /** Stops the watches; listeners hear nothing more. */
  close(): void {
    this.closed = true;
    this.listeners.clear();
    for (const w of this.watches) w.close();
  }
}
