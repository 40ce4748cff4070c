#!/usr/bin/env bash
# Reconciler at scale (issue 4, "Benchmark"): a restart with many Ready workspaces, and a burst of
# new workspaces on the default run limit.
#
#   1. Restart. One server on a fresh data dir gets BENCH_RESTART_N (default 1000) workspaces of a
#      small module (examples/modules/pet: one terraform_data), applied as multi-document files of
#      100, and is waited on until all are Ready (that creation is reported too). The server is
#      stopped with SIGTERM and started again on the same data dir. Measured:
#      (a) from the start of the new process until GET /healthz answers, and until
#          `sng kind get workspaces -o json` has returned the list of all N (target < 2 s);
#      (b) engine runs started after the restart, from GET /api/v1/stats (admin token):
#          runsStarted, runsActive, reconcilePasses (target zero runs); the runs table of the
#          store is counted as well (still exactly N runs, all Succeeded);
#      (c) CPU time of the server process (utime+stime from /proc/PID/stat)
#          over BENCH_IDLE_SECONDS (default 60) of idleness starting once the list answered,
#          sampled every second (target near zero).
#      Then, for the analysis (BENCH_BURST_ON_RESTART=0 skips it), the burst of part 2 on that
#      restarted server, which holds the N Ready workspaces: what a reconcile pass over all
#      workspaces on every wake costs.
#   2. Burst. A fresh server with the default --max-concurrent-runs (the number of cores) and a
#      warm module cache (one discarded workspace first) gets BENCH_BURST_N (default 200) new
#      workspaces of the same module in one multi-document `sng apply`; time from just before
#      `sng apply` until all are Ready (/api/v1/stats polled every 50 ms, then the list checked). The reference is the
#      bare engine: BENCH_BARE_N (default 10) runs of the same module by hand, one at a time
#      (init, plan -out, show -json, apply, output -json, local backend, as bench/run-overhead.sh),
#      median × BURST_N / nproc. Target: burst total ≤ 1.2× that.
#      For the analysis: the same BURST_N bare runs by hand with nproc in parallel (what the engine
#      alone achieves on this machine; BENCH_BARE_PARALLEL=0 skips it), the server's own CPU time
#      and reconcile passes during the burst, and the engine steps sng recorded for each run.
#
# Timing: wall clock, bash's EPOCHREALTIME (no fork inside the measured interval) and python3's
# time.time() (the same clock) in the pollers. Readiness of the registry and the servers is polled
# on a condition, never assumed after a sleep.
#
# Environment: BENCH_RESTART_N (default 1000), BENCH_BURST_N (default 200), BENCH_BARE_N (default
# 10), BENCH_IDLE_SECONDS (default 60), BENCH_BARE_PARALLEL (1/0, default 1), BENCH_RESTART=0 or
# BENCH_BURST=0 to skip a part, SNG_BIN (skip the build), SNG_ENGINE (default .tools/bin/tofu),
# SNG_DOCKER_REGISTRY (default /usr/bin/docker-registry), BENCH_SNG_LOG (server log filter,
# default info), BENCH_KEEP=1 keeps the temporary directory (data dirs and server logs),
# BENCH_CGROUP=0 turns off the CPU accounting below, BENCH_MAX_CONCURRENT_RUNS=N passes
# --max-concurrent-runs N to the servers (an experiment: the targets are for the default),
# BENCH_RESTART_FROM=DIR restarts a copy of DIR (a data directory an earlier run kept, holding
# BENCH_RESTART_N Ready workspaces; SQLite) instead of creating them again,
# BENCH_STORE (sqlite, the default, or postgres: the servers share a fresh database of
# scripts/pg.sh's PostgreSQL, dropped at the end unless BENCH_KEEP=1).
#
# CPU accounting: when the cgroup-v1 cpuacct hierarchy is writable (root), each measured group of
# processes (a server and everything it starts: bwrap, engines; the bare runs) is moved into its
# own cgroup under /sys/fs/cgroup/cpuacct/sng-bench.PID.*, removed at exit, so that the CPU of the
# runs is counted exactly even when other work shares the machine (the engines run under bwrap,
# whose inner processes are not accounted to the server's cutime).
#
# Prints a Markdown report on stdout; progress goes to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/bench/lib.sh"

