#!/usr/bin/env bash
# Remote agents (issue 15, "Benchmark"): the same burst of BENCH_AGENTS_N (default 200) new
# workspaces run (1) by the server's local agent with 2 slots (--max-concurrent-runs 2) and (2) by
# two remote `sng agent` processes of one slot each (an AgentPool selecting them by label), on one
# server; and the claim latency of each run (job enqueued → engine started: the run record's
# `startedAt - createdAt`, both written by the server's clock), p50/p95/max. The reference is the
# bare engine: BENCH_BARE_N (default 5) runs of the same module by hand (init, plan -out, show
# -json, apply, output -json), median × N / 2.
#
# Timing: wall clock (bash's EPOCHREALTIME; python3's time.time() in the poller). Readiness is
# polled on a condition (the workspace listing), never assumed after a sleep.
#
# Environment: BENCH_AGENTS_N, BENCH_BARE_N, SNG_BIN (skip the build), SNG_ENGINE (default
# .tools/bin/tofu), SNG_DOCKER_REGISTRY (default /usr/bin/docker-registry), BENCH_KEEP=1 keeps the
# temporary directory. Prints a Markdown report on stdout; progress goes to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/bench/lib.sh"

N=${BENCH_AGENTS_N:-200}
BARE_N=${BENCH_BARE_N:-5}
ENGINE=${SNG_ENGINE:-$ROOT/.tools/bin/tofu}
REGISTRY_BIN=${SNG_DOCKER_REGISTRY:-/usr/bin/docker-registry}
MODULE=$ROOT/examples/modules/pet
SERVER_LOG_FILTER=${BENCH_SNG_LOG:-warn}
AGENT_PIDS=()

cleanup() {
  local pid
  for pid in ${AGENT_PIDS[@]+"${AGENT_PIDS[@]}"}; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in ${AGENT_PIDS[@]+"${AGENT_PIDS[@]}"}; do wait "$pid" 2>/dev/null || true; done
  stop_server
  stop_registry
  remove_work
}

check_tools
pick_sng
make_work sng-bench-agents
start_registry
push_module pet

# workspaces PREFIX LABEL COUNT: Workspace documents PREFIX-1..COUNT of bench/pet, labelled
# via=LABEL.
workspaces() {
  local i
  for i in $(seq 1 "$3"); do
    workspace_doc "$1-$i" pet | sed "s/^  name: $1-$i\$/  name: $1-$i\n  labels: {via: $2}/"
    echo "---"
  done
}

# burst PREFIX LABEL COUNT: seconds from just before the apply until all COUNT are Ready, then
# the claim latencies (ms) of their runs, one per line with the agent, into WORK/PREFIX.latency.
burst() {
  local t0
  workspaces "$1" "$2" "$3" >"$WORK/$1.yaml"
  stamp t0
  "$SNG" apply -f "$WORK/$1.yaml" >/dev/null
  python3 - "$1" "$3" "$t0" "$WORK/$1.latency" <<'EOF'
import datetime, http.client, json, os, sys, time, urllib.parse
prefix, count, t0, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1e6, sys.argv[4]
url = urllib.parse.urlparse(os.environ["SNG_SERVER"])
headers = {"Authorization": "Bearer " + os.environ["SNG_TOKEN"]}
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=120)
def get(path):
    conn.request("GET", path, headers=headers)
    return json.loads(conn.getresponse().read())
while True:
    items = [w for w in get("/api/v1/tenants/default/workspaces")["items"] if w["metadata"]["name"].startswith(prefix + "-")]
    ready = 0
    for ws in items:
        st = ws.get("status") or {}
        conds = {c["type"]: c for c in st.get("conditions") or []}
        if st.get("observedGeneration") == ws["metadata"].get("generation") and not st.get("activeJob") and conds.get("Ready", {}).get("status") == "True":
            ready += 1
        elif conds.get("Failed", {}).get("status") == "True":
            sys.exit(f"bench: {ws['metadata']['name']} failed: {conds['Failed'].get('message')}")
    if ready >= count:
        break
    if time.time() - t0 > 60 + count * 20:
        sys.exit(f"bench: timed out with {ready}/{count} Ready")
    time.sleep(0.2)
total = time.time() - t0
def t(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
with open(out, "w") as f:
    for i in range(1, count + 1):
        run = get(f"/api/v1/tenants/default/workspaces/{prefix}-{i}/runs")["items"][-1]
        if run.get("startedAt"):
            f.write(f"{(t(run['startedAt']) - t(run['createdAt'])) * 1000:.0f} {run.get('agent', '')}\n")
print(f"{total:.1f}")
EOF
}

# pct FILE P: the P-th percentile of the first column of FILE.
pct() { sort -n "$1" | awk -v p="$2" '{a[NR]=$1} END {i=int((NR-1)*p/100)+1; print a[i]}'; }

say "bare engine: $BARE_N runs of bench/pet by hand"
BARE=()
for i in $(seq 1 "$BARE_N"); do
  d=$WORK/bare-$i
  mkdir -p "$d" && cp -r "$MODULE"/. "$d/" && cd "$d"
  steps=$(engine_steps "$d.log") || die "bare run failed"
  cd "$ROOT"
  BARE+=("$(echo "$steps" | tr ',' '\n' | paste -sd+ | bc)")
