package mcpkit

import (
	"fmt"
	"log/slog"
)

// What mcpkit v0.5.2's dispatcher tells the client of a tools/call,
// modelled for the cart tools in hsmcpkit's tests (from the behaviour of
// its server/dispatch.go; routing, schema checks and multi-round
// requests are left out):
//
//   - a handler's result is sent as it is;
//   - a handler's error becomes a result with isError set, whose one text
//     block reads `tool "<name>": <error>`;
//   - a handler's panic is recovered and logged, and the client gets the
//     JSON-RPC error -32603 "internal error" (the server goes on).
//
// On mcpkit's stateless wire the dispatcher does not recover: the panic
// reaches net/http, which ends the exchange without a response.

// ErrCodeInternal is JSON-RPC's "internal error" code.
const ErrCodeInternal = -32603

// Content is a text content block of a tool result.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ToolResult is a tools/call result, with the fields the cart tools set.
type ToolResult struct {
	Content           []Content      `json:"content"`
	StructuredContent map[string]any `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitempty"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Response is a tools/call's JSON-RPC response: a result or an error.
type Response struct {
	Result *ToolResult `json:"result,omitempty"`
	Error  *Error      `json:"error,omitempty"`
}

// ErrorResult is a tool result reporting text as the tool's failure.
func ErrorResult(text string) ToolResult {
	return ToolResult{IsError: true, Content: []Content{{Type: "text", Text: text}}}
}

// CallTool is the response the client gets when the dispatcher runs
// handler, the tool name, on args.
func CallTool[In any](name string, handler func(In) (ToolResult, error), args In) (resp Response) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("mcpkit model: a tool handler panicked", "tool", name, "panic", p)
			resp = Response{Error: &Error{Code: ErrCodeInternal, Message: "internal error"}}
		}
	}()
	result, err := handler(args)
	if err != nil {
		result = ErrorResult(fmt.Sprintf("tool %q: %v", name, err))
	}
	return Response{Result: &result}
}