RESTART_N=${BENCH_RESTART_N:-1000}
BURST_N=${BENCH_BURST_N:-200}
BARE_N=${BENCH_BARE_N:-10}
IDLE=${BENCH_IDLE_SECONDS:-60}
BARE_PARALLEL=${BENCH_BARE_PARALLEL:-1}
DO_RESTART=${BENCH_RESTART:-1}
DO_BURST=${BENCH_BURST:-1}
BURST_ON_RESTART=${BENCH_BURST_ON_RESTART:-1}
SERVER_LOG_FILTER=${BENCH_SNG_LOG:-info}
ENGINE=${SNG_ENGINE:-$ROOT/.tools/bin/tofu}
REGISTRY_BIN=${SNG_DOCKER_REGISTRY:-/usr/bin/docker-registry}
MODULE=$ROOT/examples/modules/pet
BATCH=100
CORES=$(nproc)
CLK_TCK=$(getconf CLK_TCK)
CG_ROOT=/sys/fs/cgroup/cpuacct
CG_ON=${BENCH_CGROUP:-1}
if [ "$CG_ON" = 1 ] && ! { [ -w "$CG_ROOT" ] && [ -f "$CG_ROOT/cpuacct.usage" ]; }; then CG_ON=0; fi
CGROUPS=()
SERVER_ARGS=()
[ -z "${BENCH_MAX_CONCURRENT_RUNS:-}" ] || SERVER_ARGS=(--max-concurrent-runs "$BENCH_MAX_CONCURRENT_RUNS")

for v in RESTART_N BURST_N BARE_N IDLE; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"
done
check_tools
pick_sng

put() { printf '%s\t%s\n' "$1" "$2" >>"$RESULTS"; }

BARE_PIDS=()
cleanup() {
  local p
  for p in "${BARE_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  stop_server
  stop_registry
  for p in "${CGROUPS[@]}"; do cg_remove "$p"; done
  if [ -n "${PG_DB:-}" ]; then
    if [ "${BENCH_KEEP:-0}" = 1 ]; then say "kept: database $PG_DB"; else pg_drop_db "$PG_DB"; fi
  fi
  remove_work
}
# Results: KEY<TAB>VALUE lines, read by the report at the end.
make_work sng-bench-rb

# cpu_ticks PID VAR (bench/lib.sh): the process's own times; its children's are not used: the
# engines run under bwrap, whose inner processes are not accounted to the server's cutime.

# machine_ticks VAR: busy and total CPU ticks of the whole machine (first line of /proc/stat) into
# VAR_busy and VAR_total. No fork.
machine_ticks() {
  local cpu user nice system idle iowait irq softirq steal rest
  read -r cpu user nice system idle iowait irq softirq steal rest </proc/stat
  printf -v "$1_busy" '%s' "$((user + nice + system + irq + softirq + steal))"
  printf -v "$1_total" '%s' "$((user + nice + system + idle + iowait + irq + softirq + steal))"
}

# cg_new NAME: create the cgroup NAME (no-op without accounting).
cg_new() {
  [ "$CG_ON" = 1 ] || return 0
  mkdir "$CG_ROOT/sng-bench.$$.$1"
  CGROUPS+=("$1")
}
# cg_add NAME PID: move PID (its future children follow) into the cgroup NAME.
cg_add() {
  [ "$CG_ON" = 1 ] || return 0
  echo "$2" >"$CG_ROOT/sng-bench.$$.$1/cgroup.procs"
}
# cg_usage NAME VAR: CPU time of the cgroup NAME so far, in ms, into VAR (0 without accounting).
cg_usage() {
  local ns=0
  [ "$CG_ON" = 1 ] && read -r ns <"$CG_ROOT/sng-bench.$$.$1/cpuacct.usage"
  printf -v "$2" '%s' "$((ns / 1000000))"
}
# cg_remove NAME: move what is left back to the root, remove the cgroup.
cg_remove() {
  local d=$CG_ROOT/sng-bench.$$.$1 pid
  [ -d "$d" ] || return 0
  while read -r pid; do echo "$pid" >"$CG_ROOT/cgroup.procs" 2>/dev/null || true; done <"$d/cgroup.procs"
  rmdir "$d" 2>/dev/null || true
}

# stats KEY_PREFIX: record reconcilePasses, runsStarted, runsActive of /api/v1/stats.
stats() {
  local body
  body=$(curl -sf -H "Authorization: Bearer $SNG_TOKEN" "$SNG_SERVER/api/v1/stats") ||
    die "GET /api/v1/stats failed"
  python3 - "$1" "$body" >>"$RESULTS" <<'EOF'
import json, sys
prefix, s = sys.argv[1], json.loads(sys.argv[2])
for k in ("reconcilePasses", "runsStarted", "runsActive"):
    print(f"{prefix}.{k}\t{s[k]}")
EOF
}
get() { awk -F'\t' -v k="$1" '$1 == k { v = $2 } END { print v }' "$RESULTS"; }

