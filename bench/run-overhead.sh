#!/usr/bin/env bash
# Platform overhead of sng versus the bare engine, side by side in the same run.
#
#   (a)  bare engine: a fresh directory with a copy of bench/modules/twenty (20 terraform_data),
#        then `init`, `plan -out`, `show -json`, `apply` of the plan, `output -json`, local backend.
#   (a') the same, each engine command inside bubblewrap with the arguments and environment that
#        sng's sandbox uses (crates/sng-runner/src/sandbox.rs, run.rs); skipped without bwrap.
#   (b)  sng: from `sng apply -f ws.yaml` until `sng wait workspace NAME --for condition=Ready`
#        returns. Each iteration is a first apply of a new workspace (bench-1, bench-2, …) of the
#        same module, so both sides create 20 resources.
#        cold: the first run of a server started on a fresh data dir (empty module cache),
#              one fresh server per sample (BENCH_COLD samples);
#        warm: one server, after one discarded warm-up run (module cache filled).
#   (b*) the same (cold on its own fresh servers, warm on the warm server), with Ready detected
#        by a 5 ms poll of the API (one keep-alive connection, the condition `sng wait` checks)
#        instead of `sng wait`, to show what the 200 ms poll interval of `sng wait` costs.
#   Iterations are interleaved (a, a', b, b*, a, a', …) so that drift of the machine hits all
#   cases alike; one untimed bare run first puts the engine's files in the page cache.
#
# "Platform time outside the engine" = sng total − sum of the engine steps of that run
# (`sng runs workspace NAME -o json`, field `steps`). For (a) and (a') the same column is the
# script's own time between the engine commands.
#
# Timing: wall clock, bash's EPOCHREALTIME (no fork inside the measured interval) or
# `date +%s%N`; python3's monotonic clock for (b*). Readiness of the registry and the servers is
# polled on a condition (20 ms between checks), never assumed after a sleep.
#
# Environment: BENCH_ITERATIONS (default 10), BENCH_COLD (default 3), BENCH_BWRAP (1/0, default 1
# when /usr/bin/bwrap exists), BENCH_FASTPOLL (1/0, default 1), SNG_BIN (skip the build),
# SNG_ENGINE (default .tools/bin/tofu), SNG_DOCKER_REGISTRY (default /usr/bin/docker-registry),
# BENCH_KEEP=1 keeps the temporary directory.
#
# Prints a Markdown report on stdout; progress goes to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/bench/lib.sh"

N=${BENCH_ITERATIONS:-10}
COLD=${BENCH_COLD:-3}
FASTPOLL=${BENCH_FASTPOLL:-1}
BWRAP=/usr/bin/bwrap
if [ -x "$BWRAP" ]; then DO_BWRAP=${BENCH_BWRAP:-1}; else DO_BWRAP=0; fi
ENGINE=${SNG_ENGINE:-$ROOT/.tools/bin/tofu}
REGISTRY_BIN=${SNG_DOCKER_REGISTRY:-/usr/bin/docker-registry}
MODULE=$ROOT/bench/modules/twenty

SERVER_LOG_FILTER=warn
SERVER_ARGS=()

[[ $N =~ ^[1-9][0-9]*$ ]] || die "BENCH_ITERATIONS must be a positive integer"
[[ $COLD =~ ^[0-9]+$ ]] || die "BENCH_COLD must be a non-negative integer"
check_tools
pick_sng

cleanup() {
  stop_server
  stop_registry
  remove_work
}
make_work sng-bench

