#!/usr/bin/env bash
# Registry notifications (issue 18): how fast `POST /hooks/registry/{tenant}` acknowledges a CNCF
# Distribution envelope (the work is queued, the tag checker does it afterwards), with
# BENCH_HOOK_WS (default 50) Ready workspaces following the tag. BENCH_HOOK_N (default 300)
# envelopes of one push event each, every id new, then the same number of replays (duplicates);
# curl's time_total per request (one connection per request, as a registry's notifier without
# keep-alive), p50/p95/p99/max in ms; then the time until the queue is worked (metric
# sng_registry_notifications_queued back to 0), polled.
#
# Environment: BENCH_HOOK_N, BENCH_HOOK_WS, SNG_BIN (skip the build), SNG_ENGINE (default
# .tools/bin/tofu), SNG_DOCKER_REGISTRY (default /usr/bin/docker-registry), BENCH_KEEP=1 keeps the
# temporary directory. Prints a Markdown report on stdout; progress goes to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/bench/lib.sh"

N=${BENCH_HOOK_N:-300}
WS=${BENCH_HOOK_WS:-50}
ENGINE=${SNG_ENGINE:-$ROOT/.tools/bin/tofu}
REGISTRY_BIN=${SNG_DOCKER_REGISTRY:-/usr/bin/docker-registry}
MODULE=$ROOT/examples/modules/pet
SERVER_LOG_FILTER=${BENCH_SNG_LOG:-warn}
SERVER_ARGS=(--provider-mirror "$ROOT/.tools/providers" --tag-poll-interval 1h)

cleanup() {
  stop_server
  stop_registry
  remove_work
}

check_tools
pick_sng
make_work sng-bench-hook
start_registry
push_module pet
start_server "$WORK/server"

TOKEN=hook-bench-secret
{
  printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: sng-registry-notifications}\nstringData: {token: %s}\n---\n' "$TOKEN"
  for i in $(seq 1 "$WS"); do workspace_doc "w-$i" pet; echo "---"; done
} >"$WORK/ws.yaml"
"$SNG" apply -f "$WORK/ws.yaml" >/dev/null
ready() {
  local n
  n=$("$SNG" kind get workspaces -o json | python3 -c 'import json,sys; print(sum(1 for w in json.load(sys.stdin)["items"] if any(c["type"]=="Ready" and c["status"]=="True" for c in w.get("status",{}).get("conditions",[]))))')
  [ "$n" = "$WS" ]
}
say "waiting for $WS workspaces to be Ready"
poll_until 900 "$SERVER_PID" ready || die "the workspaces did not become Ready"
DIGEST=$(curl -sI -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$REGISTRY/v2/bench/pet/manifests/1.0.0" | tr -d '\r' | awk -F': ' 'tolower($1)=="docker-content-digest"{print $2}')

# post ID: one envelope; prints "HTTP_CODE TIME_TOTAL_SECONDS".
post() {
  curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -X POST \
    -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/vnd.docker.distribution.events.v1+json' \
    --data "{\"events\":[{\"id\":\"$1\",\"action\":\"push\",\"target\":{\"repository\":\"bench/pet\",\"tag\":\"1.0.0\",\"digest\":\"$DIGEST\"}}]}" \
    "$SNG_SERVER/hooks/registry/default"
}
say "posting $N envelopes, then $N replays"
for i in $(seq 1 "$N"); do post "ev-$i"; done >"$WORK/first.txt"
for i in $(seq 1 "$N"); do post "ev-$i"; done >"$WORK/replay.txt"
queued() {
  ! curl -s -H "Authorization: Bearer $SNG_TOKEN" "$SNG_SERVER/metrics" | grep -E '^sng_registry_notifications_queued\{' | grep -vq ' 0$'
}
stamp t0
poll_until 300 "$SERVER_PID" queued || die "the queue was not worked"
elapsed_ms "$t0" drain_ms
RUNS=$("$SNG" runs workspace w-1 -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["items"] if isinstance(d, dict) else d))')

stats() {
  python3 - "$1" "$2" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[2]) if l.strip()]
codes = sorted({r[0] for r in rows})
ms = sorted(float(r[1]) * 1000 for r in rows)
q = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]
print(f"| {sys.argv[1]} | {len(ms)} | {','.join(codes)} | {q(0.5):.1f} | {q(0.95):.1f} | {q(0.99):.1f} | {ms[-1]:.1f} |")
PY
}
echo "### Registry notifications: acknowledgement time ($(date -u +%Y-%m-%dT%H:%MZ), $SNG_DESC, load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "$WS Ready workspaces follow the tag; each envelope holds one push event."
echo
echo "| envelopes | count | status | p50 ms | p95 ms | p99 ms | max ms |"
echo "|---|---:|---|---:|---:|---:|---:|"
stats "new event ids" "$WORK/first.txt"
stats "replays (duplicates)" "$WORK/replay.txt"
echo
echo "Queue worked (back to 0) ${drain_ms} ms after the last replay; runs of w-1: $RUNS (the tag did not move: no new run)."