# wait_ready PREFIX COUNT BASE T0_US POLL_S TIMEOUT_S: wait until COUNT workspaces named PREFIX*
# are Ready for their current generation with no run; print the ms since T0_US and the number of
# polls. To weigh little on the server, /api/v1/stats is polled every POLL_S until runsStarted has
# grown by COUNT from BASE and runsActive is 0 (a run writes its status before it leaves the
# active set), then the list API checks the conditions (and is polled from then on if not all
# are Ready). Fails on a Failed workspace or a timeout.
wait_ready() {
  python3 - "$@" <<'EOF'
import http.client, json, os, sys, time, urllib.parse
prefix, count, base = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t0, poll, timeout = int(sys.argv[4]) / 1e6, float(sys.argv[5]), float(sys.argv[6])
url = urllib.parse.urlparse(os.environ["SNG_SERVER"])
headers = {"Authorization": "Bearer " + os.environ["SNG_TOKEN"]}
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
def get(path):
    conn.request("GET", path, headers=headers)
    return json.loads(conn.getresponse().read())
polls, last_report = 0, time.time()
while True:
    s = get("/api/v1/stats")
    polls += 1
    now = time.time()
    if s["runsStarted"] - base >= count and s["runsActive"] == 0:
        break
    if now - t0 > timeout:
        sys.exit(f"bench: timed out: {s}")
    if now - last_report > 10:
        print(f"bench:   {s['runsStarted'] - base}/{count} runs started after {now - t0:.0f} s", file=sys.stderr)
        last_report = now
    time.sleep(poll)
while True:
    items = get("/api/v1/tenants/default/workspaces")["items"]
    polls += 1
    now = time.time()
    ready = failed = 0
    for ws in items:
        if not ws["metadata"]["name"].startswith(prefix):
            continue
        st = ws.get("status") or {}
        conds = {c["type"]: c for c in st.get("conditions") or []}
        current = st.get("observedGeneration") == ws["metadata"].get("generation")
        if current and not st.get("activeJob") and conds.get("Ready", {}).get("status") == "True":
            ready += 1
        elif current and conds.get("Failed", {}).get("status") == "True":
            failed += 1
            print(f"bench: {ws['metadata']['name']} failed: {conds['Failed'].get('message')}", file=sys.stderr)
    if ready >= count:
        print(round((now - t0) * 1000), polls)
        break
    if failed:
        sys.exit(1)
    if now - t0 > timeout:
        sys.exit(f"bench: timed out with {ready}/{count} Ready")
    time.sleep(poll)
EOF
}

# workspaces PREFIX FROM TO: a multi-document file of workspaces PREFIX-FROM … PREFIX-TO.
workspaces() {
  local i
  for i in $(seq "$2" "$3"); do
    echo ---
    workspace_doc "$1-$i" pet
  done
}

# store_runs DATA_DIR PREFIX KEY: count the runs of PREFIX* workspaces in the store (read-only),
# by phase, and the engine step sums; recorded under KEY. On PostgreSQL: the runs by phase.
store_runs() {
  if [ -n "${PG_DB:-}" ]; then
    pg_sql "$PG_DB" "SELECT phase, COUNT(*) FROM runs WHERE workspace LIKE '$2%' GROUP BY phase ORDER BY phase" |
      python3 -c 'import sys; rows=[l.strip().split("|") for l in sys.stdin if l.strip()]
print(f"{sys.argv[1]}.runs\t{sum(int(n) for _, n in rows)}")
print(f"{sys.argv[1]}.phases\t" + ",".join(f"{p}={n}" for p, n in rows))' "$3" >>"$RESULTS"
    return
  fi
  python3 - "$1/sng.db" "$2" "$3" >>"$RESULTS" <<'EOF'
import json, sqlite3, sys, statistics
db, prefix, key = sys.argv[1:4]
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
rows = [json.loads(r[0]) for r in c.execute("SELECT record FROM runs WHERE workspace LIKE ?", (prefix + "%",))]
phases = {}
for r in rows:
    phases[r["phase"]] = phases.get(r["phase"], 0) + 1
print(f"{key}.runs\t{len(rows)}")
print(f"{key}.phases\t" + ",".join(f"{k}={v}" for k, v in sorted(phases.items())))
steps = [sum(ms for _, ms in r.get("steps", [])) for r in rows if r["phase"] == "Succeeded"]
reused = sum(1 for r in rows if any(n == "init-reused" for n, _ in r.get("steps", [])))
print(f"{key}.init_reused\t{reused}")
if steps:
    print(f"{key}.engine_sum_ms\t{sum(steps)}")
    print(f"{key}.engine_median_ms\t{statistics.median(steps):.0f}")
    for name in ("init", "plan", "show", "apply"):
        v = [dict(r.get("steps", [])).get(name, 0) for r in rows if r["phase"] == "Succeeded"]
        print(f"{key}.step_{name}_median_ms\t{statistics.median(v):.0f}")
EOF
}

