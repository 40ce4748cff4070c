#!/usr/bin/env bash
# `make bench-scale` (issue 21, item 5): the server at scale, each part on a release build.
#
#   idle     For each size of BENCH_SIZES (default "1000 10000 50000"): a fresh server (SQLite, the
#            real engine) gets that many suspended workspaces (never run) through the API, 1,000
#            per request; once its reconcile passes have settled (`reconcilePasses` unchanged and
#            under 5 % of a core for 3 s), its resident memory (VmRSS) and its CPU time
#            (utime+stime, /proc) over
#            BENCH_IDLE_WINDOW seconds (default 20) of idleness, scaled to a minute; then the
#            listings, from the stored bytes: a page of 500 (`?limit=500`, curl, median of 5), the
#            whole listing in one answer (no limit: streamed, median of 3) and `sng get ws` (pages
#            of 500, as the CLI lists); VmRSS after them and the peak (VmHWM). With BENCH_BURST_RUNS
#            (default 0) real workspaces (bench/modules/hop) applied at once after that, the time
#            until all have Succeeded and the peak RSS during it.
#   pass     The reconcile pass bench (crates/sng-server/benches/reconcile_pass.rs) at each size
#            (SNG_PASS_WORKSPACES): cold, warm (idle), busy (one workspace moved) and re-decided
#            passes. With BENCH_STORE=postgres, on a fresh database of scripts/pg.sh's PostgreSQL
#            (the hops too: bench/dependency-hops.sh reads BENCH_STORE).
#   hops     bench/dependency-hops.sh: a chain of BENCH_CHAIN (default 50) and a fan-out of 1 →
#            BENCH_FANOUT (default 200), each with 0 and BENCH_HOPS_IDLE (default 10000) idle
#            workspaces, beside the bare engine in the same run; the server's peak RSS (VmHWM).
#            BENCH_HOPS_ITERATIONS (default 1).
#   restart  bench/restart-and-burst.sh, part 1 only: BENCH_RESTART_N (default 1000) real Ready
#            workspaces, the server restarted: runs started (target 0), API answering, first
#            full pass, idle CPU over BENCH_IDLE_WINDOW.
#
# BENCH_PARTS (default "idle pass hops restart") picks parts. BENCH_SERVER_ENV adds VAR=value
# words to the servers' environment only (allocator experiments: LD_PRELOAD, MALLOC_ARENA_MAX).
# SNG_BIN (skip the build), SNG_ENGINE, SNG_DOCKER_REGISTRY, BENCH_KEEP=1 as the other scripts.
# Prints a Markdown report on stdout (with commit, date and load averages); progress on stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/bench/lib.sh"

SIZES=${BENCH_SIZES:-"1000 10000 50000"}
WINDOW=${BENCH_IDLE_WINDOW:-20}
PARTS=${BENCH_PARTS:-"idle pass hops restart"}
BURST_RUNS=${BENCH_BURST_RUNS:-0}
ENGINE=${SNG_ENGINE:-$ROOT/.tools/bin/tofu}
REGISTRY_BIN=${SNG_DOCKER_REGISTRY:-/usr/bin/docker-registry}
MODULE=$ROOT/bench/modules/hop
SERVER_LOG_FILTER=${BENCH_SERVER_LOG:-warn}
SERVER_ARGS=()
CLK_TCK=$(getconf CLK_TCK)

for v in WINDOW BURST_RUNS; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "$v must be a whole number"
done
for n in $SIZES; do [[ $n =~ ^[1-9][0-9]*$ ]] || die "BENCH_SIZES: \`$n\` is not a positive integer"; done

check_tools
pick_sng
cleanup() {
  stop_server
  stop_registry
  [ -z "${PG_DB:-}" ] || pg_drop_db "$PG_DB"
  remove_work
}
make_work sng-scale
has() { [[ " $PARTS " == *" $1 "* ]]; }

