#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian machine, then run it.
#   - Debian packages: PostgreSQL (the store's tests start a throwaway server)
#     and MediaWiki with PHP's SQLite driver (the dials tests start a real wiki).
#   - systemd (systemd-analyze, systemd-sysusers, systemd-tmpfiles) and logrotate:
#     the operator's kit is checked with them; no running systemd is needed.
#   - bubblewrap: agent turns run sandboxed (poller.sandbox), and the tests check it.
#   - chromium: the web page is tested in a real headless browser (Playwright
#     drives /usr/bin/chromium; `playwright install` is never run).
#   - Python packages: this project with its test extras, editable, and the small
#     outside waker package under tests/plugins/.
# Extra arguments go to pytest, e.g. `scripts/test.sh -k wiki`; one layer alone with
# `scripts/test.sh tests/unit` (the fast loop), tests/integration or tests/e2e.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBS=(postgresql mediawiki php-sqlite3 php8.2-cgi php8.2-cli micro-httpd systemd logrotate chromium bubblewrap)
missing=()
for deb in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$deb" 2>/dev/null | grep -q "install ok installed" || missing+=("$deb")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing Debian packages: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Debian package starts a cluster of its own; the tests start their own
# throwaway servers and need none running.
if command -v pg_lsclusters >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  pg_lsclusters -h 2>/dev/null | while read -r ver name _; do
    pg_ctlcluster "$ver" "$name" stop 2>/dev/null || true
  done
fi

# --prefer-binary: the Matrix tests' homeserver (matrix-synapse) and its libraries
# install from wheels, with no compiler or Debian dev packages.
python3 -m pip install -q --disable-pip-version-check --prefer-binary -e '.[test]'
# A waker shipped as a package of its own, which the suite finds through its entry
# point (tests/test_waker_plugins.py); --no-deps: its one dependency is this project.
python3 -m pip install -q --disable-pip-version-check --no-deps ./tests/plugins/mood-poller-echo-waker
# Two workers: the machines this runs on have two cores, and most tests wait on
# a subprocess or a database rather than compute.
exec python3 -m pytest -q -n 2 "$@"
