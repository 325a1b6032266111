module github.com/handlestore/handlestore/client/go/gosdk

go 1.26.0

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/handlestore/handlestore/client/go v0.0.0
	github.com/handlestore/handlestore/client/go/internal/mcpevents v0.0.0
	github.com/modelcontextprotocol/go-sdk v1.8.0
)

require (
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/oauth2 v0.36.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/handlestore/handlestore/client/go => ../
	github.com/handlestore/handlestore/client/go/internal/mcpevents => ../internal/mcpevents
)
