"""Adapters for the official MCP Python SDK (`pip install handlestore[mcp]`):
the seams it has for state that must be shared by every replica.

- `ClusterEventStore`: the SDK's `EventStore`; with `attach(session_manager)`,
  a stream cut on one replica resumes on any other and follows its origin
  to the call's answer (or to `origin_lost` if the origin dies).
- `ClusterSubscriptionBus`: the SDK's `SubscriptionBus` over watch
  (`subscriptions/listen` hears a change made through any replica).
- `KeyRingCodec` and `request_state_security()`: the SDK's
  `RequestStateSecurity` on the cluster's replicated key ring.
- `ClusterTokenStorage`: the SDK client's OAuth `TokenStorage`, encrypted.
"""

from handlestore.mcp.event_store import ClusterEventStore
from handlestore.mcp.request_state import KeyRingCodec, request_state_security
from handlestore.mcp.subscription_bus import ClusterSubscriptionBus
from handlestore.mcp.token_storage import ClusterTokenStorage

__all__ = [
    "ClusterEventStore",
    "ClusterSubscriptionBus",
    "ClusterTokenStorage",
    "KeyRingCodec",
    "request_state_security",
]
