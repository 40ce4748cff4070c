#!/usr/bin/env bash
# Several replicas on PostgreSQL (issue 14, item 6), side by side in one run:
#
#   1. List. One server on SQLite (its data dir) and one on PostgreSQL (a fresh database) are
#      given the same BENCH_LIST_N (default 10000) suspended workspaces (`spec.suspend: true`: no
#      run starts), applied with `sng apply -f` in multi-document files of BENCH_LIST_BATCH
#      (default 500). Once every workspace has its status and the servers are idle, the list is
#      paged through (`GET /api/v1/tenants/default/workspaces?limit=100`, following
#      `metadata.continue`) BENCH_LIST_ROUNDS (default 5) times per backend, the backends
#      interleaved pass by pass, one keep-alive connection each (python3 http.client); every page
#      request is timed. Reported: page p50, p99, max, and the time of a whole pass, per backend.
#   2. Apply → run started. On a fresh database, with 1 replica and then with 3 (same database,
#      same --master-key-file, own data dirs and ports; the admin token the first replica wrote is
#      copied to the others' data dirs), BENCH_LATENCY_N (default 20) new workspaces of a small
#      module (examples/modules/pet) are applied one at a time (`POST /api/v1/tenants/default/apply`,
#      the request `sng apply` makes) through the replicas in turn; from the apply's answer, the
#      newest run of the workspace (`GET …/workspaces/NAME/runs?limit=1`) is polled every 5 ms
#      through the same replica until its phase is past `Queued` (Running, or already ended:
#      said); the next workspace is applied once this one is Ready. Warm-up workspaces first
#      (2 per replica, not counted: module caches, engine). p50/p99 of apply-answer → run started,
#      and which replica claimed each run (the jobs table's `agent`).
#   3. Runs over 3 replicas. On a fresh database, 3 replicas; BENCH_RUNS_N (default 1000)
#      workspaces of the same module applied with `sng apply -f` in files of 100, the files sent
#      to the replicas in turn; wall time from the first apply until all are Ready (the list
#      polled every second through replica 1). Then counted: through the API, every run of every
#      one of those workspaces (exactly one, Succeeded, no run id twice), and directly in the
#      database (psql): `runs` (count, distinct ids, by phase, workspaces with more than one run)
#      and `jobs` (a job's `epoch` is raised by every claim: epoch > 1 is a run dispatched twice;
#      who claimed: `agent`). Target: 0 dispatched twice.
#   4. Idle CPU of the 3 replicas. (a) With the BENCH_RUNS_N Ready workspaces of part 3, once the
#      replicas have settled: CPU time (utime+stime from /proc/PID/stat) of each replica over
#      BENCH_IDLE_SECONDS (default 60), sampled every second; and of PostgreSQL: every process of
#      the server (the postmaster and its children, from /proc: shared with whatever else uses
#      that server), and the backends connected to this database (pg_stat_activity). (b) The
#      same after BENCH_LIST_N suspended workspaces (those of part 1) are applied to the same
#      database too (BENCH_IDLE_SUSPENDED=0 skips it).
#
# PostgreSQL: scripts/pg.sh start (the one of the tests, port 55432; reused when it answers, never
# stopped here); this script creates its own databases (sng_bench_PID_*) and drops them at exit.
#
# Environment: BENCH_LIST_N (10000), BENCH_LIST_BATCH (500), BENCH_LIST_ROUNDS (5),
# BENCH_LATENCY_N (20), BENCH_RUNS_N (1000), BENCH_IDLE_SECONDS (60), BENCH_IDLE_SUSPENDED (1/0),
# BENCH_LIST=0, BENCH_LATENCY=0, BENCH_RUNS=0 to skip a part (BENCH_RUNS=0 skips part 4 too),
# SNG_BIN (skip the build), SNG_ENGINE (default .tools/bin/tofu), SNG_DOCKER_REGISTRY (default
# /usr/bin/docker-registry), BENCH_SNG_LOG (server log filter, default info), BENCH_KEEP=1 keeps
# the temporary directory (data dirs, server logs) and the databases.
#
# Prints a Markdown report on stdout; progress goes to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/bench/lib.sh"

LIST_N=${BENCH_LIST_N:-10000}
LIST_BATCH=${BENCH_LIST_BATCH:-500}
LIST_ROUNDS=${BENCH_LIST_ROUNDS:-5}
LAT_N=${BENCH_LATENCY_N:-20}
RUNS_N=${BENCH_RUNS_N:-1000}
IDLE=${BENCH_IDLE_SECONDS:-60}
IDLE_SUSPENDED=${BENCH_IDLE_SUSPENDED:-1}
DO_LIST=${BENCH_LIST:-1}
DO_LATENCY=${BENCH_LATENCY:-1}
DO_RUNS=${BENCH_RUNS:-1}
SERVER_LOG_FILTER=${BENCH_SNG_LOG:-info}
ENGINE=${SNG_ENGINE:-$ROOT/.tools/bin/tofu}
REGISTRY_BIN=${SNG_DOCKER_REGISTRY:-/usr/bin/docker-registry}
MODULE=$ROOT/examples/modules/pet
RUNS_BATCH=100
REPLICAS=3
CLK_TCK=$(getconf CLK_TCK)
SERVER_ARGS=()
REPLICA_PIDS=()
REPLICA_DIRS=()

