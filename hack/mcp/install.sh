#!/usr/bin/env bash
# install.sh - install the real MCP servers the agent's MCP tests talk to,
# from the npm registry, into a cache directory (default
# ~/.cache/kubecrew/mcp): kubernetes-mcp-server (its prebuilt Linux binary
# ships in the npm package kubernetes-mcp-server-linux-amd64) and the
# protocol's reference server @modelcontextprotocol/server-everything.
# Idempotent: does nothing when both are installed at the pinned versions.
#
#   hack/mcp/install.sh        # install if missing; prints the env lines to export
#
# Prints KUBECREW_TEST_K8S_MCP=<binary> and KUBECREW_TEST_MCP_EVERYTHING=<entry
# point> on stdout (hack/test.sh exports them).
set -euo pipefail

K8S_MCP_VERSION=${K8S_MCP_VERSION:-0.0.67}
EVERYTHING_VERSION=${EVERYTHING_VERSION:-2026.8.31}
DIR=${KUBECREW_MCP_DIR:-$HOME/.cache/kubecrew/mcp}

arch=$(uname -m)
case "$arch" in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) echo "install.sh: no kubernetes-mcp-server build for $arch" >&2; exit 1 ;;
esac
k8s_pkg="kubernetes-mcp-server-linux-$arch"
k8s_bin="$DIR/node_modules/$k8s_pkg/bin/kubernetes-mcp-server-linux-$arch"
everything="$DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

installed() {
	[ -x "$k8s_bin" ] && [ -f "$everything" ] &&
		grep -q "\"version\": \"$K8S_MCP_VERSION\"" "$DIR/node_modules/$k8s_pkg/package.json" 2>/dev/null &&
		grep -q "\"version\": \"$EVERYTHING_VERSION\"" "$DIR/node_modules/@modelcontextprotocol/server-everything/package.json" 2>/dev/null
}

if ! installed; then
	command -v npm >/dev/null || { echo "install.sh: npm is not installed (apt-get install npm)" >&2; exit 1; }
	mkdir -p "$DIR"
	[ -f "$DIR/package.json" ] || echo '{"name":"kubecrew-mcp-test-servers","private":true}' >"$DIR/package.json"
	npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
		"$k8s_pkg@$K8S_MCP_VERSION" "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" >&2
	chmod +x "$k8s_bin" 2>/dev/null || true
	installed || { echo "install.sh: installed, but $k8s_bin or $everything is missing" >&2; exit 1; }
fi
echo "KUBECREW_TEST_K8S_MCP=$k8s_bin"
echo "KUBECREW_TEST_MCP_EVERYTHING=$everything"
