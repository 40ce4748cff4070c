#!/usr/bin/env bash
# Dependency hops: a chain of 20 workspaces, each reading its parent's output (bench/modules/hop,
# `varsFrom.workspaceOutputRef`), side by side with the bare engine running the same 20 links one
# after the other, in the same run; with 0 and then 10,000 idle suspended workspaces in the tenant.
#
#   (a) bare engine: for each link, a fresh directory with the module and its `in` variable, then
#       `init`, `plan -out`, `show -json`, `apply`, `output -json` (what sng runs); total of the 20.
#   (b) sng: the 20 workspaces applied at once; total from `sng apply` until the last is Ready.
#       The hop of each child = its run's `startedAt` - its parent's run's `finishedAt` (run
#       records, to the millisecond); the total's share outside the engine = total - engine steps.
#   Then 10,000 suspended workspaces (no run) are applied in batches of 1,000 through the API, and
#   (a) and (b) are run again on the same server (a new chain each iteration).
#
# With BENCH_SHAPE=fanout, a fan-out instead of a chain: one root and BENCH_FANOUT (default 200)
# children each reading the root's output; the bare engine runs the root, then the children
# `nproc` at a time (sng's default --max-concurrent-runs); sng's total runs from `sng apply` to the
# last child's `finishedAt` (run records); the "hops" are each child's `startedAt` - the root's
# `finishedAt` (how soon the children started, queueing for the run slots included).
#
# Environment: BENCH_ITERATIONS (default 2), BENCH_IDLE (default 10000), BENCH_LINKS (default 20),
# BENCH_SHAPE (chain or fanout), BENCH_FANOUT (default 200), SNG_BIN (skip the build), SNG_ENGINE,
# SNG_DOCKER_REGISTRY, BENCH_KEEP=1, BENCH_STORE (sqlite, the default, or postgres: a fresh database
# on the PostgreSQL of the tests, scripts/pg.sh).
# Prints a Markdown report on stdout; progress goes to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/bench/lib.sh"

N=${BENCH_ITERATIONS:-2}
IDLE=${BENCH_IDLE:-10000}
LINKS=${BENCH_LINKS:-20}
SHAPE=${BENCH_SHAPE:-chain}
FANOUT=${BENCH_FANOUT:-200}
CORES=$(nproc)
ENGINE=${SNG_ENGINE:-$ROOT/.tools/bin/tofu}
REGISTRY_BIN=${SNG_DOCKER_REGISTRY:-/usr/bin/docker-registry}
MODULE=$ROOT/bench/modules/hop
SERVER_LOG_FILTER=${BENCH_SERVER_LOG:-warn}
SERVER_ARGS=()

check_tools
pick_sng
cleanup() {
  stop_server
  [ -z "${PG_DB:-}" ] || pg_drop_db "$PG_DB"
  stop_registry
  remove_work
}
make_work sng-hops

# bare_chain SERIES ITER: the 20 links by hand, one after the other.
bare_chain() {
  local series=$1 iter=$2 i t0 total sum=0 steps root
  stamp t0
  for i in $(seq 0 $((LINKS - 1))); do
    root=$WORK/bare/$iter-$i
    mkdir -p "$root"
    cp -r "$MODULE" "$root/work"
    printf '{"out": "%s"}\n' "$(printf '+%.0s' $(seq 1 "$i") | head -c "$i")" >"$root/work/terraform.tfvars.json"
    printf 'provider_installation {\n  direct {}\n}\n' >"$root/cli.tfrc"
    steps=$(cd "$root/work" && CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_CLI_CONFIG_FILE="$root/cli.tfrc" \
      engine_steps "$root/engine.log") || die "bare link $i failed"
    sum=$((sum + $(tr ',' '+' <<<"$steps")))
    rm -rf "$root"
  done
  elapsed_ms "$t0" total
  printf '%s\t%s\t%s\t%s\t-\n' "$series" "$iter" "$total" "$sum" >>"$RESULTS"
}

# chain_yaml PREFIX: the 20 workspaces PREFIX-00 … PREFIX-19, each reading its parent's `out`.
chain_yaml() {
  local i
  for i in $(seq 0 $((LINKS - 1))); do
    echo "---"
    workspace_doc "$(printf '%s-%02d' "$1" "$i")" hop
    if [ "$i" -gt 0 ]; then
      printf '  varsFrom:\n    - workspaceOutputRef: {name: %s-%02d, output: out}\n' "$1" $((i - 1))
    fi
  done
}