# --- (a) bare engine --------------------------------------------------------------------------
# run_bare SERIES ITER WRAP: WRAP is "plain" or "bwrap".
run_bare() {
  local series=$1 iter=$2 wrap=$3
  local root=$WORK/$series/$iter
  local dir=$root/work
  mkdir -p "$root/home" "$root/plugin-cache"
  cp -r "$MODULE" "$dir"
  printf 'provider_installation {\n  direct {}\n}\n' >"$root/cli.tfrc"
  local -a pre=()
  if [ "$wrap" = bwrap ]; then
    # What crates/sng-runner/src/sandbox.rs builds, and the environment of run.rs.
    pre=(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$root/home" TMPDIR=/tmp
      CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_INPUT=0 TF_CLI_CONFIG_FILE="$root/cli.tfrc"
      TF_PLUGIN_CACHE_DIR="$root/plugin-cache" TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE=1
      RUST_LIB_BACKTRACE=0 "$BWRAP")
    local p
    for p in /usr /etc/ssl /etc/ca-certificates /etc/resolv.conf /etc/hosts /etc/nsswitch.conf \
      /etc/passwd /etc/group; do
      [ -e "$p" ] && pre+=(--ro-bind "$p" "$p")
    done
    for p in lib lib64 bin sbin; do
      [ -e "/usr/$p" ] && pre+=(--symlink "usr/$p" "/$p")
    done
    pre+=(--proc /proc --dev /dev --tmpfs /tmp)
    local engine_root
    engine_root=$(dirname "$(dirname "$ENGINE")")
    case $engine_root in /usr | /usr/*) ;; *) pre+=(--ro-bind "$engine_root" "$engine_root") ;; esac
    pre+=(--bind "$root" "$root" --bind "$root/plugin-cache" "$root/plugin-cache"
      --unshare-all --share-net --die-with-parent --chdir "$dir" --)
  fi
  local log=$root/engine.log t0 steps
  stamp t0
  (
    cd "$dir"
    if [ "$wrap" = plain ]; then
      export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_CLI_CONFIG_FILE="$root/cli.tfrc"
    fi
    engine_steps "$log" "${pre[@]}" >"$root/steps"
  ) || die "$series iteration $iter failed (log above)"
  local total
  elapsed_ms "$t0" total
  grep -q "Resources: 20 added" "$log" || { cat "$log" >&2; die "$series: 20 resources were not created"; }
  read -r steps <"$root/steps"
  printf '%s\t%s\t%s\t%s\n' "$series" "$iter" "$total" "$steps" >>"$RESULTS"
  rm -rf "$root"
}

# --- (b) sng ----------------------------------------------------------------------------------
workspace_yaml() { workspace_doc "$1" twenty; }

# record_sng SERIES ITER NAME TOTAL_MS: append the run's engine steps; check it created 20 resources.
record_sng() {
  local series=$1 iter=$2 name=$3 total=$4 runs
  runs=$("$SNG" runs workspace "$name" -o json)
  python3 - "$series" "$iter" "$total" "$runs" >>"$RESULTS" <<'EOF' || die "$series: unexpected run record for $name"
import json, sys
series, it, total, runs = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
assert runs, "no run recorded"
run = runs[-1]  # newest first: the last one is the workspace's first apply
assert run["phase"] == "Succeeded", run
assert run["plan"]["add"] == 20, run["plan"]
steps = dict(run["steps"])
names = ["init", "plan", "show", "apply", "output"]
# sng reads the outputs from the state it holds: no `output` engine process (0 ms); a run whose
# directory is identical to an earlier one's reuses its `init` ("init-reused": 0 ms, no process).
assert set(steps) <= set(names) | {"init-reused"} and {"plan", "show", "apply"} <= set(steps), steps
assert ("init" in steps) != ("init-reused" in steps), steps
print(f"{series}\t{it}\t{total}\t" + ",".join(str(steps.get(n, 0)) for n in names))
EOF
}

# run_sng SERIES ITER NAME: apply a new workspace, time until `sng wait` sees it Ready.
run_sng() {
  local series=$1 iter=$2 name=$3 file=$WORK/$3.yaml t0 total
  workspace_yaml "$name" >"$file"
  stamp t0
  "$SNG" apply -f "$file" >/dev/null
  "$SNG" wait workspace "$name" --for condition=Ready --timeout 5m >/dev/null ||
    { "$SNG" logs "$("$SNG" runs workspace "$name" -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')" >&2 || true; die "$name did not become Ready"; }
  elapsed_ms "$t0" total
  record_sng "$series" "$iter" "$name" "$total"
}

# run_sng_fastpoll SERIES ITER NAME: the same, Ready seen by a 5 ms poll of the API (one HTTP
# connection, the condition `sng wait` checks). Timed inside python, from just before `sng apply`.
run_sng_fastpoll() {
  local series=$1 iter=$2 name=$3 file=$WORK/$3.yaml total
  workspace_yaml "$name" >"$file"
  total=$(python3 - "$SNG" "$file" "$name" <<'EOF'
import http.client, json, os, subprocess, sys, time, urllib.parse
sng, file, name = sys.argv[1:4]
url = urllib.parse.urlparse(os.environ["SNG_SERVER"])
headers = {"Authorization": "Bearer " + os.environ["SNG_TOKEN"]}
conn = http.client.HTTPConnection(url.hostname, url.port)
t0 = time.monotonic()
subprocess.run([sng, "apply", "-f", file], check=True, stdout=subprocess.DEVNULL)
while True:
    conn.request("GET", f"/api/v1/tenants/default/workspaces/{name}", headers=headers)
    ws = json.loads(conn.getresponse().read())
    st = ws.get("status") or {}
    ready = next((c for c in st.get("conditions") or [] if c["type"] == "Ready"), None)
    if ready and ready["status"] == "True" and st.get("observedGeneration") == ws["metadata"].get("generation") and not st.get("activeJob"):
        break
    failed = next((c for c in st.get("conditions") or [] if c["type"] == "Failed"), None)
    if failed and failed["status"] == "True" and st.get("observedGeneration") == ws["metadata"].get("generation"):
        sys.exit(f"{name} failed: {failed.get('message')}")
    if time.monotonic() - t0 > 300:
        sys.exit(f"{name}: timed out")
    time.sleep(0.005)
print(round((time.monotonic() - t0) * 1000))
EOF
  ) || die "$name did not become Ready"
  record_sng "$series" "$iter" "$name" "$total"
}

# --- the run ----------------------------------------------------------------------------------
say "registry"
start_registry
push_module twenty
ENGINE_VERSION=$("$ENGINE" version 2>/dev/null | head -1 || true)
if [ "$DO_BWRAP" = 1 ] || [ -x "$BWRAP" ]; then BWRAP_VERSION=$("$BWRAP" --version 2>/dev/null || echo bwrap); else BWRAP_VERSION="no bwrap"; fi
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# One untimed bare run: the engine's files in the page cache for everyone.
say "warm-up of the engine (not counted)"
run_bare warmup 0 plain
sed -i '/^warmup\t/d' "$RESULTS"

for c in $(seq 1 "$COLD"); do
  say "sng cold $c/$COLD: fresh server and data dir"
  start_server "$WORK/cold-$c"
  run_sng sng-cold "$c" bench-1
  stop_server
  rm -rf "$WORK/cold-$c"
  if [ "$FASTPOLL" = 1 ]; then
    say "sng cold $c/$COLD, 5 ms poll: fresh server and data dir"
    start_server "$WORK/cold-fast-$c"
    run_sng_fastpoll sng-cold-fastpoll "$c" bench-1
    stop_server
    rm -rf "$WORK/cold-fast-$c"
  fi
done

say "sng warm: one server, warm-up run bench-0 (not counted)"
start_server "$WORK/warm"
run_sng warmup 0 bench-0
sed -i '/^warmup\t/d' "$RESULTS"

for i in $(seq 1 "$N"); do
  say "iteration $i/$N"
  run_bare bare "$i" plain
  if [ "$DO_BWRAP" = 1 ]; then run_bare bare-bwrap "$i" bwrap; fi
  run_sng sng-warm "$i" "bench-$i"
  if [ "$FASTPOLL" = 1 ]; then run_sng_fastpoll sng-warm-fastpoll "$i" "bench-fast-$i"; fi
done
stop_server

# --- report -----------------------------------------------------------------------------------
python3 - "$RESULTS" "$N" "$COLD" "$ENGINE_VERSION" "$("$SNG" --version 2>/dev/null || echo sng)" \
  "$SNG_DESC" "$LOAD_BEFORE" "$(cut -d' ' -f1-3 /proc/loadavg)" "$BWRAP_VERSION" <<'EOF'
import statistics, sys, os, subprocess, datetime
path, n, cold, engine, sng_version, commit, load_before, load_after, bwrap = sys.argv[1:10]
rows = {}
for line in open(path):
    series, it, total, steps = line.rstrip("\n").split("\t")
    rows.setdefault(series, []).append((int(total), [int(x) for x in steps.split(",")]))

def med(xs):
    return statistics.median(xs) if xs else None

def fmt(x):
    return "–" if x is None else f"{x:.0f}"

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"Machine: {os.cpu_count()} CPUs ({os.sched_getaffinity(0).__len__()} usable), {cpu}; "
      f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; engine {engine}; {sng_version} ({commit}); {bwrap}.")
print(f"Load average (1, 5, 15 min) before: {load_before}; after: {load_after}.")
print(f"Iterations: N={n} (warm and bare), cold samples={cold} (one fresh server each). Times in ms.")
print()
bare = med([t for t, _ in rows.get("bare", [])])
labels = [
    ("bare", "(a) bare engine, by hand"),
    ("bare-bwrap", "(a') bare engine in bwrap, by hand"),
    ("sng-cold", "(b) sng, cold (`sng wait`; first run of a fresh server)"),
    ("sng-cold-fastpoll", "(b*) sng, cold, Ready seen by a 5 ms API poll"),
    ("sng-warm", "(b) sng, warm (`sng wait`)"),
    ("sng-warm-fastpoll", "(b*) sng, warm, Ready seen by a 5 ms API poll"),
]
print("| case | n | median total | min total | median / (a) median | engine steps, median | outside the engine, median | outside the engine, min |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for key, label in labels:
    r = rows.get(key)
    if not r:
        continue
    totals = [t for t, _ in r]
    engine_sum = [sum(s) for _, s in r]
    outside = [t - sum(s) for t, s in r]
    ratio = f"{med(totals) / bare:.2f}×" if bare else "–"
    print(f"| {label} | {len(r)} | {fmt(med(totals))} | {min(totals)} | {ratio} | {fmt(med(engine_sum))} | "
          f"{fmt(med(outside))} | {min(outside)} |")
print()
print("Engine steps, median ms (for (a) and (a') timed around each command by the script; for (b) the `steps` sng records):")
print()
names = ["init", "plan", "show", "apply", "output"]
print("| case | " + " | ".join(names) + " | sum |")
print("|---|" + "---:|" * (len(names) + 1))
for key, label in labels:
    r = rows.get(key)
    if not r:
        continue
    cols = [fmt(med([s[i] for _, s in r])) for i in range(len(names))]
    print(f"| {label} | " + " | ".join(cols) + f" | {fmt(med([sum(s) for _, s in r]))} |")
print()
def check(ok, text):
    return ("met" if ok else "**missed**") + f": {text}"
warm = rows.get("sng-warm", [])
coldr = rows.get("sng-cold", [])
if bare and warm:
    out_w = med([t - sum(s) for t, s in warm])
    w = med([t for t, _ in warm])
    print("Targets (issue 3):")
    print()
    print(f"- platform time outside the engine ≤ 100 ms per run — "
          + check(out_w <= 100, f"warm median {out_w:.0f} ms")
          + (f"; cold median {med([t - sum(s) for t, s in coldr]):.0f} ms" if coldr else "") + ".")
    print(f"- total ≤ 1.15× the bare script — " + check(w <= 1.15 * bare, f"warm {w / bare:.2f}×")
          + (f"; cold {med([t for t, _ in coldr]) / bare:.2f}×" if coldr else "") + ".")
    print(f"- warm run no slower than the bare script — " + check(w <= bare, f"{w:.0f} ms vs {bare:.0f} ms") + ".")
EOF