for v in LIST_N LIST_BATCH LIST_ROUNDS LAT_N RUNS_N IDLE; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"
done
check_tools
pick_sng
pg_start

DB_PREFIX=sng_bench_$$
DATABASES=()
put() { printf '%s\t%s\n' "$1" "$2" >>"$RESULTS"; }
get() { awk -F'\t' -v k="$1" '$1 == k { v = $2 } END { print v }' "$RESULTS"; }

SQLITE_PID=
cleanup() {
  local d
  stop_process SQLITE_PID
  stop_replicas
  stop_registry
  if [ "${BENCH_KEEP:-0}" = 1 ]; then
    [ "${#DATABASES[@]}" = 0 ] || say "kept databases ${DATABASES[*]}"
  else
    for d in ${DATABASES[@]+"${DATABASES[@]}"}; do pg_drop_db "$d"; done
  fi
  remove_work
}
make_work sng-bench-replicas
KEY=$WORK/master.key
head -c 32 /dev/urandom >"$KEY"
chmod 600 "$KEY"

# new_db SUFFIX: a fresh database sng_bench_PID_SUFFIX (dropped at exit); its name into DB.
new_db() {
  DB=${DB_PREFIX}_$1
  pg_create_db "$DB"
  DATABASES+=("$DB")
}

# docs PREFIX FROM TO LABEL SUSPEND: a multi-document file of workspaces PREFIX-FROM … PREFIX-TO of
# bench/pet, labelled bench=LABEL, suspended when SUSPEND is 1.
docs() {
  python3 - "$@" "$REGISTRY" <<'EOF'
import sys
prefix, a, b, label, suspend, registry = sys.argv[1:7]
out = []
for i in range(int(a), int(b) + 1):
    out.append(f"""---
apiVersion: tofu.stackngo.io/v1alpha1
kind: Workspace
metadata:
  name: {prefix}-{i}
  labels:
    bench: {label}
spec:
{"  suspend: true" + chr(10) if suspend == "1" else ""}  module:
    source: oci://{registry}/bench/pet
    tag: "1.0.0"
""")
sys.stdout.write("".join(out))
EOF
}

# batch_files PREFIX N BATCH LABEL SUSPEND: write the files of PREFIX-1 … PREFIX-N, BATCH a file,
# under WORK/PREFIX/; their paths into FILES.
batch_files() {
  local from to
  FILES=()
  mkdir -p "$WORK/$1"
  for ((from = 1; from <= $2; from += $3)); do
    to=$((from + $3 - 1))
    [ "$to" -le "$2" ] || to=$2
    docs "$1" "$from" "$to" "$4" "$5" >"$WORK/$1/$from.yaml"
    FILES+=("$WORK/$1/$from.yaml")
  done
}

