# syntax=docker/dockerfile:1
# One image, both binaries: /usr/local/bin/agent (the ENTRYPOINT; every persona,
# chosen by AGENT_PERSONA) and /usr/local/bin/core (Deployments pick it with
# `command`). The persona files are embedded in the agent binary (go:embed of
# agents/), so there is no per-persona layer to forget to COPY.
#
#   docker build -t ghcr.io/kubecrew/kubecrew:dev --build-arg VERSION=$(git describe --always --dirty) .
#
# hack/manifests-check.sh checks that every path COPY'd here exists and that
# every module in go.work is copied.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
# The workspace and the module files first, so dependency downloads are cached
# until a go.mod changes. go.sum/go.work.sum are matched by glob: a module
# without external dependencies has none.
COPY go.work go.work.sum* ./
COPY pkg/go.mod pkg/go.sum* pkg/
COPY agents/go.mod agents/go.sum* agents/
COPY services/agent/go.mod services/agent/go.sum* services/agent/
COPY services/core/go.mod services/core/go.sum* services/core/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY pkg/ pkg/
COPY agents/ agents/
COPY services/ services/
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    mkdir -p /out \
 && cd /src/services/agent \
 && go build -ldflags "-s -w -X github.com/kubecrew/kubecrew/pkg/buildinfo.Version=${VERSION}" -o /out/agent . \
 && cd /src/services/core \
 && go build -ldflags "-s -w -X github.com/kubecrew/kubecrew/pkg/buildinfo.Version=${VERSION}" -o /out/core .

# distroless static: no shell, no package manager, uid 65532 (nonroot).
FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.source="https://github.com/kubecrew/kubecrew" \
      org.opencontainers.image.description="kubecrew: agent and core binaries" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/agent /out/core /usr/local/bin/
USER 65532:65532
EXPOSE 8000 8080
ENTRYPOINT ["/usr/local/bin/agent"]
