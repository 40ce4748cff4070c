#!/usr/bin/env bash
# Install the Python tools of the tests in a virtual environment at .tools/moto (git-ignored): an
# S3-compatible server, PyPI `moto[s3]` (with flask and flask-cors, which `moto_server` needs), and
# ORAS's Python SDK, PyPI `oras` (another OCI client, to check that it reads the module packages
# `sng module push` writes), and the clients of the standards the platform speaks: PyPI
# `standardwebhooks` (Standard Webhooks signatures), `cloudevents` (CloudEvents 1.0),
# `openapi-spec-validator` (the OpenAPI description) and `check-jsonschema` (the JSON Schemas
# against their metaschema), `prometheus-client` (the /metrics exposition parsed), each run by a test. Idempotent: does nothing when the right versions are already there.
# Prints the path of `moto_server`; `.tools/moto/bin/python` imports them all.
#
# On a fresh Debian machine `python3 -m venv` needs the `python3-venv` package (ensurepip): it is
# installed with apt-get when missing. When no venv can be made, falls back to
# `pip install --target` with a small `moto_server` launcher.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DIR="$ROOT/.tools/moto"
MOTO=${MOTO_VERSION:-5.2.5}
ORAS=${ORAS_VERSION:-0.2.43}
CLIENTS=("standardwebhooks==1.1.0" "cloudevents==1.12.1" "openapi-spec-validator==0.8.4" "check-jsonschema==0.38.2" "prometheus-client==0.21.1")
VERSION="moto $MOTO, oras $ORAS, ${CLIENTS[*]}"
PACKAGES=("moto[s3]==$MOTO" flask flask-cors "oras==$ORAS" "${CLIENTS[@]}")
MARKER="$DIR/.sng-installed"
BIN="$DIR/bin/moto_server"

installed() {
  [ -x "$BIN" ] && [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$VERSION" ] \
    && "$BIN" --help >/dev/null 2>&1 && "$DIR/bin/python" -c 'import oras.client, standardwebhooks, cloudevents, openapi_spec_validator, check_jsonschema, prometheus_client' >/dev/null 2>&1
}

if installed; then echo "$BIN"; exit 0; fi

command -v python3 >/dev/null || { echo "install-moto: error: python3 is required" >&2; exit 1; }

# A venv with pip needs ensurepip, which Debian ships separately (python3-venv).
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1 && command -v apt-get >/dev/null; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  PYVER=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  echo "install-moto: installing python3-venv" >&2
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null \
    || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "python$PYVER-venv" >/dev/null \
    || echo "install-moto: warning: could not install python3-venv" >&2
fi

rm -rf "$DIR"
mkdir -p "$ROOT/.tools"
echo "install-moto: installing ${PACKAGES[*]} into $DIR" >&2
if python3 -m venv "$DIR" >/dev/null 2>&1 && [ -x "$DIR/bin/pip" ]; then
  "$DIR/bin/python" -m pip install --quiet --disable-pip-version-check "${PACKAGES[@]}" >&2
else
  # No venv with pip: install into a plain directory with the system pip and add a launcher.
  rm -rf "$DIR"
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "install-moto: error: neither \`python3 -m venv\` nor \`python3 -m pip\` works;" \
      "install the Debian packages python3-venv or python3-pip" >&2
    exit 1
  fi
  mkdir -p "$DIR/bin"
  python3 -m pip install --quiet --disable-pip-version-check --target "$DIR/site" "${PACKAGES[@]}" >&2
  PY=$(command -v python3)
  cat >"$BIN" <<EOF
#!/bin/sh
PYTHONPATH="$DIR/site\${PYTHONPATH:+:\$PYTHONPATH}" exec "$PY" -c 'import sys; from moto.server import main; sys.argv[0] = "moto_server"; sys.exit(main())' "\$@"
EOF
  cat >"$DIR/bin/python" <<EOF
#!/bin/sh
PYTHONPATH="$DIR/site\${PYTHONPATH:+:\$PYTHONPATH}" exec "$PY" "\$@"
EOF
  chmod +x "$BIN" "$DIR/bin/python"
fi

"$BIN" --help >/dev/null 2>&1 || { echo "install-moto: error: $BIN does not run" >&2; exit 1; }
"$DIR/bin/python" -c 'import oras.client, standardwebhooks, cloudevents, openapi_spec_validator, check_jsonschema, prometheus_client' || { echo "install-moto: error: oras does not import" >&2; exit 1; }
echo "$VERSION" >"$MARKER"
echo "$BIN"
