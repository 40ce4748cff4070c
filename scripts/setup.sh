#!/usr/bin/env bash
# Install what sng's tests need on a fresh Debian machine. Idempotent: installs only what is missing.
#   bubblewrap        sandbox of engine runs
#   docker-registry   a real OCI registry (CNCF Distribution) for the tests
#   apache2-utils     htpasswd, for the registry with authentication
#   protobuf-compiler, libprotobuf-dev   protoc and its well-known types, to build the test provider
#   the engine        .tools/bin/tofu (scripts/install-engine.sh) unless SNG_ENGINE/tofu/terraform exist
set -euo pipefail
cd "$(dirname "$0")/.."

command -v cargo >/dev/null || { echo "error: cargo is required (https://rustup.rs)" >&2; exit 1; }

need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v docker-registry >/dev/null || need_apt+=(docker-registry)
command -v htpasswd >/dev/null || need_apt+=(apache2-utils)
command -v protoc >/dev/null || need_apt+=(protobuf-compiler)
[ -f /usr/include/google/protobuf/empty.proto ] || need_apt+=(libprotobuf-dev)
command -v cc >/dev/null || need_apt+=(gcc)

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need_apt[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi
# The Debian package starts a registry service on :5000; the tests start their own.
if command -v systemctl >/dev/null && systemctl is-active --quiet docker-registry 2>/dev/null; then
  systemctl stop docker-registry || true
fi

if ! { [ -n "${SNG_ENGINE:-}" ] || command -v tofu >/dev/null || command -v terraform >/dev/null; }; then
  scripts/install-engine.sh >/dev/null
fi
echo "setup: ok" >&2