# --- bare engine --------------------------------------------------------------------------------
# bare_run DIR: the engine by hand in a fresh copy of the module, local backend; prints the ms of
# init,plan,show,apply,output on one line.
bare_run() {
  local root=$1 dir=$1/work log=$1/engine.log
  mkdir -p "$root"
  cp -r "$MODULE" "$dir"
  printf 'provider_installation {\n  direct {}\n}\n' >"$root/cli.tfrc"
  (
    cd "$dir"
    export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_CLI_CONFIG_FILE="$root/cli.tfrc"
    engine_steps "$log"
  ) || return 1
  grep -q "Resources: 1 added" "$log" || { cat "$log" >&2; return 1; }
  rm -rf "$root"
}

pg_server_store restart

# =================================================================================================
say "registry"
start_registry
push_module pet
put engine "$("$ENGINE" version 2>/dev/null | head -1 || true)"
put load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
put store "${BENCH_STORE:-sqlite}"

say "warm-up of the engine (not counted)"
bare_run "$WORK/bare-warmup" >/dev/null || die "bare warm-up run failed"

# --- 1. restart ---------------------------------------------------------------------------------
if [ "$DO_RESTART" = 1 ]; then
  D=$WORK/restart
  LOG=$WORK/restart.log
  if [ -n "${BENCH_RESTART_FROM:-}" ]; then
    # A copy of a data directory a previous run kept (BENCH_KEEP=1: WORK/restart, SQLite),
    # holding BENCH_RESTART_N Ready workspaces: the creation is not done again.
    [ -f "$BENCH_RESTART_FROM/sng.db" ] || die "BENCH_RESTART_FROM: no sng.db in $BENCH_RESTART_FROM"
    cp -r "$BENCH_RESTART_FROM" "$D"
    rm -f "$D/server.url"
    : >"$LOG"
  else
  say "restart: server 1 on a fresh data dir, $RESTART_N workspaces in files of $BATCH"
  start_server "$D" "$LOG"
  cg_new restart1
  cg_add restart1 "$SERVER_PID"
  files=()
  for from in $(seq 1 "$BATCH" "$RESTART_N"); do
    to=$((from + BATCH - 1))
    [ "$to" -le "$RESTART_N" ] || to=$RESTART_N
    workspaces ws "$from" "$to" >"$WORK/batch-$from.yaml"
    files+=("$WORK/batch-$from.yaml")
  done
  cpu_ticks "$SERVER_PID" c0
  machine_ticks m0
  cg_usage restart1 g0
  stamp t0
  for f in "${files[@]}"; do "$SNG" apply -f "$f" >/dev/null; done
  elapsed_ms "$t0" apply_ms
  read -r create_ms _ < <(wait_ready ws- "$RESTART_N" 0 "$t0" 0.1 $((600 + RESTART_N * 3))) ||
    die "the $RESTART_N workspaces did not become Ready (log: $LOG)"
  cpu_ticks "$SERVER_PID" c1
  machine_ticks m1
  cg_usage restart1 g1
  put create.all_cpu_ms "$((g1 - g0))"
  put create.apply_ms "$apply_ms"
  put create.total_ms "$create_ms"
  put create.server_cpu_ms "$(((c1 - c0) * 1000 / CLK_TCK))"
  put create.machine_busy_pct "$(((m1_busy - m0_busy) * 100 / (m1_total - m0_total)))"
  stats create
  say "  $RESTART_N Ready in $((create_ms / 1000)) s; stopping with SIGTERM"
  stamp t0
  stop_server
  elapsed_ms "$t0" stop_ms
  put stop_ms "$stop_ms"
  [ ! -e "$D/server.url" ] || die "server.url still there after the stop"
  fi

  # The runs in the store before the restart: the restart adds none.
  store_runs "$D" ws- restart.before
  say "restart: server 2 on the same data dir"
  echo "----- restart -----" >>"$LOG"
  stamp t0
  launch_server "$D" "$LOG"
  # (a) /healthz, then the list of all workspaces. Polled every 5 ms on the files, by curl on the port.
  until [ -s "$D/server.url" ] && curl -sf -o /dev/null "$(<"$D/server.url")/healthz" 2>/dev/null; do
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOG" >&2; die "server 2 died"; }
    sleep 0.005
  done
  elapsed_ms "$t0" health_ms
  use_server
  stamp t1
  "$SNG" kind get workspaces -o json >"$WORK/list.json"
  elapsed_ms "$t0" api_ms
  elapsed_ms "$t1" list_ms
  cpu_ticks "$SERVER_PID" s0
  stamp idle0
  put restart.health_ms "$health_ms"
  put restart.api_ms "$api_ms"
  put restart.list_ms "$list_ms"
  put restart.startup_cpu_ms "$((s0 * 1000 / CLK_TCK))"
  python3 - "$WORK/list.json" "$RESTART_N" >>"$RESULTS" <<'EOF' || die "the list after the restart is not complete"
import json, sys
items = json.load(open(sys.argv[1]))
items = items["items"] if isinstance(items, dict) else items
n = int(sys.argv[2])
ready = sum(1 for ws in items if any(c["type"] == "Ready" and c["status"] == "True"
                                     for c in (ws.get("status") or {}).get("conditions") or []))
