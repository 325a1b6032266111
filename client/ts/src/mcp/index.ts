/**
 * @handlestore/client/mcp: the official MCP TypeScript SDK's seams
 * (`@modelcontextprotocol/sdk`, a peer dependency) on the cluster, so any
 * replica of a Streamable HTTP server serves any request:
 *
 * - `ClusterEventStore`: the transport's `EventStore` (resumable streams,
 *   `Last-Event-ID` on any replica, a resumption that follows its origin;
 *   `ORIGIN_LOST` is the error a request whose replica died ends with);
 * - `ClusterTaskStore`, `ClusterTaskMessageQueue`: the experimental tasks'
 *   `TaskStore` and `TaskMessageQueue`;
 * - `ClusterOAuthClientProvider`: an MCP client's OAuth state (tokens
 *   encrypted) in the client state store;
 * - `ClusterNotificationBus`, `forwardNotifications`: resource-updated and
 *   list-changed notifications heard by every replica.
 */
export { LIVE, ORIGIN_LOST } from "./contract.js";
export { BUCKET, ClusterEventStore, type ClusterEventStoreOptions, EVENTS_PREFIX, parseEventId } from "./eventStore.js";
export { type ForwardOptions, forwardNotifications } from "./forward.js";
export { digestName } from "./keys.js";
export {
  ClusterNotificationBus,
  type ClusterNotificationBusOptions,
  eventOf,
  LISTS_PREFIX,
  type Listener,
  RESOURCES_PREFIX,
  type ServerEvent,
} from "./notifications.js";
export {
  CLIENT_INFO,
  ClusterOAuthClientProvider,
  type ClusterOAuthClientProviderOptions,
  CODE_VERIFIER,
  DISCOVERY,
  TOKENS,
} from "./oauth.js";
export { ClusterTaskMessageQueue, type ClusterTaskMessageQueueOptions } from "./taskQueue.js";
export { ClusterTaskStore, type ClusterTaskStoreOptions, isTerminal, TASK_PAGE, TASKS_PREFIX } from "./taskStore.js";
