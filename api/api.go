// Package api embeds the service's OpenAPI document, so the binary serves the very contract
// its handler tests were validated against.
package api

import _ "embed"

// OpenAPI is api/openapi.yaml as built into the binary.
//
//go:embed openapi.yaml
var OpenAPI []byte