print(f"restart.listed\t{len(items)}")
print(f"restart.listed_ready\t{ready}")
assert len(items) == n and ready == n, (len(items), ready)
EOF
  stats restart.at_api
  # The first full reconcile pass of the new process: `reconcilePasses` (counted at the end of a
  # pass) reaches 1; polled every 20 ms, from the process start.
  until [ "$(curl -sf -H "Authorization: Bearer $SNG_TOKEN" "$SNG_SERVER/api/v1/stats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["reconcilePasses"])')" -ge 1 ] 2>/dev/null; do
    kill -0 "$SERVER_PID" 2>/dev/null || die "server 2 died"
    sleep 0.02
  done
  elapsed_ms "$t0" first_pass_ms
  put restart.first_pass_ms "$first_pass_ms"
  say "  API answered after $api_ms ms (/healthz after $health_ms ms); first pass done after $first_pass_ms ms; idle for $IDLE s"
  # (c) idle: CPU every second.
  samples=()
  prev=$s0
  for i in $(seq 1 "$IDLE"); do
    sleep 1
    cpu_ticks "$SERVER_PID" s || die "server 2 died"
    samples+=("$((s - prev))")
    prev=$s
  done
  cpu_ticks "$SERVER_PID" s1
  elapsed_ms "$idle0" idle_ms
  put idle.ms "$idle_ms"
  put idle.cpu_ms "$(((s1 - s0) * 1000 / CLK_TCK))"
  put idle.ticks_per_second "$(IFS=,; echo "${samples[*]}")"
  put idle.clk_tck "$CLK_TCK"
  put idle.rss_kb "$(awk '/^VmRSS/ { print $2 }' "/proc/$SERVER_PID/status")"
  stats restart.after_idle
  store_runs "$D" ws- restart.store
  put restart.log_runs_started_after "$(sed -n '/^----- restart -----$/,$p' "$LOG" | grep -c 'run started' || true)"
  if [ "$BURST_ON_RESTART" = 1 ]; then
    say "restart: burst of $BURST_N more workspaces on this server (holding $RESTART_N)"
    cg_new restart2
    cg_add restart2 "$SERVER_PID"
    workspaces more 1 "$BURST_N" >"$WORK/more.yaml"
    stats more.before
    cpu_ticks "$SERVER_PID" c0
    cg_usage restart2 g0
    machine_ticks m0
    stamp t0
    "$SNG" apply -f "$WORK/more.yaml" >/dev/null
    read -r more_ms _ < <(wait_ready more- "$BURST_N" "$(get more.before.runsStarted)" "$t0" 0.05 $((300 + BURST_N * 10))) ||
      die "the burst on the restarted server did not become Ready (log: $LOG)"
    cpu_ticks "$SERVER_PID" c1
    cg_usage restart2 g1
    machine_ticks m1
    put more.other_cpu_ms "$(((m1_busy - m0_busy) * 1000 / CLK_TCK - (g1 - g0)))"
    put more.total_ms "$more_ms"
    put more.server_cpu_ms "$(((c1 - c0) * 1000 / CLK_TCK))"
    put more.all_cpu_ms "$((g1 - g0))"
    stats more.after
    store_runs "$D" more- more.store
  fi
  stop_server
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$D"
fi

