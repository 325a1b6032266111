package testkit

import "path/filepath"

// EventVectorsPath is the shared vectors of the MCP event streams
// (proto/vectors/mcp_events.json: key layout, event ids, completion,
// timings), which internal/mcpevents' tests hold its constants to.
func EventVectorsPath() string {
	return filepath.Join(Repo(), "proto", "vectors", "mcp_events.json")
}
