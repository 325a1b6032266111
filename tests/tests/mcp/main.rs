//! Tier "mcp": the MCP servers (cart_server, `handlestore mcp`) with real MCP
//! clients over real clusters. `tests/tier.sh mcp`; tests/README.md lists the tiers.

mod cart;
mod listen;
mod request_state;
mod resume;
mod sessions;
mod state;