# --- 2. burst -----------------------------------------------------------------------------------
if [ "$DO_BURST" = 1 ]; then
  say "burst: bare engine, $BARE_N runs one at a time"
  : >"$WORK/bare.txt"
  cg_new bare
  machine_ticks m0
  (
    cg_add bare "$BASHPID"
    for i in $(seq 1 "$BARE_N"); do
      bare_run "$WORK/bare-$i" >>"$WORK/bare.txt" || exit 1
    done
  ) || die "a bare run failed"
  cg_usage bare g
  machine_ticks m1
  put bare.cpu_ms_per_run "$((g / BARE_N))"
  put bare.other_cpu_ms "$(((m1_busy - m0_busy) * 1000 / CLK_TCK - g))"
  put bare.samples "$(paste -sd';' "$WORK/bare.txt")"

  if [ "$BARE_PARALLEL" = 1 ]; then
    say "burst: bare engine, $BURST_N runs, $CORES at a time (control)"
    cg_new parallel
    : >"$WORK/parallel.txt"
    machine_ticks m0
    stamp t0
    BARE_PIDS=()
    for w in $(seq 0 $((CORES - 1))); do
      (
        cg_add parallel "$BASHPID"
        for i in $(seq "$w" "$CORES" $((BURST_N - 1))); do
          bare_run "$WORK/par-$i" >>"$WORK/parallel.txt" || exit 1
        done
      ) &
      BARE_PIDS+=($!)
    done
    for p in "${BARE_PIDS[@]}"; do wait "$p" || die "a parallel bare run failed"; done
    BARE_PIDS=()
    elapsed_ms "$t0" par_ms
    machine_ticks m1
    cg_usage parallel g
    put bare_parallel.other_cpu_ms "$(((m1_busy - m0_busy) * 1000 / CLK_TCK - g))"
    put bare_parallel.total_ms "$par_ms"
    put bare_parallel.cpu_ms_per_run "$((g / BURST_N))"
    put bare_parallel.samples "$(paste -sd';' "$WORK/parallel.txt")"
  fi

  D=$WORK/burst
  LOG=$WORK/burst.log
  say "burst: fresh server (default --max-concurrent-runs), warm-up workspace (not counted)"
  start_server "$D" "$LOG"
  cg_new burst
  cg_add burst "$SERVER_PID"
  workspaces warm 0 0 >"$WORK/warm.yaml"
  stamp t0
  "$SNG" apply -f "$WORK/warm.yaml" >/dev/null
  wait_ready warm- 1 0 "$t0" 0.05 300 >/dev/null || die "warm-up failed (log: $LOG)"
  workspaces burst 1 "$BURST_N" >"$WORK/burst.yaml"
  stats burst.before
  say "burst: $BURST_N workspaces in one apply"
  cpu_ticks "$SERVER_PID" c0
  machine_ticks m0
  cg_usage burst g0
  stamp t0
  "$SNG" apply -f "$WORK/burst.yaml" >/dev/null
  elapsed_ms "$t0" apply_ms
  read -r burst_ms polls < <(wait_ready burst- "$BURST_N" "$(get burst.before.runsStarted)" "$t0" 0.05 $((300 + BURST_N * 10))) ||
    die "the burst did not become Ready (log: $LOG)"
  cpu_ticks "$SERVER_PID" c1
  machine_ticks m1
  cg_usage burst g1
  put burst.all_cpu_ms "$((g1 - g0))"
  put burst.apply_ms "$apply_ms"
  put burst.total_ms "$burst_ms"
  put burst.polls "$polls"
  put burst.server_cpu_ms "$(((c1 - c0) * 1000 / CLK_TCK))"
  put burst.machine_busy_pct "$(((m1_busy - m0_busy) * 100 / (m1_total - m0_total)))"
  put burst.other_cpu_ms "$(((m1_busy - m0_busy) * 1000 / CLK_TCK - (g1 - g0)))"
  put burst.t0_us "$t0"
  stats burst.after
  store_runs "$D" burst- burst.store
  # Per-run wall time from the server log (run started … run ended), and when runs started.
  python3 - "$LOG" "$t0" >>"$RESULTS" <<'EOF'
import re, sys, datetime, statistics
log, t0 = sys.argv[1], int(sys.argv[2]) / 1e6
ansi = re.compile(r"\x1b\[[0-9;]*m")
start, end = {}, {}
for line in open(log, errors="replace"):
    line = ansi.sub("", line)
    m = re.match(r"(\S+Z)\s+\w+\s.*?run(?:=| = )(run-[0-9a-f]+)", line)
    if not m or "burst-" not in line and "run ended" not in line:
        continue
    t = datetime.datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp()
    if "run started" in line and "burst-" in line:
        start[m.group(2)] = t
    elif "run ended" in line:
        end[m.group(2)] = t
runs = [(start[r], end[r]) for r in start if r in end]
if runs:
    d = [e - s for s, e in runs]
    print(f"burst.log_runs\t{len(runs)}")
    print(f"burst.run_wall_sum_ms\t{sum(d) * 1000:.0f}")
    print(f"burst.run_wall_median_ms\t{statistics.median(d) * 1000:.0f}")
    print(f"burst.first_start_ms\t{(min(s for s, _ in runs) - t0) * 1000:.0f}")
    print(f"burst.last_start_ms\t{(max(s for s, _ in runs) - t0) * 1000:.0f}")
    print(f"burst.last_end_ms\t{(max(e for _, e in runs) - t0) * 1000:.0f}")
EOF
  stop_server
fi
put load_after "$(cut -d' ' -f1-3 /proc/loadavg)"

# --- report -------------------------------------------------------------------------------------
python3 - "$RESULTS" "$("$SNG" --version 2>/dev/null || echo sng)" "$SNG_DESC" "$RESTART_N" "$BURST_N" \
  "$BARE_N" "$CORES" "$DO_RESTART" "$DO_BURST" <<'EOF'
import datetime, os, statistics, sys
path, sng_version, commit = sys.argv[1:4]
restart_n, burst_n, bare_n, cores = (int(x) for x in sys.argv[4:8])
do_restart, do_burst = sys.argv[8] == "1", sys.argv[9] == "1"
r = {}
for line in open(path):
    k, v = line.rstrip("\n").split("\t", 1)
    r[k] = v
