#!/usr/bin/env bash
# Installs what the test suite needs: npm dependencies and the real external
# components (Redis, etcd, OpenLDAP, Pebble, Chromium, load tools). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

PACKAGES=(redis-server nginx redis-sentinel prometheus etcd-server etcd-client slapd ldap-utils pebble chromium wrk nghttp2-client openssl curl ca-certificates)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for bin in redis-server nginx redis-sentinel prometheus promtool etcd slapd pebble pebble-challtestsrv chromium wrk openssl; do
  command -v "$bin" >/dev/null || { echo "setup: $bin is still missing" >&2; exit 1; }
done
echo "setup: ready"
