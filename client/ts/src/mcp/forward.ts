/**
 * Sends what a ClusterNotificationBus hears to the clients of an SDK server
 * (`McpServer` or the low-level `Server`): `notifications/resources/updated`
 * for resource updates (only the URIs `resources` accepts, e.g. the ones a
 * client subscribed to), and the tools, prompts and resources list-changed
 * notifications. A server that is not connected (its client is gone) drops
 * them; nothing else is affected.
 */

import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { ClusterNotificationBus, ServerEvent } from "./notifications.js";

export interface ForwardOptions {
  /** Which resource updates to send (default: all). */
  readonly resources?: ((uri: string) => boolean) | undefined;
  /** Told of notifications that could not be sent (default: dropped). */
  readonly onError?: ((error: unknown) => void) | undefined;
}

function lowLevel(server: McpServer | Server): Server {
  return "server" in server ? server.server : server;
}

function send(server: Server, event: ServerEvent, wanted: (uri: string) => boolean): Promise<void> | undefined {
  switch (event.kind) {
    case "resource_updated":
      return wanted(event.uri) ? server.sendResourceUpdated({ ...event.params, uri: event.uri }) : undefined;
    case "tools_list_changed":
      return server.sendToolListChanged();
    case "prompts_list_changed":
      return server.sendPromptListChanged();
    case "resources_list_changed":
      return server.sendResourceListChanged();
  }
}

/** Forwards the bus's events to `server`'s client until the returned function is called (or the server closes). */
export async function forwardNotifications(
  bus: ClusterNotificationBus,
  server: McpServer | Server,
  options: ForwardOptions = {},
): Promise<() => void> {
  const low = lowLevel(server);
  const wanted = options.resources ?? (() => true);
  const dropped = options.onError ?? (() => {});
  const stop = await bus.subscribe((event) => {
    send(low, event, wanted)?.catch(dropped);
  });
  const closed = low.onclose;
  low.onclose = () => {
    stop();
    closed?.();
  };
  return stop;
}
