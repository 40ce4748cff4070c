#!/usr/bin/env bash
# Install the Node.js tools of the tests in .tools/node (git-ignored), from the npm registry with
# the machine's Node.js: `ajv` with `ajv-formats` (the JSON Schemas of `sng schema` compiled in
# strict mode), `playwright-core` (the console driven in Debian's chromium) and `axe-core` (its
# accessibility checked in the page). Idempotent.
# Prints the directory (its node_modules is what NODE_PATH should name).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="$(pwd)/.tools/node"
PACKAGES=(ajv@8.17.1 ajv-formats@3.0.1 playwright-core@1.49.1 axe-core@4.14.1)
MARKER="$DIR/.sng-installed"
if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "${PACKAGES[*]}" ]; then echo "$DIR"; exit 0; fi
command -v npm >/dev/null || {
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-node-tools: installing nodejs and npm" >&2
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
}
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{"name":"sng-test-tools","private":true}' >"$DIR/package.json"
echo "install-node-tools: installing ${PACKAGES[*]} into $DIR" >&2
(cd "$DIR" && npm install --silent --no-audit --no-fund "${PACKAGES[@]}" >&2)
echo "${PACKAGES[*]}" >"$MARKER"
echo "$DIR"
