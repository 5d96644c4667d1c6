package api

import _ "embed"

// OpenAPI is the API description served at /api/v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