done
BARE_MED=$(printf '%s\n' "${BARE[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')

SERVER_ARGS=(--max-concurrent-runs 2 --provider-mirror "$ROOT/.tools/providers")
start_server "$WORK/server"
say "warm-up workspace (not counted)"
burst warm here 1 >/dev/null

# single PREFIX LABEL: 5 workspaces one after the other (each applied once the previous is
# Ready), none waiting for a slot: ms from just before `sng apply` until its run record shows
# the engine started (`startedAt` present, polled every 20 ms: the records' own times are whole
# seconds), into WORK/PREFIX.latency.
single() {
  local i t0
  : >"$WORK/$1.latency"
  for i in 1 2 3 4 5; do
    workspaces "$1-$i" "$2" 1 >"$WORK/$1-$i.yaml"
    stamp t0
    "$SNG" apply -f "$WORK/$1-$i.yaml" >/dev/null
    python3 -c "$STARTED_PY" "$1-$i-1" "$t0" >>"$WORK/$1.latency"
    burst "$1-$i" "$2" 1 >/dev/null # unchanged: waits until it is Ready
  done
}

# The poller of `single`: ms from T0 until the run of workspace NAME shows `startedAt`.
STARTED_PY=$(cat <<'PY'
import http.client, json, os, sys, time, urllib.parse
name, t0 = sys.argv[1], int(sys.argv[2]) / 1e6
url = urllib.parse.urlparse(os.environ["SNG_SERVER"])
headers = {"Authorization": "Bearer " + os.environ["SNG_TOKEN"]}
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
while True:
    conn.request("GET", f"/api/v1/tenants/default/workspaces/{name}/runs", headers=headers)
    items = json.loads(conn.getresponse().read()).get("items") or []
    if items and items[-1].get("startedAt"):
        print(f"{(time.time() - t0) * 1000:.0f} {items[-1].get('agent', '')}")
        break
    if time.time() - t0 > 120:
        sys.exit("bench: the single run did not start")
    time.sleep(0.02)
PY
)

say "burst 1: $N workspaces on the local agent (2 slots)"
LOCAL_S=$(burst local here "$N")
say "single runs on the local agent"
single one-local here

say "burst 2: $N workspaces on two remote agents of one slot each"
printf 'apiVersion: tofu.stackngo.io/v1alpha1\nkind: AgentPool\nmetadata: {name: bench}\nspec:\n  selector:\n    matchLabels: {via: agents}\n' | "$SNG" apply -f - >/dev/null
TOKEN=$("$SNG" agent-pool token create bench | tail -1)
for a in 1 2; do
  SNG_LOG=warn "$SNG" agent --server "$SNG_SERVER" --token "$TOKEN" --name "bench-$a" --slots 1 \
    --engine "$ENGINE" --work-dir "$WORK/agent-$a" --provider-mirror "$ROOT/.tools/providers" \
    --insecure-registry "$REGISTRY" >"$WORK/agent-$a.log" 2>&1 &
  AGENT_PIDS+=($!)
done
poll_until 60 "$SERVER_PID" sh -c "\"$SNG\" agent list -o json | grep -c '\"Idle\"' | grep -q 2" || die "the agents did not register"
REMOTE_S=$(burst remote agents "$N")
say "single runs on the remote agents"
single one-remote agents

REF_S=$(echo "scale=1; $BARE_MED * $N / 2 / 1000" | bc)
cat <<EOF
### Remote agents: a burst of $N runs, two agents of one slot vs the local agent of two slots

$(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, sng $SNG_DESC, engine $("$ENGINE" version | head -1).

| | total (s) | vs bare engine ×N/2 | queued → engine started in the burst, p50 / p95 / max (ms, 1 s resolution) |
|---|---|---|---|
| bare engine, one run by hand (median of $BARE_N) | $(echo "scale=2; $BARE_MED / 1000" | bc) per run → ${REF_S} for $N on 2 | 1.00× | |
| local agent, \`--max-concurrent-runs 2\` | $LOCAL_S | $(echo "scale=2; $LOCAL_S / $REF_S" | bc)× | $(pct "$WORK/local.latency" 50) / $(pct "$WORK/local.latency" 95) / $(pct "$WORK/local.latency" 100) |
| two \`sng agent\` of one slot | $REMOTE_S | $(echo "scale=2; $REMOTE_S / $REF_S" | bc)× | $(pct "$WORK/remote.latency" 50) / $(pct "$WORK/remote.latency" 95) / $(pct "$WORK/remote.latency" 100) |

Apply → engine started, for a run that waits for no slot (5 runs one after the other, p50 / max,
ms; it includes the reconcile pass that enqueues the job, the claim and the run's begin): local
agent $(pct "$WORK/one-local.latency" 50) / $(pct "$WORK/one-local.latency" 100), remote agent
$(pct "$WORK/one-remote.latency" 50) / $(pct "$WORK/one-remote.latency" 100).

Runs per agent: $(awk '{print $2}' "$WORK/remote.latency" | sort | uniq -c | awk '{printf "%s %s; ", $2, $1}')
Claim latency = the run record's \`startedAt - createdAt\`: from the job enqueued (with its run
record) to the engine's first step, through the claim (the agent's long poll), the run's begin on
the server (inputs, module pinned and checked, run token) and, for a remote agent, the module
fetched by the agent. A burst queues its jobs behind the 2 slots, so the p95 is mostly waiting for
a slot; the single runs measure the claim itself.
EOF