# sng_chain SERIES ITER PREFIX: apply the chain, wait for its last link, record total and hops.
sng_chain() {
  local series=$1 iter=$2 prefix=$3 file=$WORK/$3.yaml t0 total last
  chain_yaml "$prefix" >"$file"
  last=$(printf '%s-%02d' "$prefix" $((LINKS - 1)))
  stamp t0
  "$SNG" apply -f "$file" >/dev/null
  "$SNG" wait workspace "$last" --for condition=Ready --timeout 10m >/dev/null || die "$last did not become Ready"
  elapsed_ms "$t0" total
  python3 - "$series" "$iter" "$total" "$prefix" "$LINKS" >>"$RESULTS" <<'EOF' || die "$series: unexpected run records"
import json, os, sys, urllib.request, datetime
series, it, total, prefix, links = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
url, token = os.environ["SNG_SERVER"], os.environ["SNG_TOKEN"]
def run_of(name):
    req = urllib.request.Request(f"{url}/api/v1/tenants/default/workspaces/{name}/runs",
                                 headers={"Authorization": f"Bearer {token}"})
    items = json.load(urllib.request.urlopen(req))["items"]
    assert len(items) == 1 and items[0]["phase"] == "Succeeded", items
    return items[0]
t = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
runs = [run_of(f"{prefix}-{i:02d}") for i in range(links)]
engine = sum(sum(ms for _, ms in r["steps"]) for r in runs)
hops = [round((t(c["startedAt"]) - t(p["finishedAt"])) * 1000) for p, c in zip(runs, runs[1:])]
print(f"{series}\t{it}\t{total}\t{engine}\t{','.join(map(str, hops))}")
EOF
}

# idle_workspaces COUNT: COUNT suspended workspaces (never run), 1,000 per request.
idle_workspaces() {
  python3 - "$1" "oci://$REGISTRY/bench/hop" <<'EOF' || die "cannot create the idle workspaces"
import json, os, sys, urllib.request
n, source = int(sys.argv[1]), sys.argv[2]
url, token = os.environ["SNG_SERVER"], os.environ["SNG_TOKEN"]
for start in range(0, n, 1000):
    items = [{"apiVersion": "tofu.stackngo.io/v1alpha1", "kind": "Workspace",
              "metadata": {"name": f"idle-{i:05d}"},
              "spec": {"module": {"source": source, "tag": "1.0.0"}, "suspend": True}}
             for i in range(start, min(n, start + 1000))]
    req = urllib.request.Request(f"{url}/api/v1/tenants/default/apply", method="POST",
                                 data=json.dumps({"items": items}).encode(),
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=300).read()
EOF
}

# bare_link ROOT IN: one link by hand in the fresh directory ROOT with input IN; prints the ms of
# its engine steps, summed.
bare_link() {
  local root=$1 steps
  mkdir -p "$root"
  cp -r "$MODULE" "$root/work"
  printf '{"out": "%s"}\n' "$2" >"$root/work/terraform.tfvars.json"
  printf 'provider_installation {\n  direct {}\n}\n' >"$root/cli.tfrc"
  steps=$(cd "$root/work" && CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_CLI_CONFIG_FILE="$root/cli.tfrc" \
    engine_steps "$root/engine.log") || die "bare link $root failed"
  rm -rf "$root"
  echo $(($(tr ',' '+' <<<"$steps")))
}

# bare_fanout SERIES ITER: the root, then the FANOUT children CORES at a time.
bare_fanout() {
  local series=$1 iter=$2 t0 total sum i
  stamp t0
  sum=$(bare_link "$WORK/bare/$iter-root" "")
  for ((i = 0; i < FANOUT; i += CORES)); do
    local pids=() j
    for ((j = i; j < i + CORES && j < FANOUT; j++)); do
      bare_link "$WORK/bare/$iter-c$j" "+" >"$WORK/bare-$iter-$j.ms" &
      pids+=($!)
    done
    for j in "${pids[@]}"; do wait "$j" || die "a bare child failed"; done
  done
  elapsed_ms "$t0" total
  for ((i = 0; i < FANOUT; i++)); do sum=$((sum + $(cat "$WORK/bare-$iter-$i.ms"))); done
  rm -f "$WORK"/bare-"$iter"-*.ms
  printf '%s\t%s\t%s\t%s\t-\n' "$series" "$iter" "$total" "$sum" >>"$RESULTS"
}

# sng_fanout SERIES ITER PREFIX: apply the root and its children at once, wait until every one
# has its run Succeeded; total = the last child's finishedAt - the time just before `sng apply`.
sng_fanout() {
  local series=$1 iter=$2 prefix=$3 file=$WORK/$3.yaml i t0
  {
    echo "---"
    workspace_doc "$prefix-root" hop
    for ((i = 0; i < FANOUT; i++)); do
      echo "---"
      workspace_doc "$(printf '%s-c%03d' "$prefix" "$i")" hop
      printf '  varsFrom:\n    - workspaceOutputRef: {name: %s-root, output: out}\n' "$prefix"
    done
  } >"$file"
  stamp t0
  "$SNG" apply -f "$file" >/dev/null
  python3 - "$series" "$iter" "$t0" "$prefix" "$FANOUT" >>"$RESULTS" <<'EOF' || die "$series: fan-out failed"
import json, os, sys, time, urllib.request, datetime
series, it, t0, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3]) / 1e6, sys.argv[4], int(sys.argv[5])
url, token = os.environ["SNG_SERVER"], os.environ["SNG_TOKEN"]
def get(path):
    req = urllib.request.Request(f"{url}{path}", headers={"Authorization": f"Bearer {token}"})
    return json.load(urllib.request.urlopen(req, timeout=60))