# apply_files URL…: `sng apply -f` of each file of FILES, through the URLs in turn (admin token).
apply_files() {
  local -a urls=("$@")
  local k=0 f
  for f in "${FILES[@]}"; do
    SNG_SERVER=${urls[k % ${#urls[@]}]} "$SNG" apply -f "$f" >/dev/null || die "sng apply -f $f failed"
    k=$((k + 1))
  done
}

# wait_statuses URL LABEL COUNT TIMEOUT_S [READY]: wait until the COUNT workspaces labelled
# bench=LABEL all have a Ready condition of their generation (with READY=1: Ready, status of
# their generation, no active job),
# the list paged (limit 500) every second; prints the ms waited. Fails on a Failed workspace or
# at the timeout.
wait_statuses() {
  python3 - "$@" <<'EOF'
import http.client, json, sys, time, urllib.parse
url, label, count, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
ready_wanted = len(sys.argv) > 5 and sys.argv[5] == "1"
import os
u = urllib.parse.urlparse(url)
h = {"Authorization": "Bearer " + os.environ["SNG_TOKEN"]}
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
t0 = time.time()
last = 0
while True:
    done = seen = failed = 0
    cont = None
    while True:
        q = f"/api/v1/tenants/default/workspaces?limit=500&labelSelector=bench%3D{label}"
        if cont:
            q += "&continue=" + urllib.parse.quote(cont)
        conn.request("GET", q, headers=h)
        body = json.loads(conn.getresponse().read())
        for ws in body.get("items", []):
            seen += 1
            st = ws.get("status") or {}
            conds = {c["type"]: c for c in st.get("conditions") or []}
            current = st.get("observedGeneration") == ws["metadata"].get("generation")
            if ready_wanted:
                if current and not st.get("activeJob") and conds.get("Ready", {}).get("status") == "True":
                    done += 1
                elif current and conds.get("Failed", {}).get("status") == "True":
                    failed += 1
                    print(f"bench: {ws['metadata']['name']} failed: {conds['Failed'].get('message')}", file=sys.stderr)
            elif conds.get("Ready", {}).get("observedGeneration") == ws["metadata"].get("generation"):
                done += 1  # a suspended workspace has its Ready condition (reason Suspended) only
        cont = (body.get("metadata") or {}).get("continue")
        if not cont:
            break
    now = time.time()
    if done >= count:
        print(round((now - t0) * 1000))
        break
    if failed:
        sys.exit(1)
    if now - t0 > timeout:
        sys.exit(f"bench: timed out with {done}/{count} (of {seen} listed)")
    if now - last > 15:
        print(f"bench:   {done}/{count} {'Ready' if ready_wanted else 'with a status'} after {now - t0:.0f} s", file=sys.stderr)
        last = now
    time.sleep(1)
EOF
}

# settle MAX_S PID…: wait until the processes together used less than 2 % of a core over each of
# 3 consecutive seconds (at most MAX_S seconds); prints the seconds waited.
settle() {
  local max=$1 quiet=0 waited=0 p t prev=0 now_t
  shift
  for p in "$@"; do cpu_ticks "$p" t; prev=$((prev + t)); done
  while [ "$quiet" -lt 3 ] && [ "$waited" -lt "$max" ]; do
    sleep 1
    waited=$((waited + 1))
    now_t=0
    for p in "$@"; do cpu_ticks "$p" t; now_t=$((now_t + t)); done
    if [ $(((now_t - prev) * 1000 / CLK_TCK)) -lt 20 ]; then quiet=$((quiet + 1)); else quiet=0; fi
    prev=$now_t
  done
  echo "$waited"
}

# pg_ticks DB VAR: CPU ticks (utime+stime) of every process of the PostgreSQL server (the postmaster
# and its children) as "PID:TICKS …" into VAR_all, and of the backends connected to DB into
# VAR_db. Empty when the postmaster's process cannot be read.
pg_ticks() {
  local pm pid t all= db= ppid line rest
  pm=$(pg_postmaster_pid)
  if [ -n "$pm" ] && [ -r "/proc/$pm/stat" ]; then
    cpu_ticks "$pm" t && all="$pm:$t"
    for pid in $(ps -o pid= --ppid "$pm"); do
      cpu_ticks "$pid" t 2>/dev/null && all+=" $pid:$t"
    done
    for pid in $(pg_sql postgres "SELECT pid FROM pg_stat_activity WHERE datname = '$1'"); do
      cpu_ticks "$pid" t 2>/dev/null && db+=" $pid:$t"
    done
  fi
  printf -v "$2_all" '%s' "$all"
  printf -v "$2_db" '%s' "${db# }"
}
# ticks_delta "PID:T …" "PID:T …": ms of CPU between two pg_ticks samples (a process that started
# in between counts from 0; one that ended in between is lost).
ticks_delta() {
  python3 - "$1" "$2" "$CLK_TCK" <<'EOF'
import sys
a = dict(x.split(":") for x in sys.argv[1].split())
b = dict(x.split(":") for x in sys.argv[2].split())
tck = int(sys.argv[3])
print(round(sum(int(t) - int(a.get(p, 0)) for p, t in b.items()) * 1000 / tck))
EOF
}

machine_busy() {
  local cpu user nice system idle iowait irq softirq steal rest
  read -r cpu user nice system idle iowait irq softirq steal rest </proc/stat
  printf -v "$1_busy" '%s' "$((user + nice + system + irq + softirq + steal))"
  printf -v "$1_total" '%s' "$((user + nice + system + idle + iowait + irq + softirq + steal))"
}

# idle KEY DB: CPU of each replica over IDLE seconds (sampled every second), of the PostgreSQL
# server's processes and of DB's backends, and the machine's busy share; recorded under KEY.
idle() {
  local key=$1 db=$2 k p t
  local -a c0=() c1=() per=()
  pg_ticks "$db" g0
  machine_busy m0
  for k in "${!REPLICA_PIDS[@]}"; do cpu_ticks "${REPLICA_PIDS[k]}" t; c0[k]=$t; c1[k]=$t; per[k]=; done
  local s0 s
  stamp s0
  for ((s = 1; s <= IDLE; s++)); do
    sleep 1
    for k in "${!REPLICA_PIDS[@]}"; do
      cpu_ticks "${REPLICA_PIDS[k]}" t || die "replica $((k + 1)) died"
      per[k]+="$((t - c1[k])),"
      c1[k]=$t
    done
  done
  elapsed_ms "$s0" ms
  machine_busy m1
  pg_ticks "$db" g1
  put "$key.ms" "$ms"
  for k in "${!REPLICA_PIDS[@]}"; do
    put "$key.replica$((k + 1)).cpu_ms" "$(((c1[k] - c0[k]) * 1000 / CLK_TCK))"
    put "$key.replica$((k + 1)).per_second" "${per[k]%,}"
    put "$key.replica$((k + 1)).rss_kb" "$(awk '/^VmRSS/ { print $2 }' "/proc/${REPLICA_PIDS[k]}/status")"
  done
  if [ -n "$g0_all" ]; then
    put "$key.pg_all_ms" "$(ticks_delta "$g0_all" "$g1_all")"
    put "$key.pg_all_procs" "$(wc -w <<<"$g1_all")"
    put "$key.pg_db_ms" "$(ticks_delta "$g0_db" "$g1_db")"
    put "$key.pg_db_procs" "$(wc -w <<<"$g1_db")"
  fi
  put "$key.machine_busy_pct" "$(((m1_busy - m0_busy) * 100 / (m1_total - m0_total)))"
  put "$key.machine_busy_ms" "$(((m1_busy - m0_busy) * 1000 / CLK_TCK))"
}

# =================================================================================================
say "registry"
start_registry
push_module pet
put engine "$("$ENGINE" version 2>/dev/null | head -1 || true)"
put load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
put uptime_before "$(uptime)"
put pg_version "$(pg_sql postgres 'SHOW server_version')"

# --- 1. list --------------------------------------------------------------------------------------
if [ "$DO_LIST" = 1 ]; then
  say "list: $LIST_N suspended workspaces in files of $LIST_BATCH"
  batch_files list "$LIST_N" "$LIST_BATCH" list 1
  LIST_FILES=("${FILES[@]}")
  start_server "$WORK/list-sqlite" "$WORK/list-sqlite.log"
  SQLITE_PID=$SERVER_PID
  SERVER_PID=
  SQLITE_URL=$SNG_SERVER
  new_db list
  LIST_DB=$DB
  start_replica "$WORK/list-pg" "$WORK/list-pg.log" "$(pg_db_url "$DB")" "$KEY"
  PG_LIST_PID=$SERVER_PID
  PG_LIST_URL=$(cat "$WORK/list-pg/server.url")
  PG_LIST_TOKEN=$(cat "$WORK/list-pg/admin.token")
  for b in sqlite pg; do
    if [ $b = sqlite ]; then url=$SQLITE_URL tok=$(cat "$WORK/list-sqlite/admin.token") pid=$SQLITE_PID; else url=$PG_LIST_URL tok=$PG_LIST_TOKEN pid=$PG_LIST_PID; fi
    say "list: apply to $b"
    stamp t0
    SNG_TOKEN=$tok apply_files "$url"
    elapsed_ms "$t0" ms
    put "list.$b.apply_ms" "$ms"
    ms=$(SNG_TOKEN=$tok wait_statuses "$url" list "$LIST_N" $((300 + LIST_N / 10))) || die "list: statuses on $b"
    put "list.$b.status_ms" "$ms"
    put "list.$b.settle_s" "$(settle 120 "$pid")"
  done
  say "list: $LIST_ROUNDS passes per backend, interleaved"
  python3 - "$LIST_ROUNDS" "$LIST_N" "sqlite=$SQLITE_URL=$(cat "$WORK/list-sqlite/admin.token")" "pg=$PG_LIST_URL=$PG_LIST_TOKEN" >>"$RESULTS" <<'EOF'
import http.client, json, sys, time, urllib.parse
rounds, n = int(sys.argv[1]), int(sys.argv[2])
backends = []
for arg in sys.argv[3:]:
    name, url, token = arg.split("=", 2)
    u = urllib.parse.urlparse(url)
    backends.append((name, http.client.HTTPConnection(u.hostname, u.port, timeout=120), {"Authorization": "Bearer " + token}))
pages = {b[0]: [] for b in backends}
passes = {b[0]: [] for b in backends}
first = {}
for r in range(rounds + 1):  # pass 0: warm-up, not counted
    for name, conn, h in backends:
        seen, cont, p0, times = 0, None, time.perf_counter(), []
        while True:
            q = "/api/v1/tenants/default/workspaces?limit=100"
            if cont:
                q += "&continue=" + urllib.parse.quote(cont)
            t = time.perf_counter()
            conn.request("GET", q, headers=h)
            resp = conn.getresponse()
            raw = resp.read()
            times.append((time.perf_counter() - t) * 1000)
            if resp.status != 200:
                sys.exit(f"bench: {name}: GET {q}: {resp.status} {raw[:300]!r}")
            body = json.loads(raw)
            seen += len(body["items"])
            cont = (body.get("metadata") or {}).get("continue")
            if not cont:
                break
        if seen != n:
            sys.exit(f"bench: {name}: a pass listed {seen} workspaces, not {n}")
        if r == 0:
            first[name] = (time.perf_counter() - p0) * 1000
            continue
        passes[name].append((time.perf_counter() - p0) * 1000)
        pages[name].extend(times)
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(q * len(v) + 0.5)) - 1))]
for name in pages:
    v = pages[name]
    print(f"list.{name}.pages\t{len(v)}")
    print(f"list.{name}.p50_ms\t{pct(v, 0.50):.2f}")
    print(f"list.{name}.p90_ms\t{pct(v, 0.90):.2f}")
    print(f"list.{name}.p99_ms\t{pct(v, 0.99):.2f}")
    print(f"list.{name}.max_ms\t{max(v):.2f}")
    print(f"list.{name}.mean_ms\t{sum(v) / len(v):.2f}")
    print(f"list.{name}.pass_median_ms\t{sorted(passes[name])[len(passes[name]) // 2]:.0f}")
    print(f"list.{name}.pass_warmup_ms\t{first[name]:.0f}")
