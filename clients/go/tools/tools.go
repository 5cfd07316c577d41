//go:build tools

// The code generators of the Go SDK, pinned by this module's go.mod and built by
// clients/setup.sh into clients/.bin (the Go module proxy has them; nothing else is fetched).
package tools

import (
	_ "connectrpc.com/connect/cmd/protoc-gen-connect-go"
	_ "google.golang.org/protobuf/cmd/protoc-gen-go"
)