def i(k):
    return int(float(r[k]))
def verdict(ok):
    return "met" if ok else "**missed**"
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
print(f"Machine: {os.cpu_count()} CPUs (`nproc` = {cores}), {cpu}, {mem / 2**20:.0f} GiB RAM; "
      f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; engine {r['engine']}; {sng_version} ({commit}); store {r.get('store', 'sqlite')}.")
print(f"Load average (1, 5, 15 min) before: {r['load_before']}; after: {r['load_after']}.")
print()
targets = []
if do_restart:
    n = restart_n
    print(f"#### Restart with {n} Ready workspaces")
    print()
    print("| measure | value |")
    print("|---|---:|")
    if "create.total_ms" in r:
        print(f"| creation: {n} workspaces applied in files of 100, until all Ready | {i('create.total_ms') / 1000:.1f} s "
              f"(apply {i('create.apply_ms')} ms; {r['create.reconcilePasses']} reconcile passes; server CPU "
              f"{i('create.server_cpu_ms') / 1000:.1f} s, with bwrap and engines {i('create.all_cpu_ms') / 1000:.1f} s; machine {r['create.machine_busy_pct']} % busy) |")
        print(f"| SIGTERM until the process exited | {r['stop_ms']} ms |")
    else:
        print(f"| the data directory | a copy of {os.environ['BENCH_RESTART_FROM']} (kept by an earlier run) |")
    print(f"| (a) process start → `GET /healthz` answers | {r['restart.health_ms']} ms |")
    print(f"| (a) process start → `sng kind get workspaces -o json` returned all {n} | {r['restart.api_ms']} ms "
          f"(the list itself {r['restart.list_ms']} ms) |")
    print(f"| server CPU from process start to that answer | {i('restart.startup_cpu_ms')} ms |")
    print(f"| process start → first full reconcile pass done (`reconcilePasses` ≥ 1, polled every 20 ms) | {r.get('restart.first_pass_ms', '?')} ms |")
    print(f"| (b) `runsStarted` / `runsActive` at the answer | {r['restart.at_api.runsStarted']} / {r['restart.at_api.runsActive']} |")
    print(f"| (b) `runsStarted` / `runsActive` after the idle minute | {r['restart.after_idle.runsStarted']} / {r['restart.after_idle.runsActive']} |")
    print(f"| (b) `run started` lines in the server log after the restart | {r['restart.log_runs_started_after']} |")
    print(f"| (b) runs in the store after the idle minute | {r['restart.store.runs']} ({r['restart.store.phases']}) |")
    print(f"| `reconcilePasses` at the answer → after the idle minute | {r['restart.at_api.reconcilePasses']} → {r['restart.after_idle.reconcilePasses']} |")
    idle_s = i("idle.ms") / 1000
    cpu_ms = i("idle.cpu_ms")
    tck = int(r["idle.clk_tck"])
    per_s = [int(x) * 1000 // tck for x in r["idle.ticks_per_second"].split(",") if x]
    busy = [f"{k + 1} s: {v} ms" for k, v in enumerate(per_s) if v]
    print(f"| (c) server CPU over {idle_s:.1f} s idle after the answer | {cpu_ms / 1000:.2f} s = "
          f"{cpu_ms / 10 / idle_s:.2f} % of one core |")
    print(f"| (c) seconds of that minute with CPU (ms of CPU in that second) | {', '.join(busy) or 'none'} |")
    print(f"| server RSS after the idle minute | {i('idle.rss_kb') / 1024:.0f} MiB |")
    print()
    runs_after = i("restart.after_idle.runsStarted")
    targets.append(("restart: API answering < 2 s", f"{i('restart.api_ms')} ms (healthz {r['restart.health_ms']} ms)",
                    verdict(i("restart.api_ms") < 2000)))
    targets.append(("restart: first full pass < 2 s", f"{r.get('restart.first_pass_ms', '?')} ms",
                    verdict(i("restart.first_pass_ms") < 2000)))
    targets.append(("restart: zero engine runs", f"{runs_after} started; store {r['restart.store.runs']} runs for {n} workspaces "
                    f"({r['restart.before.runs']} before the restart)",
                    verdict(runs_after == 0 and i("restart.store.runs") == i("restart.before.runs"))))
    targets.append(("restart: idle CPU near zero over a minute", f"{cpu_ms / 1000:.2f} s CPU = {cpu_ms / 10 / idle_s:.2f} % of a core",
                    verdict(cpu_ms / 10 / idle_s < 1.0)))
if do_burst:
    steps = ["init", "plan", "show", "apply", "output"]
    def parse(key):
        return [[int(x) for x in v.split(",")] for v in r[key].split(";") if v]
    def steps_txt(samples):
        return ", ".join(f"{n} {statistics.median(s[k] for s in samples):.0f}" for k, n in enumerate(steps))
    samples = parse("bare.samples")
    totals = [sum(s) for s in samples]
    med = statistics.median(totals)
    ref = med * burst_n / cores
    total = i("burst.total_ms")
    def cpu(key, per):
        return f"{i(key) / per:.0f} ms CPU per run" if i(key) else "CPU not measured"
    limit = os.environ.get("BENCH_MAX_CONCURRENT_RUNS")
    print(f"#### Burst of {burst_n} new workspaces, `--max-concurrent-runs` = " + (f"{limit} (not the default)" if limit else f"{cores} (default)"))
    print()
    print("| measure | value |")
    print("|---|---:|")
    print(f"| bare engine, one run by hand, one at a time (median of {len(totals)}; min {min(totals)}) | {med:.0f} ms "
          f"({steps_txt(samples)}); {cpu('bare.cpu_ms_per_run', 1)} |")
    print(f"| reference: median × {burst_n} / {cores} cores | {ref / 1000:.1f} s |")
    if "bare_parallel.total_ms" in r:
        p = i("bare_parallel.total_ms")
        ps = parse("bare_parallel.samples")
        print(f"| control: the same {burst_n} bare runs by hand, {cores} at a time | {p / 1000:.1f} s = {p / ref:.2f}× the reference; "
              f"per run {statistics.median(sum(s) for s in ps):.0f} ms ({steps_txt(ps)}); {cpu('bare_parallel.cpu_ms_per_run', 1)} |")
    print(f"| **sng: `sng apply` of {burst_n} → all Ready** | **{total / 1000:.1f} s = {total / ref:.2f}× the reference** |")
    print(f"| of which `sng apply` returned after | {r['burst.apply_ms']} ms |")
    if "burst.first_start_ms" in r:
        print(f"| first run started / last run started / last run ended (server log) | {i('burst.first_start_ms') / 1000:.1f} s / "
              f"{i('burst.last_start_ms') / 1000:.1f} s / {i('burst.last_end_ms') / 1000:.1f} s |")
        print(f"| run wall time in sng (`run started` → `run ended`), median; sum / {cores} | {r['burst.run_wall_median_ms']} ms; "
              f"{i('burst.run_wall_sum_ms') / cores / 1000:.1f} s |")
    print(f"| engine steps sng recorded per run, median (init, plan, show, apply; no output process) | {r['burst.store.engine_median_ms']} ms "
          f"({r['burst.store.step_init_median_ms']}, {r['burst.store.step_plan_median_ms']}, {r['burst.store.step_show_median_ms']}, {r['burst.store.step_apply_median_ms']}) |")
    print(f"| runs in the store; of which reused an initialised directory (no `init` process) | {r['burst.store.runs']} ({r['burst.store.phases']}); {r.get('burst.store.init_reused', '?')} |")
    print(f"| reconcile passes during the burst | {i('burst.after.reconcilePasses') - i('burst.before.reconcilePasses')} |")
    print(f"| CPU: server, bwrap and engines / the server process alone | {cpu('burst.all_cpu_ms', burst_n)} / "
          f"{i('burst.server_cpu_ms') / burst_n:.0f} ms per run ({i('burst.server_cpu_ms') / 1000:.1f} s in all) |")
    if i("burst.all_cpu_ms"):
        print(f"| CPU of other processes on the machine meanwhile (bare runs one at a time / control / sng burst) | "
              f"{max(0, i('bare.other_cpu_ms')) / 1000:.1f} s / {max(0, i('bare_parallel.other_cpu_ms')) / 1000 if 'bare_parallel.other_cpu_ms' in r else 0:.1f} s / "
              f"{max(0, i('burst.other_cpu_ms')) / 1000:.1f} s |")
    if "more.total_ms" in r:
        m = i("more.total_ms")
        print(f"| *the same burst on the restarted server of part 1, which holds {restart_n} Ready workspaces* | "
              f"*{m / 1000:.1f} s = {m / ref:.2f}× the reference; {i('more.after.reconcilePasses') - i('more.before.reconcilePasses')} passes; "
              f"server process {i('more.server_cpu_ms') / burst_n:.0f} ms CPU per run ({i('more.server_cpu_ms') / 1000:.1f} s in all); "
              f"{cpu('more.all_cpu_ms', burst_n)} with bwrap and engines; engine steps median {r['more.store.engine_median_ms']} ms; "
              f"other processes {max(0, i('more.other_cpu_ms')) / 1000:.1f} s CPU meanwhile* |")
    print()
    targets.append((f"burst: total ≤ 1.2× (bare median × {burst_n} / cores)", f"{total / 1000:.1f} s vs {ref / 1000:.1f} s = {total / ref:.2f}×",
                    verdict(total <= 1.2 * ref)))
print("| target | measured | verdict |")
print("|---|---|---|")
for t in targets:
    print("| " + " | ".join(t) + " |")
EOF
