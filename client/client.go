// Package client is a typed Go client of the Matchmaker HTTP API for game backends. Most of
// it (client.gen.go) is generated from api/openapi.yaml by oapi-codegen, so it cannot drift
// from the contract the service is tested against; New is the one hand-written convenience.
package client

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../api/openapi.yaml

import (
	"context"
	"net/http"
)

// New returns a client of the service at baseURL (e.g. "http://localhost:8080") that sends
// apiKey as its bearer token, or no token when apiKey is empty. opts are the generated
// client's options: WithHTTPClient sets timeouts, WithRequestEditorFn adds headers.
func New(baseURL, apiKey string, opts ...ClientOption) (*ClientWithResponses, error) {
	if apiKey != "" {
		bearer := "Bearer " + apiKey
		opts = append([]ClientOption{WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", bearer)
			return nil
		})}, opts...)
	}
	return NewClientWithResponses(baseURL, opts...)
}