echo "## \`make bench-scale\`: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "sng: $SNG_DESC; $(nproc) CPUs ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)); load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)${BENCH_SERVER_ENV:+; server environment: \`$BENCH_SERVER_ENV\`}."
echo

kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$SERVER_PID/status"; }
mib() { awk -v k="$1" '$1 == k":" {printf "%.0f", $2 / 1024}' "/proc/$SERVER_PID/status"; }
passes() {
  curl -fsS -H "Authorization: Bearer $SNG_TOKEN" "$SNG_SERVER/api/v1/stats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["reconcilePasses"])'
}
# settle: wait until reconcilePasses has not moved for 3 s and the server used under 5 % of a
# core in each of those seconds (checked every second): a pass under way, which can last many
# seconds at 50,000 workspaces, moves no counter until it ends, but uses CPU.
settle() {
  local last=-1 same=0 now t0 t1 busy
  cpu_ticks "$SERVER_PID" t0
  while [ $same -lt 3 ]; do
    now=$(passes)
    cpu_ticks "$SERVER_PID" t1
    busy=$(((t1 - t0) * 100 / CLK_TCK))
    t0=$t1
    if [ "$now" = "$last" ] && [ "$busy" -lt 5 ]; then same=$((same + 1)); else same=0; last=$now; fi
    sleep 1 # a sampling period of the condition above, not a synchronisation
  done
}
# suspended COUNT: COUNT suspended workspaces through the API, 1,000 per request.
suspended() {
  python3 - "$1" <<'PY' || die "cannot create the idle workspaces"
import json, os, sys, urllib.request
n = int(sys.argv[1])
url, token = os.environ["SNG_SERVER"], os.environ["SNG_TOKEN"]
for start in range(0, n, 1000):
    items = [{"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
              "metadata": {"name": f"idle-{i:05d}", "labels": {"team": f"t{i % 10}"}},
              "spec": {"module": {"source": "oci://127.0.0.1:1/acme/m", "tag": "1.0.0"},
                       "suspend": True, "vars": {"region": "eu", "size": "s", "index": i}}}
             for i in range(start, min(n, start + 1000))]
    req = urllib.request.Request(f"{url}/api/v1/tenants/default/apply", method="POST",
                                 data=json.dumps({"items": items}).encode(),
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=600).read()
PY
}
# curl_ms PATH RUNS: the median of RUNS GETs of PATH (curl's time_total, ms) and the bytes.
curl_ms() {
  local i out=()
  for ((i = 0; i < $2; i++)); do
    out+=("$(curl -fsS -o /dev/null -w '%{time_total} %{size_download}' -H "Authorization: Bearer $SNG_TOKEN" "$SNG_SERVER$1")")
  done
  printf '%s\n' "${out[@]}" | python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin if l.strip()]
print(f"{statistics.median(float(t) for t, _ in rows) * 1000:.1f} ms ({int(rows[0][1]) // 1024} KiB)")'
}

if has idle; then
  say "registry"
  start_registry
  push_module hop
  echo "### Idle servers: memory, CPU per idle minute, listings"
  echo
  echo "Suspended workspaces created through the API; CPU over ${WINDOW} s of idleness once the passes settled, ×$(python3 -c "print(round(60 / $WINDOW, 2))") for a minute; listings of the stored bytes (curl; the CLI in pages of 500)."
  echo
  printf '| workspaces | create s | RSS created | RSS settled | CPU s / idle min | page of 500 | whole listing | `sng get ws` | RSS after listings | peak RSS |'
  [ "$BURST_RUNS" = 0 ] || printf ' burst of %s runs: s, peak RSS |' "$BURST_RUNS"
  echo
  printf '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
  [ "$BURST_RUNS" = 0 ] || printf -- '---:|'
  echo
  for n in $SIZES; do
    say "idle: $n suspended workspaces"
    start_server "$WORK/idle-$n"
    stamp t0
    suspended "$n"
    elapsed_ms "$t0" create_ms
    rss_created=$(mib VmRSS)
    settle
    rss_settled=$(mib VmRSS)
    cpu_ticks "$SERVER_PID" c0
    sleep "$WINDOW" # the idle window measured
    cpu_ticks "$SERVER_PID" c1
    cpu_min=$(python3 -c "print(f'{($c1 - $c0) / $CLK_TCK * 60 / $WINDOW:.2f}')")
    page=$(curl_ms "/api/v1/tenants/default/workspaces?limit=500" 5)
    whole=$(curl_ms "/api/v1/tenants/default/workspaces" 3)
    stamp t1
    listed=$("$SNG" get ws -o name --chunk-size 500 | wc -l)
    elapsed_ms "$t1" cli_ms
    [ "$listed" = "$n" ] || die "sng get ws listed $listed of $n"
    row="| $n | $((create_ms / 1000)) | ${rss_created} MiB | ${rss_settled} MiB | $cpu_min | $page | $whole | $cli_ms ms | $(mib VmRSS) MiB | $(mib VmHWM) MiB |"
    if [ "$BURST_RUNS" != 0 ]; then
      file=$WORK/burst-$n.yaml
      for ((i = 0; i < BURST_RUNS; i++)); do echo "---"; workspace_doc "$(printf 'burst-%04d' "$i")" hop; done >"$file"
      stamp t2
      "$SNG" apply -f "$file" >/dev/null
      for ((i = 0; i < BURST_RUNS; i++)); do
        "$SNG" wait workspace "$(printf 'burst-%04d' "$i")" --for condition=Ready --timeout 30m >/dev/null ||
          die "burst-$i did not become Ready"
      done
      elapsed_ms "$t2" burst_ms
      row+=" $((burst_ms / 1000)), $(mib VmHWM) MiB |"
    fi
    echo "$row"
    stop_server
  done
  stop_registry
  echo
fi

if has pass; then
  echo "### One reconcile pass (\`cargo bench -p sng-server --bench reconcile_pass\`, store: ${BENCH_STORE:-sqlite})"
  echo
  echo '```'
  for n in $SIZES; do
    say "pass: $n workspaces"
    if [ "${BENCH_STORE:-sqlite}" = postgres ]; then
      pg_start
      PG_DB=sng_bench_pass_$$
      pg_create_db "$PG_DB"
      export SNG_PASS_DATABASE
      SNG_PASS_DATABASE=$(pg_db_url "$PG_DB")
    fi
    SNG_PASS_WORKSPACES=$n cargo bench -q -p sng-server --bench reconcile_pass 2>/dev/null | grep -v '^$' || die "the pass bench failed at $n"
    [ -z "${PG_DB:-}" ] || pg_drop_db "$PG_DB"
  done
  echo '```'
  echo
fi

if has hops; then
  export BENCH_ITERATIONS=${BENCH_HOPS_ITERATIONS:-1} BENCH_IDLE=${BENCH_HOPS_IDLE:-10000} SNG_BIN=$SNG
  echo "### A chain of ${BENCH_CHAIN:-50} (bench/dependency-hops.sh)"
  echo
  BENCH_SHAPE=chain BENCH_LINKS=${BENCH_CHAIN:-50} bench/dependency-hops.sh
  echo
  echo "### A fan-out of 1 → ${BENCH_FANOUT:-200} (bench/dependency-hops.sh, BENCH_SHAPE=fanout)"
  echo
  BENCH_SHAPE=fanout BENCH_FANOUT=${BENCH_FANOUT:-200} bench/dependency-hops.sh
  echo
fi

if has restart; then
  echo "### Restart with ${BENCH_RESTART_N:-1000} Ready workspaces (bench/restart-and-burst.sh, part 1)"
  echo
  SNG_BIN=$SNG BENCH_RESTART_N=${BENCH_RESTART_N:-1000} BENCH_BURST=0 BENCH_BURST_ON_RESTART=0 \
    BENCH_IDLE_SECONDS=$WINDOW bench/restart-and-burst.sh
  echo
fi
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