EOF
  stop_process SQLITE_PID
  stop_replicas
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK/list-sqlite" "$WORK/list-pg"
  pg_drop_db "$LIST_DB"
fi

# --- 2. apply → run started, 1 and 3 replicas -------------------------------------------------------
# latency PREFIX COUNT KEY URL…: apply PREFIX-1 … PREFIX-COUNT one at a time through the URLs in
# turn; per workspace: ms of the apply request, ms from its answer to the run seen past Queued, the
# phase then seen; waits Ready before the next. With KEY empty, nothing is recorded (warm-up).
latency() {
  python3 - "$REGISTRY" "$@" <<'EOF'
import http.client, json, os, sys, time, urllib.parse
registry, prefix, count, key = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
urls = sys.argv[5:]
h = {"Authorization": "Bearer " + os.environ["SNG_TOKEN"], "Content-Type": "application/json"}
conns = []
for url in urls:
    u = urllib.parse.urlparse(url)
    conns.append(http.client.HTTPConnection(u.hostname, u.port, timeout=120))
def call(conn, method, path, body=None):
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    raw = r.read()
    if r.status >= 300:
        sys.exit(f"bench: {method} {path}: {r.status} {raw[:300]!r}")
    return json.loads(raw)
rows = []
for i in range(1, count + 1):
    k = (i - 1) % len(conns)
    conn = conns[k]
    name = f"{prefix}-{i}"
    ws = {"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
          "metadata": {"name": name, "labels": {"bench": prefix}},
          "spec": {"module": {"source": f"oci://{registry}/bench/pet", "tag": "1.0.0"}}}
    t_send = time.perf_counter()
    call(conn, "POST", "/api/v1/tenants/default/apply", json.dumps({"items": [ws]}))
    t_ans = time.perf_counter()
    wall_ans = time.time() * 1000
    deadline = t_ans + 120
    seen_queued = None
    while True:
        runs = call(conn, "GET", f"/api/v1/tenants/default/workspaces/{name}/runs?limit=1")["items"]
        now = time.perf_counter()
        if runs:
            if runs[0]["phase"] == "Queued":
                seen_queued = seen_queued or now
            else:
                break
        if now > deadline:
            sys.exit(f"bench: {name}: no run started within 120 s")
        time.sleep(0.005)
    rows.append((k + 1, (t_ans - t_send) * 1000, (now - t_ans) * 1000, runs[0]["phase"], runs[0]["id"], wall_ans))
    while True:  # Ready before the next one
        st = call(conn, "GET", f"/api/v1/tenants/default/workspaces/{name}").get("status") or {}
        conds = {c["type"]: c for c in st.get("conditions") or []}
        if not st.get("activeJob") and conds.get("Ready", {}).get("status") == "True":
            break
        if conds.get("Failed", {}).get("status") == "True":
            sys.exit(f"bench: {name} failed: {conds['Failed'].get('message')}")
        if time.perf_counter() > deadline + 120:
            sys.exit(f"bench: {name}: not Ready within 240 s")
        time.sleep(0.02)
if key:
    print(f"{key}.samples\t" + ";".join(f"{r}:{a:.1f}:{l:.1f}:{p}:{rid}:{w:.0f}" for r, a, l, p, rid, w in rows))
EOF
}

