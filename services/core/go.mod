module github.com/kubecrew/kubecrew/services/core

go 1.26.0

require github.com/kubecrew/kubecrew/pkg v0.0.0

require (
	github.com/getkin/kin-openapi v0.153.0 // indirect
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/text v0.44.0 // indirect
)

replace github.com/kubecrew/kubecrew/pkg => ../../pkg
