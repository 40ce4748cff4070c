#!/usr/bin/env bash
# The web console's workspaces page at scale (issue 16): one server (SQLite, no engine) gets
# BENCH_CONSOLE_N (10000) suspended workspaces through `sng apply -f` in files of 500, labelled team=t0…t9; a console session
# is opened (POST /ui/login) and each page below is requested BENCH_CONSOLE_ROUNDS (50) times on
# one keep-alive connection (python3 http.client), after one warm-up request each:
#   first     /ui/t/default/workspaces                 the first page (50, the store's paged listing)
#   status    …?status=Suspended                       a status filter the suspended ones pass
#   none      …?status=Failed                          a status filter none passes (whole tenant read)
#   label     …?label=team%3Dt7                        a label filter one in ten passes
#   search    …?q=w-9999                               a name search that reads the whole tenant
#   workspace /ui/t/default/workspaces/w-(N/2)         one workspace's page
# Prints a Markdown table of the request time (loopback, server time plus the client's parse of
# the answer): p50, p90, max. Environment: SNG_BIN (else a release build of this checkout),
# BENCH_CONSOLE_N, BENCH_CONSOLE_ROUNDS, BENCH_KEEP=1 (keep the data dir).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
N=${BENCH_CONSOLE_N:-10000}
ROUNDS=${BENCH_CONSOLE_ROUNDS:-50}
cleanup() { stop_server; remove_work; }
pick_sng
make_work sng-bench-console
SERVER_DIR=$WORK/server
mkdir -p "$SERVER_DIR"
SNG_LOG=warn "$SNG" server --data-dir "$SERVER_DIR" --listen 127.0.0.1:0 \
  --engine /nonexistent/no-engine-in-this-benchmark >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
poll_until 60 "$SERVER_PID" server_up || { cat "$WORK/server.log" >&2; die "sng server did not start"; }
use_server

say "$N suspended workspaces in files of 500"
for ((from = 0; from < N; from += 500)); do
  python3 - "$from" "$((from + 500 < N ? from + 500 : N))" >"$WORK/ws.yaml" <<'PY'
import sys
a, b = int(sys.argv[1]), int(sys.argv[2])
for i in range(a, b):
    print(f"---\napiVersion: tofu.stackngo.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: w-{i:04d}\n  labels: {{team: t{i % 10}}}\nspec:\n  suspend: true\n  module: {{source: oci://r.example/bench/pet, tag: '1.0.0'}}")
PY
  "$SNG" apply -f "$WORK/ws.yaml" >/dev/null || die "sng apply failed"
done

python3 - "$SNG_SERVER" "$SNG_TOKEN" "$N" "$ROUNDS" "$SNG_DESC" <<'PY'
import http.client, json, statistics, sys, time, urllib.parse
url, token, n, rounds, desc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
u = urllib.parse.urlparse(url)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
conn.request("POST", "/ui/login", body=urllib.parse.urlencode({"token": token}),
             headers={"Content-Type": "application/x-www-form-urlencoded"})
r = conn.getresponse(); r.read()
cookie = r.getheader("Set-Cookie").split(";")[0]
pages = [
    ("first page", "/ui/t/default/workspaces"),
    ("status Suspended (a status filter)", "/ui/t/default/workspaces?status=Suspended"),
    ("status Failed (none passes: the whole tenant read)", "/ui/t/default/workspaces?status=Failed"),
    ("label filter (1 in 10)", "/ui/t/default/workspaces?label=team%3Dt7"),
    ("name search (the whole tenant read)", f"/ui/t/default/workspaces?q=w-{n - 1:04d}"),
    ("a workspace", f"/ui/t/default/workspaces/w-{n // 2:04d}"),
]
print(f"{n} workspaces, {rounds} requests each, sng {desc}, load {open('/proc/loadavg').read().split()[:3]}\n")
print("| page | p50 | p90 | max |\n|---|---|---|---|")
for what, path in pages:
    times = []
    for i in range(rounds + 1):
        t = time.perf_counter()
        conn.request("GET", path, headers={"Cookie": cookie})
        r = conn.getresponse(); body = r.read()
        if r.status != 200:
            sys.exit(f"bench: {path} answered {r.status}")
        if i:
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print(f"| {what} | {statistics.median(times):.1f} ms | {p(0.9):.1f} ms | {times[-1]:.1f} ms |")
PY
