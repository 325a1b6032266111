module github.com/handlestore/handlestore/client/go/mcpgo

go 1.26.0

require (
	github.com/handlestore/handlestore/client/go v0.0.0
	github.com/handlestore/handlestore/client/go/internal/mcpevents v0.0.0
	github.com/mark3labs/mcp-go v1.2.1
)

require (
	github.com/google/jsonschema-go v0.4.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/handlestore/handlestore/client/go => ../
	github.com/handlestore/handlestore/client/go/internal/mcpevents => ../internal/mcpevents
)
