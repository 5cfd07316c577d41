//go:build tools

// Pins the OpenAPI generator the fuzz test builds (test/fuzz/setup.sh); go install pkg@version
// cannot be used because it looks up the module's deprecation on a list the proxy refuses.
package tools

import _ "github.com/sudorandom/protoc-gen-connect-openapi"