names = [f"{prefix}-root"] + [f"{prefix}-c{i:03d}" for i in range(n)]
runs, pending, deadline = {}, list(names), time.time() + 1800
while pending:
    assert time.time() < deadline, f"still waiting for {pending[:5]}"
    still = []
    for name in pending:
        items = get(f"/api/v1/tenants/default/workspaces/{name}/runs?limit=1")["items"]
        if items and items[0]["phase"] in ("Succeeded", "Failed", "Errored", "Cancelled"):
            assert items[0]["phase"] == "Succeeded", items[0]
            runs[name] = items[0]
        else:
            still.append(name)
    pending = still
    if pending:
        time.sleep(0.5)  # a poll interval: the measure comes from the run records, not from here
t = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
root = runs[names[0]]
kids = [runs[x] for x in names[1:]]
total = round((max(t(r["finishedAt"]) for r in kids) - t0) * 1000)
engine = sum(sum(ms for _, ms in r["steps"]) for r in runs.values())
hops = [round((t(r["startedAt"]) - t(root["finishedAt"])) * 1000) for r in kids]
print(f"{series}\t{it}\t{total}\t{engine}\t{','.join(map(str, hops))}")
EOF
}

if [ "$SHAPE" = fanout ]; then
  bare_chain() { bare_fanout "$@"; }
  sng_chain() { sng_fanout "$@"; }
  LINKS=$FANOUT
elif [ "$SHAPE" != chain ]; then
  die "BENCH_SHAPE must be chain or fanout, not $SHAPE"
fi

say "registry"
start_registry
push_module hop
ENGINE_VERSION=$("$ENGINE" version 2>/dev/null | head -1 || true)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
# A fresh database on the PostgreSQL of the tests (scripts/pg.sh), dropped at the end.
pg_server_store hops
start_server "$WORK/server"
say "warm-up (not counted)"
bare_chain warmup 0
sng_chain warmup 0 warm
sed -i '/^warmup\t/d' "$RESULTS"
for i in $(seq 1 "$N"); do
  say "0 idle: iteration $i/$N"
  bare_chain bare-0 "$i"
  sng_chain sng-0 "$i" "a$i"
done
say "$IDLE idle suspended workspaces"
idle_workspaces "$IDLE"
for i in $(seq 1 "$N"); do
  say "$IDLE idle: iteration $i/$N"
  bare_chain bare-idle "$i"
  sng_chain sng-idle "$i" "b$i"
done
RSS=$(awk '/VmHWM/ {print $2}' "/proc/$SERVER_PID/status")
stop_server

python3 - "$RESULTS" "$N" "$IDLE" "$LINKS" "$ENGINE_VERSION" "$SNG_DESC" "$LOAD_BEFORE" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$RSS" <<'EOF'
import statistics, sys, os, datetime
path, n, idle, links, engine, desc, load_before, load_after, rss = sys.argv[1:10]
rows = {}
for line in open(path):
    series, it, total, eng, hops = line.rstrip("\n").split("\t")
    rows.setdefault(series, []).append((int(total), int(eng), [] if hops == "-" else [int(h) for h in hops.split(",")]))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"Machine: {os.cpu_count()} CPUs, {cpu}; {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; engine {engine}; sng {desc}; store {os.environ.get('BENCH_STORE', 'sqlite')}.")
print(f"Load average (1, 5, 15 min) before: {load_before}; after: {load_after}. Server peak RSS (VmHWM): {int(rss)//1024} MB.")
shape = os.environ.get("BENCH_SHAPE", "chain")
what = f"A fan-out of 1 → {links}" if shape == "fanout" else f"A chain of {links} links"
print(f"{what}, {n} iterations per case; times in ms (medians over iterations; hops over every link).")
print()
print("| case | total | engine steps | total / bare | hop median | hop p90 | hop max |")
print("|---|---:|---:|---:|---:|---:|---:|")
for idle_label, b, s in [("0 idle", "bare-0", "sng-0"), (f"{int(idle):,} idle", "bare-idle", "sng-idle")]:
    bare = statistics.median(t for t, _, _ in rows[b])
    print(f"| bare engine, {idle_label} | {bare:.0f} | {statistics.median(e for _, e, _ in rows[b]):.0f} | 1.00 | – | – | – |")
    r = rows[s]
    total = statistics.median(t for t, _, _ in r)
    hops = sorted(h for _, _, hs in r for h in hs)
    p90 = hops[min(len(hops) - 1, int(round(0.9 * (len(hops) - 1))))]
    print(f"| sng, {idle_label} | {total:.0f} | {statistics.median(e for _, e, _ in r):.0f} | {total / bare:.2f} | {statistics.median(hops):.0f} | {p90} | {hops[-1]} |")
EOF
