#!/usr/bin/env bash
# make demo: start an embedded sng server in a temporary data dir, apply examples/, list them.
set -euo pipefail
cd "$(dirname "$0")/.."
SNG=${SNG:-target/release/sng}
DATA=$(mktemp -d "${TMPDIR:-/tmp}/sng-demo.XXXXXX")
LOG="$DATA/server.log"

"$SNG" server --data-dir "$DATA" --listen 127.0.0.1:0 2>"$LOG" &
SERVER_PID=$!
cleanup() { kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
trap cleanup EXIT

for _ in $(seq 1 300); do
  [ -s "$DATA/server.url" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOG" >&2; exit 1; }
  sleep 0.1
done
export SNG_SERVER=$(cat "$DATA/server.url")
export SNG_TOKEN=$(cat "$DATA/admin.token")
echo "== sng server at $SNG_SERVER (data: $DATA)"

echo "== sng apply -f examples/"
"$SNG" apply -f examples/
echo
for kind in workspaces providers secrets tenants; do
  echo "== sng kind get $kind"
  "$SNG" kind get "$kind" -o wide
  echo
done
echo "== sng kind get workspace pet -o yaml"
"$SNG" kind get workspace pet -o yaml
echo
echo "Note: engine runs are not wired yet; workspaces stay Pending."