# claimers DB PREFIX KEY: who claimed the jobs of PREFIX* workspaces ("replica N" from the agent
# id, which is local@HOST/ the first 12 hex digits of the SHA-256 of the data dir), epochs.
claimers() {
  pg_sql "$1" "SELECT id, COALESCE(agent, ''), epoch, COALESCE(claimed_at, 0) FROM jobs WHERE workspace LIKE '$2-%'" >"$WORK/jobs.txt"
  python3 - "$3" "$WORK/jobs.txt" "${REPLICA_DIRS[@]}" <<'EOF'
import hashlib, sys
key, jobs, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
who = {hashlib.sha256(d.encode()).hexdigest()[:12]: f"replica {k + 1}" for k, d in enumerate(dirs)}
counts, twice = {}, 0
runs = []
for line in open(jobs):
    rid, agent, epoch, claimed_at = line.rstrip("\n").split("|")
    name = who.get(agent.rsplit("/", 1)[-1], agent or "nobody")
    counts[name] = counts.get(name, 0) + 1
    twice += int(epoch) > 1
    runs.append(f"{rid}={name}={claimed_at}")
print(f"{key}.claimed_by\t" + ", ".join(f"{n}: {c}" for n, c in sorted(counts.items())))
print(f"{key}.claimed_twice\t{twice}")
print(f"{key}.run_claimer\t" + ";".join(runs))
EOF
}

