#!/usr/bin/env bash
# install.sh - install a real Alertmanager (Debian's prometheus-alertmanager)
# for the core's integration tests. Idempotent: does nothing when the binary
# is already on PATH (or at /usr/bin/prometheus-alertmanager).
#
#   hack/alertmanager/install.sh        # install if missing, print the binary path
set -euo pipefail

find_bin() {
	for b in prometheus-alertmanager alertmanager; do
		if command -v "$b" >/dev/null 2>&1; then
			command -v "$b"
			return 0
		fi
	done
	return 1
}

if bin=$(find_bin); then
	echo "$bin"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install.sh: need root to apt-get install prometheus-alertmanager" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Update the package lists once if the package is unknown (fresh machine).
if ! apt-cache show prometheus-alertmanager >/dev/null 2>&1; then
	apt-get update -qq >&2
fi
apt-get install -y -qq --no-install-recommends prometheus-alertmanager >&2
# The package starts a system service on some hosts; tests run their own.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus-alertmanager 2>/dev/null; then
	systemctl stop prometheus-alertmanager >&2 || true
fi

bin=$(find_bin) || { echo "install.sh: prometheus-alertmanager installed but no binary found" >&2; exit 1; }
echo "$bin"
