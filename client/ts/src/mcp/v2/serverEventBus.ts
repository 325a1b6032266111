/**
 * The v2 MCP SDK's `ServerEventBus` (`@modelcontextprotocol/server`, the
 * source of `subscriptions/listen` streams in `createMcpHandler`) over the
 * cluster: an event published through any replica's handler reaches the
 * listen streams of every replica. A ClusterNotificationBus underneath, so
 * the keys are those of the Rust and Python buses.
 *
 * The SDK's seam is synchronous: `publish` returns before the event is
 * committed (a failure goes to `onError`), and `subscribe` registers at
 * once, which is why the bus is made with `await ClusterServerEventBus.start()`:
 * its watches are established before the first listener, so a listener
 * hears every event committed after its `subscribe` returned.
 */
import type { ServerEvent, ServerEventBus } from "@modelcontextprotocol/server";
import type { Client } from "../../cluster.js";
import { ClusterNotificationBus, type ClusterNotificationBusOptions } from "../notifications.js";

export class ClusterServerEventBus implements ServerEventBus {
  private constructor(
    readonly bus: ClusterNotificationBus,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** A bus whose watches are established: pass it as `bus` to `createMcpHandler`. */
  static async start(client: Client, options: ClusterNotificationBusOptions = {}): Promise<ClusterServerEventBus> {
    const onError = options.onError ?? ((e: unknown) => console.warn("handlestore server event bus:", e));
    const bus = new ClusterNotificationBus(client, { ...options, onError });
    await bus.start();
    return new ClusterServerEventBus(bus, onError);
  }

  publish(event: ServerEvent): void {
    this.bus.publish(event as never).catch(this.onError);
  }

  /** Awaitable twin of `publish`: resolves once the event is committed (its revision). */
  publishCommitted(event: ServerEvent): Promise<number> {
    return this.bus.publish(event as never);
  }

  subscribe(listener: (event: ServerEvent) => void): () => void {
    return this.bus.listen(listener as never);
  }

  close(): void {
    this.bus.close();
  }
}