if [ "$DO_LATENCY" = 1 ]; then
  new_db latency
  LAT_DB=$DB
  LAT_URL=$(pg_db_url "$DB")
  say "latency: 1 replica, warm-up then $LAT_N workspaces one at a time"
  start_replica "$WORK/lat-r1" "$WORK/lat-r1.log" "$LAT_URL" "$KEY"
  export SNG_TOKEN SNG_TENANT=default
  SNG_TOKEN=$(cat "$WORK/lat-r1/admin.token")
  # shellcheck disable=SC2046
  latency warm1 2 "" $(replica_urls) || die "latency: warm-up failed"
  # shellcheck disable=SC2046
  latency lat1 "$LAT_N" lat1 $(replica_urls) >>"$RESULTS" || die "latency with 1 replica failed"
  claimers "$DB" lat1 lat1 >>"$RESULTS"
  say "latency: 3 replicas on the same database"
  for k in $(seq 2 "$REPLICAS"); do
    start_replica "$WORK/lat-r$k" "$WORK/lat-r$k.log" "$LAT_URL" "$KEY"
  done
  # shellcheck disable=SC2046
  latency warm3 $((2 * REPLICAS)) "" $(replica_urls) || die "latency: warm-up failed"
  # shellcheck disable=SC2046
  latency lat3 "$LAT_N" lat3 $(replica_urls) >>"$RESULTS" || die "latency with 3 replicas failed"
  claimers "$DB" lat3 lat3 >>"$RESULTS"
  stop_replicas
  [ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$WORK"/lat-r*
  pg_drop_db "$LAT_DB"
fi

# --- 3. runs over 3 replicas, 4. idle ---------------------------------------------------------------
if [ "$DO_RUNS" = 1 ]; then
  new_db runs
  RUNS_DB=$DB
  RUNS_URL=$(pg_db_url "$DB")
  say "runs: $REPLICAS replicas, $RUNS_N workspaces in files of $RUNS_BATCH, sent to the replicas in turn"
  for k in $(seq 1 "$REPLICAS"); do
    start_replica "$WORK/runs-r$k" "$WORK/runs-r$k.log" "$RUNS_URL" "$KEY"
  done
  export SNG_TOKEN SNG_TENANT=default
  SNG_TOKEN=$(cat "$WORK/runs-r1/admin.token")
  read -r -a URLS <<<"$(replica_urls)"
  batch_files run "$RUNS_N" "$RUNS_BATCH" runs 0
  declare -a r0 r1
  for k in "${!REPLICA_PIDS[@]}"; do cpu_ticks "${REPLICA_PIDS[k]}" t; r0[k]=$t; done
  pg_ticks "$RUNS_DB" g0
  machine_busy m0
  stamp t0
  apply_files "${URLS[@]}"
  elapsed_ms "$t0" apply_ms
  wait_statuses "${URLS[0]}" runs "$RUNS_N" $((600 + RUNS_N * 3)) 1 >/dev/null || die "runs: not all Ready"
  elapsed_ms "$t0" total_ms
  machine_busy m1
  pg_ticks "$RUNS_DB" g1
  for k in "${!REPLICA_PIDS[@]}"; do
    cpu_ticks "${REPLICA_PIDS[k]}" t
    put "runs.replica$((k + 1)).cpu_ms" "$(((t - r0[k]) * 1000 / CLK_TCK))"
  done
  [ -z "$g0_all" ] || put runs.pg_all_ms "$(ticks_delta "$g0_all" "$g1_all")"
  [ -z "$g0_all" ] || put runs.pg_db_ms "$(ticks_delta "$g0_db" "$g1_db")"
  put runs.machine_busy_pct "$(((m1_busy - m0_busy) * 100 / (m1_total - m0_total)))"
  put runs.apply_ms "$apply_ms"
  put runs.total_ms "$total_ms"
  say "runs: counting run records (API and database)"
  python3 - "$RUNS_N" "${URLS[@]}" >>"$RESULTS" <<'EOF'
import http.client, json, os, sys, urllib.parse
n, urls = int(sys.argv[1]), sys.argv[2:]
h = {"Authorization": "Bearer " + os.environ["SNG_TOKEN"]}
conns = [http.client.HTTPConnection(urllib.parse.urlparse(u).hostname, urllib.parse.urlparse(u).port, timeout=120) for u in urls]
ids, phases, not_one, workspaces = [], {}, 0, 0
for i in range(1, n + 1):
    conn = conns[i % len(conns)]  # the counts are read through every replica
    name, cont, runs = f"run-{i}", None, []
    while True:
        q = f"/api/v1/tenants/default/workspaces/{name}/runs?limit=100"
        if cont:
            q += "&continue=" + urllib.parse.quote(cont)
        conn.request("GET", q, headers=h)
        body = json.loads(conn.getresponse().read())
        runs += body["items"]
        cont = (body.get("metadata") or {}).get("continue")
        if not cont:
            break
    workspaces += 1
    for r in runs:
        ids.append(r["id"])
        phases[r["phase"]] = phases.get(r["phase"], 0) + 1
    if len(runs) != 1 or runs[0]["phase"] != "Succeeded":
        not_one += 1
print(f"runs.api.workspaces\t{workspaces}")
print(f"runs.api.runs\t{len(ids)}")
print(f"runs.api.distinct\t{len(set(ids))}")
print(f"runs.api.phases\t" + ", ".join(f"{k} {v}" for k, v in sorted(phases.items())))
print(f"runs.api.not_exactly_one_succeeded\t{not_one}")
EOF
  put runs.db.runs "$(pg_sql "$RUNS_DB" "SELECT count(*) || ' rows, ' || count(DISTINCT id) || ' distinct ids' FROM runs")"
  put runs.db.phases "$(pg_sql "$RUNS_DB" "SELECT phase || ' ' || count(*) FROM runs GROUP BY phase ORDER BY phase" | paste -sd, - | sed 's/,/, /g')"
  put runs.db.multi "$(pg_sql "$RUNS_DB" "SELECT count(*) FROM (SELECT 1 FROM runs GROUP BY tenant, workspace HAVING count(*) > 1) m")"
  put runs.db.jobs "$(pg_sql "$RUNS_DB" "SELECT count(*) || ' rows, ' || count(DISTINCT id) || ' distinct ids; states ' || string_agg(DISTINCT state, '/') || '; epochs ' || min(epoch) || '..' || max(epoch) FROM jobs")"
  put runs.db.jobs_twice "$(pg_sql "$RUNS_DB" "SELECT count(*) FROM jobs WHERE epoch > 1")"
  put runs.db.run_without_job "$(pg_sql "$RUNS_DB" "SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = r.id)")"
  claimers "$RUNS_DB" run runs >>"$RESULTS"

  say "idle (a): settle, then $IDLE s with $RUNS_N Ready workspaces"
  put idle_a.settle_s "$(settle 120 "${REPLICA_PIDS[@]}")"
  put idle_a.load "$(cut -d' ' -f1-3 /proc/loadavg)"
  idle idle_a "$RUNS_DB"
  if [ "$IDLE_SUSPENDED" = 1 ]; then
    say "idle (b): $LIST_N suspended workspaces more, through the replicas in turn"
    batch_files list "$LIST_N" "$LIST_BATCH" list 1
    stamp t0
    apply_files "${URLS[@]}"
    elapsed_ms "$t0" ms
    put idle_b.apply_ms "$ms"
    ms=$(wait_statuses "${URLS[0]}" list "$LIST_N" $((300 + LIST_N / 10))) || die "idle (b): statuses"
    put idle_b.status_ms "$ms"
    put idle_b.settle_s "$(settle 180 "${REPLICA_PIDS[@]}")"
    put idle_b.load "$(cut -d' ' -f1-3 /proc/loadavg)"
    say "idle (b): $IDLE s with $RUNS_N Ready and $LIST_N suspended workspaces"
    idle idle_b "$RUNS_DB"
  fi
  stop_replicas
  pg_drop_db "$RUNS_DB"
