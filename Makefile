# kubecrew — a fleet of Kubernetes SRE agents.
# Two commands on a fresh machine: `make run` and `make test`.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
TOOLS_BIN := $(HOME)/.cache/kubecrew/bin
STATICCHECK_VERSION := v0.8.2
MODULES := pkg agents services/agent services/core
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X github.com/kubecrew/kubecrew/pkg/buildinfo.Version=$(VERSION)

.PHONY: help build image test hostile run e2e eval lint bench fuzz checkdeps vet fmt staticcheck sizes clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

build: ## build the agent and core binaries into bin/
	@mkdir -p $(BIN)
	cd services/agent && $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/agent .
	cd services/core && $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/core .
	cd services/agent && $(GO) build -trimpath -o $(BIN)/sandbox ./cmd/sandbox
	cd services/agent && $(GO) build -trimpath -o $(BIN)/eval ./cmd/eval

image: ## the OCI image index (linux/amd64 + linux/arm64) without a container engine: bin/image/oci (layout) and bin/image/kubecrew.oci.tar (IMAGE_ARGS="-platforms linux/amd64")
	cd manifests && GOWORK=off $(GO) run ./cmd/image -root .. -out ../bin/image -version $(VERSION) $(IMAGE_ARGS)

e2e: build ## the whole loop headless on a sandbox API server; exits 0 only when the PR is merged
	bin/sandbox -headless -core-port 0 -agent-port 0

# `make eval LLM_BASE_URL=… LLM_API_KEY=… AGENT_MODEL=…` grades your model; the key stays out of the echoed command.
export LLM_BASE_URL LLM_API_KEY AGENT_MODEL
eval: build ## the scenario eval suite on the sandbox cluster (EVAL_ARGS="-filter oom -repeat 3 -mode competent")
	bin/eval $(EVAL_ARGS)

test: ## the whole suite: unit, Postgres, kube-apiserver, Alertmanager tiers (installs what it needs)
	hack/test.sh

hostile: ## the hostile pass: every route × credential, bad bodies, slow clients, planted credentials, an outage, on memory and Postgres; prints a tally (HOSTILE_ROUNDS=5)
	hack/hostile.sh

run: build ## sandbox cluster + the whole fleet + one OOMKill incident to a merged PR; stays up until Ctrl-C (CORE_PORT=8080 AGENT_PORT=8001, 0 = any free)
	hack/run.sh $(if $(CORE_PORT),-core-port=$(CORE_PORT)) $(if $(AGENT_PORT),-agent-port=$(AGENT_PORT)) $(RUN_ARGS)

checkdeps: ## fail when shared dependencies differ between modules, or a module does not build alone
	hack/checkdeps.sh --build

vet: ## go vet every module (manifests/ is outside go.work: GOWORK=off)
	@for m in $(MODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done
	cd manifests && GOWORK=off $(GO) vet ./...

fmt: ## gofmt check
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

$(TOOLS_BIN)/staticcheck:
	GOBIN=$(TOOLS_BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(TOOLS_BIN)/staticcheck
	@for m in $(MODULES); do (cd $$m && $(TOOLS_BIN)/staticcheck ./...) || exit 1; done
	cd manifests && GOWORK=off $(TOOLS_BIN)/staticcheck ./...

sizes: ## the size ratchet: files <= 600 lines, functions <= 100 (tables excepted), main.go <= 60; hack/size-allowlist.txt may only shrink
	cd pkg && KUBECREW_LINT=1 $(GO) test -count=1 -run 'TestSizeRatchet' ./archtest

lint: fmt vet staticcheck sizes ## gofmt, go vet, staticcheck, the size ratchet

fuzz: ## every fuzz target for FUZZTIME each (default 2000x executions; FUZZTIME=10m for a campaign)
	hack/fuzz.sh

bench: ## benchmarks (figures for the issue notes)
	hack/bench.sh

clean:
	rm -rf $(BIN)
