#!/usr/bin/env bash
# Memory of a server holding 10,000 idle workspaces (issue 21): a release `sng server` on SQLite,
# N suspended workspaces applied in batches of 500, then the server's resident memory (VmRSS)
# after the creation and after the reconcile passes that follow settle (read from /proc).
# Usage: bench/idle-memory.sh [N]   (SNG_BIN, default target/release/sng; extra env passes on).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000}
SNG=${SNG_BIN:-target/release/sng}
DIR=$(mktemp -d "${TMPDIR:-/tmp}/sng-mem.XXXXXX")
trap 'kill $(cat "$DIR/data/server.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$DIR"' EXIT
"$SNG" server --wait-ready --data-dir "$DIR/data" --listen 127.0.0.1:0 --engine "${SNG_ENGINE:-.tools/bin/tofu}" >/dev/null
export SNG_SERVER=$(cat "$DIR/data/server.url") SNG_TOKEN=$(cat "$DIR/data/admin.token")
PID=$(cat "$DIR/data/server.pid")
rss() { awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$PID/status"; }
echo "server RSS at start: $(rss) MiB"
for ((b = 0; b < N; b += 500)); do
  python3 - "$b" "$N" <<'PY' | "$SNG" apply -f - >/dev/null
import sys
b, n = int(sys.argv[1]), int(sys.argv[2])
for i in range(b, min(b + 500, n)):
    print(f"---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata: {{name: ws-{i:05d}, labels: {{team: t{i % 10}}}}}\nspec:\n  suspend: true\n  module: {{source: oci://127.0.0.1:1/acme/m, tag: '1.0.0'}}\n  vars: {{region: eu, size: s, index: {i}}}")
PY
done
echo "server RSS after creating $N suspended workspaces: $(rss) MiB"
# Let the passes that follow settle: reconcilePasses stops moving for 3 s.
stats() { curl -fsS -H "Authorization: Bearer $SNG_TOKEN" "$SNG_SERVER/api/v1/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["reconcilePasses"])'; }
last=-1; same=0
while [ $same -lt 3 ]; do now=$(stats); if [ "$now" = "$last" ]; then same=$((same+1)); else same=0; last=$now; fi; sleep 1; done
echo "server RSS once the passes settled ($last passes): $(rss) MiB"
"$SNG" get ws -o name --chunk-size 500 | wc -l | xargs echo "listed workspaces:"
echo "server RSS after listing all: $(rss) MiB"
