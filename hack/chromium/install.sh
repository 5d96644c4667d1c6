#!/usr/bin/env bash
# install.sh - install Debian's chromium for the dashboard's browser test
# (services/agent/internal/sandbox, TestDashboardInBrowser). Idempotent:
# does nothing when /usr/bin/chromium exists.
#
#   hack/chromium/install.sh        # install if missing, print the binary path
set -euo pipefail

bin=/usr/bin/chromium
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "install.sh: need root to apt-get install chromium" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Update the package lists once if the package is unknown (fresh machine).
if ! apt-cache show chromium >/dev/null 2>&1; then
	apt-get update -qq >&2
fi
apt-get install -y -qq chromium >&2
[ -x "$bin" ] || { echo "install.sh: chromium installed but $bin is missing" >&2; exit 1; }
echo "$bin"