fi
put load_after "$(cut -d' ' -f1-3 /proc/loadavg)"
put uptime_after "$(uptime)"

# --- report ---------------------------------------------------------------------------------------
python3 - "$RESULTS" "$("$SNG" --version 2>/dev/null || echo sng)" "$SNG_DESC" "$LIST_N" "$LIST_ROUNDS" \
  "$LAT_N" "$RUNS_N" "$IDLE" "$REPLICAS" "$DO_LIST$DO_LATENCY$DO_RUNS$IDLE_SUSPENDED" <<'EOF'
import datetime, os, statistics, sys
path, sng_version, desc = sys.argv[1:4]
list_n, rounds, lat_n, runs_n, idle_s, replicas = (int(x) for x in sys.argv[4:10])
do_list, do_lat, do_runs, do_susp = (c == "1" for c in sys.argv[10])
r = {}
for line in open(path):
    k, v = line.rstrip("\n").split("\t", 1)
    r[k] = v
def i(k):
    return int(float(r[k]))
def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(q * len(v) + 0.5)) - 1))]
def verdict(ok):
    return "met" if ok else "**missed**"
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next((int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
print(f"Machine: {os.cpu_count()} CPUs, {cpu}, {mem / 2**20:.0f} GiB RAM; "
      f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; engine {r['engine']}; {sng_version} ({desc}); "
      f"PostgreSQL {r['pg_version']} (scripts/pg.sh: fsync off, synchronous_commit off).")
print(f"`uptime` before: `{r['uptime_before'].strip()}`; after: `{r['uptime_after'].strip()}`.")
print()
targets = []
if do_list:
    print(f"#### List {list_n} workspaces, pages of 100 ({rounds} passes per backend, interleaved, after one warm-up pass)")
    print()
    print("| backend | page p50 | page p90 | page p99 | page max | whole pass (median) | pages timed | apply of the workspaces; until all had a status |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for b, label in (("sqlite", "SQLite (data dir)"), ("pg", "PostgreSQL (1 replica)")):
        print(f"| {label} | {float(r[f'list.{b}.p50_ms']):.1f} ms | {float(r[f'list.{b}.p90_ms']):.1f} ms | "
              f"{float(r[f'list.{b}.p99_ms']):.1f} ms | {float(r[f'list.{b}.max_ms']):.1f} ms | {i(f'list.{b}.pass_median_ms')} ms | "
              f"{r[f'list.{b}.pages']} | {i(f'list.{b}.apply_ms') / 1000:.1f} s; {i(f'list.{b}.status_ms') / 1000:.1f} s more |")
    print()
if do_lat:
    print(f"#### Apply → run started ({lat_n} new workspaces one at a time, replicas in turn; a 5 ms poll of the newest run)")
    print()
    print("| replicas | p50 | p99 | min | max | answer → job claimed (`jobs.claimed_at`), p50 / p99 | apply request p50 | phase first seen past Queued | runs claimed by |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for key, n in (("lat1", 1), ("lat3", replicas)):
        rows = [s.split(":") for s in r[f"{key}.samples"].split(";")]
        claimer = {x.split("=")[0]: x.split("=")[1:] for x in r[f"{key}.run_claimer"].split(";") if x}
        lat = [float(x[2]) for x in rows]
        app = [float(x[1]) for x in rows]
        claim = [int(claimer[x[4]][1]) - float(x[5]) for x in rows if x[4] in claimer and claimer[x[4]][1] != "0"]
        ph = {}
        for x in rows:
            ph[x[3]] = ph.get(x[3], 0) + 1
        claim_txt = f"{pct(claim, .5):.0f} ms / {pct(claim, .99):.0f} ms" if claim else "?"
        print(f"| {n} | {pct(lat, .5):.0f} ms | {pct(lat, .99):.0f} ms | {min(lat):.0f} ms | {max(lat):.0f} ms | {claim_txt} | "
              f"{pct(app, .5):.0f} ms | {', '.join(f'{k} {v}' for k, v in sorted(ph.items()))} | {r[f'{key}.claimed_by']} |")
    rows = [s.split(":") for s in r["lat3.samples"].split(";")]
    claimer = {x.split("=")[0]: x.split("=")[1] for x in r["lat3.run_claimer"].split(";") if x}
    same = sum(1 for x in rows if claimer.get(x[4]) == f"replica {x[0]}")
    print()
    print(f"With {replicas} replicas, runs claimed by the replica the apply went to: {same} of {len(rows)}.")
    print()
if do_runs:
    total = i("runs.total_ms")
    dup_ids = i("runs.api.runs") - i("runs.api.distinct")
    print(f"#### {runs_n} runs over {replicas} replicas (one PostgreSQL database)")
    print()
    print("| measure | value |")
    print("|---|---|")
    print(f"| `sng apply -f` of {runs_n} workspaces (files of 100, replicas in turn) → all Ready | **{total / 1000:.1f} s = {runs_n / (total / 60000):.0f} runs per minute** (the applies returned after {i('runs.apply_ms') / 1000:.1f} s) |")
    print(f"| CPU during that: replicas | " + ", ".join(f"{i(f'runs.replica{k}.cpu_ms') / 1000:.1f} s" for k in range(1, replicas + 1))
          + f" (the server processes only; engines and bwrap not counted) |")
    if "runs.pg_all_ms" in r:
        print(f"| CPU during that: PostgreSQL, all its processes / this database's backends | {i('runs.pg_all_ms') / 1000:.1f} s / {i('runs.pg_db_ms') / 1000:.1f} s |")
    print(f"| machine busy during that | {r['runs.machine_busy_pct']} % of {os.cpu_count()} CPUs |")
    print(f"| runs claimed by | {r['runs.claimed_by']} |")
    print(f"| API: runs of the {r['runs.api.workspaces']} workspaces | {r['runs.api.runs']} runs, {r['runs.api.distinct']} distinct ids ({r['runs.api.phases']}); workspaces without exactly one Succeeded run: {r['runs.api.not_exactly_one_succeeded']} |")
    print(f"| database: `runs` | {r['runs.db.runs']} ({r['runs.db.phases']}); workspaces with more than one run: {r['runs.db.multi']} |")
    print(f"| database: `jobs` | {r['runs.db.jobs']}; claimed more than once (epoch > 1): {r['runs.db.jobs_twice']}; runs without a job: {r['runs.db.run_without_job']} |")
    print()
    ok = (i("runs.db.jobs_twice") == 0 and dup_ids == 0 and i("runs.api.not_exactly_one_succeeded") == 0
          and i("runs.db.multi") == 0 and i("runs.api.runs") == runs_n)
    targets.append((f"{runs_n} runs over {replicas} replicas: 0 dispatched twice",
                    f"{r['runs.db.jobs_twice']} jobs claimed twice, {dup_ids} run ids twice, {r['runs.api.not_exactly_one_succeeded']} workspaces without exactly one Succeeded run",
                    verdict(ok)))
    print(f"#### Idle CPU of {replicas} replicas over {idle_s} s")
    print()
    print("| workspaces in the database | settled after | " + " | ".join(f"replica {k}" for k in range(1, replicas + 1))
          + " | replicas, sum | PostgreSQL, all processes | PostgreSQL, this database's backends | machine busy (everything, other work too) | load before |")
    print("|---|---:|" + "---:|" * replicas + "---:|---:|---:|---:|---|")
    for key, what in (("idle_a", f"{runs_n} Ready"), ("idle_b", f"{runs_n} Ready + {list_n} suspended")):
        if f"{key}.ms" not in r:
            continue
        secs = i(f"{key}.ms") / 1000
        per = [i(f"{key}.replica{k}.cpu_ms") for k in range(1, replicas + 1)]
        def fmt(ms):
            return f"{ms / 1000:.2f} s ({ms / 10 / secs:.2f} %)"
        pg_all = fmt(i(f"{key}.pg_all_ms")) + f", {r[f'{key}.pg_all_procs']} procs" if f"{key}.pg_all_ms" in r else "not read"
        pg_db = fmt(i(f"{key}.pg_db_ms")) + f", {r[f'{key}.pg_db_procs']} backends" if f"{key}.pg_db_ms" in r else "not read"
        print(f"| {what} | {r[f'{key}.settle_s']} s | " + " | ".join(fmt(x) for x in per) + f" | {fmt(sum(per))} | {pg_all} | {pg_db} | "
              f"{r[f'{key}.machine_busy_pct']} % | {r[f'{key}.load']} |")
    print()
    print("CPU as seconds over the interval (% of one core). Per replica, the seconds of the interval with CPU (ms of CPU in that second):")
    print()
    for key in ("idle_a", "idle_b"):
        if f"{key}.ms" not in r:
            continue
        tck = int(os.popen("getconf CLK_TCK").read())
        for k in range(1, replicas + 1):
            per_s = [int(x) * 1000 // tck for x in r[f"{key}.replica{k}.per_second"].split(",") if x]
            busy = [f"{s + 1}: {v}" for s, v in enumerate(per_s) if v]
            print(f"- {key[-1]}, replica {k} (RSS {i(f'{key}.replica{k}.rss_kb') / 1024:.0f} MiB): {', '.join(busy) or 'none'}")
    print()
if targets:
    print("| target | measured | verdict |")
    print("|---|---|---|")
    for t in targets:
        print("| " + " | ".join(t) + " |")
EOF
