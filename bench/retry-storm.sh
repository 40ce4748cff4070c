#!/usr/bin/env bash
# Retry storm after an outage (issue 17, item 5): BENCH_RETRY_N (default 500) workspaces of a
# small module (examples/modules/pet) are applied while their registry is down, so every first
# run fails at once (ModuleUnavailable); the registry comes back on the same address; the retries
# fall due over the backoff window (deterministic jitter per workspace: sng_core::decide::backoff)
# and queue up behind BENCH_RETRY_SLOTS (default 2) run slots. Once BENCH_RETRY_BACKLOG (default
# 100) runs wait in the queue (metric sng_run_queue_depth), a user applies one more workspace;
# its run (class `user`) must start before the retries queued ahead of it (class `retry`).
#
# Measured, from the server's store once it stopped (SQLite, read with python3's sqlite3): the
# first failures (their spread), when each retry fell due (its job enqueued; relative to its own
# failure and to the registry's return: min/p50/max, the busiest second), when the retries
# started (claimed: min/p50/max after the registry came back, for those claimed), and for the
# user's apply: its wait in the queue, and how many retries queued before it were claimed after it.
# With BENCH_RETRY_DRAIN=1 the bench waits until every workspace is Ready (every retry started);
# by default it stops once the user's workspace is Ready (the retries still queued then are
# counted, not waited for: minutes instead of the whole drain).
#
# Environment: BENCH_RETRY_N, BENCH_RETRY_SLOTS, BENCH_RETRY_BACKLOG, BENCH_RETRY_DRAIN (0/1),
# BENCH_RETRY_TAG (0/1: the workspaces follow the tag instead of pinning its digest),
# SNG_BIN (skip the build), SNG_ENGINE (default .tools/bin/tofu), SNG_DOCKER_REGISTRY (default
# /usr/bin/docker-registry), BENCH_SNG_LOG (server log filter, default warn), BENCH_KEEP=1 keeps
# the temporary directory. Prints a Markdown report on stdout; progress goes to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/bench/lib.sh"

N=${BENCH_RETRY_N:-500}
SLOTS=${BENCH_RETRY_SLOTS:-2}
BACKLOG=${BENCH_RETRY_BACKLOG:-100}
DRAIN=${BENCH_RETRY_DRAIN:-0}
ENGINE=${SNG_ENGINE:-$ROOT/.tools/bin/tofu}
REGISTRY_BIN=${SNG_DOCKER_REGISTRY:-/usr/bin/docker-registry}
MODULE=$ROOT/examples/modules/pet
SERVER_LOG_FILTER=${BENCH_SNG_LOG:-warn}
# Many slots for the failing first runs (they fail before the engine: all at once); the slots of
# the retries are the tenant's `concurrentRuns` quota, set once every first run failed.
SERVER_ARGS=(--provider-mirror "$ROOT/.tools/providers" --max-concurrent-runs 64 --tag-poll-interval 1h)
for v in N SLOTS BACKLOG; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer"
done
[ "$BACKLOG" -lt "$N" ] || die "BENCH_RETRY_BACKLOG must be under BENCH_RETRY_N"

cleanup() {
  stop_server
  stop_registry
  remove_work
}

check_tools
pick_sng
make_work sng-bench-retry
start_registry
push_module pet
start_server "$WORK/server"

# metric NAME: the value of an unlabelled metric of the server.
metric() {
  curl -sf -H "Authorization: Bearer $SNG_TOKEN" "$SNG_SERVER/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}
# count_ws JQ_CONDITION: workspaces w-* whose status matches (python expression on `st`).
count_ws() {
  "$SNG" kind get workspaces -o json | python3 -c "
import json, sys
n = 0
for w in json.load(sys.stdin)['items']:
    st = w.get('status') or {}
    if w['metadata']['name'].startswith('w-') and ($1):
        n += 1
print(n)"
}

# The workspaces pin the module by digest (a retry is a retry: nothing else moves when the registry
# comes back); BENCH_RETRY_TAG=1 has them follow the tag instead: the first retry that succeeds
# resolves the tag, and every other workspace runs at once for the digest now known (a
# `dependency` run, no backoff).
DIGEST=$(curl -sI -H 'Accept: application/vnd.oci.image.manifest.v1+json' "http://$REGISTRY/v2/bench/pet/manifests/1.0.0" | tr -d '\r' | awk -F': ' 'tolower($1)=="docker-content-digest"{print $2}')
[ -n "$DIGEST" ] || die "no digest for bench/pet:1.0.0"
doc() {
  if [ "${BENCH_RETRY_TAG:-0}" = 1 ]; then
    workspace_doc "$1" pet
  else
    workspace_doc "$1" pet | sed "s|tag: \"1.0.0\"|digest: $DIGEST|"
  fi
}

# tenant_slots N: the default tenant's concurrentRuns quota.
tenant_slots() {
  printf 'apiVersion: tofu.stackngo.io/v1alpha1\nkind: Tenant\nmetadata: {name: default}\nspec:\n  quotas: {concurrentRuns: %s}\n' "$1" |
    "$SNG" apply -f - >/dev/null
}
# db_count SQL: a count read from the server's store (SQLite, read-only, while it runs).
db_count() {
  python3 -c 'import sqlite3, sys; print(sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute(sys.argv[2]).fetchone()[0])' \
    "$WORK/server/sng.db" "$1"
}
RETRIED="SELECT COUNT(DISTINCT workspace) FROM runs WHERE workspace LIKE 'w-%' AND json_extract(record, '\$.trigger') = 'retry'"

say "registry down; applying $N workspaces in one request"
stop_registry
for i in $(seq 1 "$N"); do doc "w-$i"; echo "---"; done >"$WORK/all.yaml"
"$SNG" apply -f "$WORK/all.yaml" >/dev/null
FAILED="SELECT COUNT(DISTINCT workspace) FROM runs WHERE workspace LIKE 'w-%' AND phase = 'Failed'"
failed_all() { [ "$(db_count "$FAILED")" = "$N" ]; }
poll_until 600 "$SERVER_PID" failed_all || die "the $N first runs did not all fail"
[ "$(db_count "$RETRIED")" = 0 ] || say "warning: some retries fell due before every first run had failed"
tenant_slots "$SLOTS"
say "all $N first runs failed; $SLOTS run slots; the registry comes back"
"$REGISTRY_BIN" serve "$WORK/registry/config.yml" >>"$WORK/registry/log" 2>&1 &
REGISTRY_PID=$!
poll_until 30 "$REGISTRY_PID" registry_up || die "the registry did not come back"
BACK=$(date +%s.%N)

backlog() { [ "$(metric sng_run_queue_depth)" -ge "$BACKLOG" ] 2>/dev/null; }
poll_until 300 "$SERVER_PID" backlog || die "the queue never held $BACKLOG runs"
say "$BACKLOG runs queued: a user applies user-apply"
USER_AT=$(date +%s.%N)
doc user-apply | "$SNG" apply -f - >/dev/null
user_ready() {
  "$SNG" kind get workspace user-apply -o json | python3 -c '
import json, sys
st = json.load(sys.stdin).get("status") or {}
sys.exit(0 if any(c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions", [])) else 1)'
}
poll_until 600 "$SERVER_PID" user_ready || die "user-apply did not become Ready"
retried_all() { [ "$(db_count "$RETRIED")" = "$N" ]; }
poll_until 600 "$SERVER_PID" retried_all || die "the retries did not all fall due"
if [ "$DRAIN" = 1 ]; then
  say "draining: waiting for the $N workspaces to be Ready"
  ready_all() { [ "$(count_ws "any(c['type'] == 'Ready' and c['status'] == 'True' for c in st.get('conditions', []))")" = "$N" ]; }
  poll_until 7200 "$SERVER_PID" ready_all || die "the workspaces did not all become Ready"
fi
DONE=$(date +%s.%N)
stop_server

python3 - "$WORK/server/sng.db" "$N" "$SLOTS" "$BACKLOG" "$BACK" "$USER_AT" "$DONE" "$DRAIN" "$SNG_DESC" <<'EOF'
import json, sqlite3, sys
from datetime import datetime

db, n, slots, backlog, back, user_at, done, drain, desc = sys.argv[1:]
back, user_at, done = float(back), float(user_at), float(done)
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
ts = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

runs = {}
for (rec,) in c.execute("SELECT record FROM runs"):
    r = json.loads(rec)
    runs[r["id"]] = r
jobs = {row[0]: row[1:] for row in c.execute("SELECT id, seq, priority, claimed_at, state FROM jobs")}

def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def stats(xs):
    return f"{min(xs):.1f} | {pct(xs, 50):.1f} | {max(xs):.1f}" if xs else "- | - | -"

first_fail = {}
for r in runs.values():
    if r["workspace"].startswith("w-") and r["trigger"] == "created" and r.get("finishedAt"):
        first_fail[r["workspace"]] = ts(r["finishedAt"])
retries = [r for r in runs.values() if r["workspace"].startswith("w-") and r["trigger"] == "retry"]
# The first retry of each workspace (after its first failure).
first_retry = {}
for r in sorted(retries, key=lambda r: jobs[r["id"]][0]):
    first_retry.setdefault(r["workspace"], r)
due_after_fail = [ts(r["createdAt"]) - first_fail[r["workspace"]] for r in first_retry.values() if r["workspace"] in first_fail]
due_after_back = [ts(r["createdAt"]) - back for r in first_retry.values()]
per_second = {}
for r in first_retry.values():
    per_second[r["createdAt"]] = per_second.get(r["createdAt"], 0) + 1
claimed = [jobs[r["id"]][2] / 1000 - back for r in first_retry.values() if jobs[r["id"]][2]]

user = next(r for r in runs.values() if r["workspace"] == "user-apply")
u_seq, u_prio, u_claim, _ = jobs[user["id"]]
# Retries queued before the user's run and still waiting when the user applied: how many a slot
# took before the user's run (overtook it), how many after.
ahead = [r for r in first_retry.values() if jobs[r["id"]][0] < u_seq]
waiting = [r for r in ahead if not jobs[r["id"]][2] or jobs[r["id"]][2] / 1000 > user_at]
overtook = [r for r in waiting if jobs[r["id"]][2] and jobs[r["id"]][2] < u_claim]
fails = list(first_fail.values())
classes = {}
for r in runs.values():
    classes[r.get("priority", "-")] = classes.get(r.get("priority", "-"), 0) + 1

print(f"{n} workspaces, {slots} run slots, user's apply once {backlog} runs were queued; {desc}.\n")
print(f"- first runs failed: {len(fails)}, all within {max(fails) - min(fails):.1f} s of each other")
print(f"- first retries enqueued (fell due): {len(due_after_fail)}; busiest second: {max(per_second.values())} retries "
      f"(over {len(per_second)} distinct seconds)")
print(f"- first retries claimed by a slot when the bench stopped: {len(claimed)} of {len(first_retry)}"
      f" ({'drained' if drain == '1' else 'stopped once the user apply was Ready'}, {done - back:.0f} s after the registry came back)")
print(f"- run classes recorded: " + ", ".join(f"{k} {v}" for k, v in sorted(classes.items())))
# The former backoff (15 s flat after a first failure): the retries would have fallen due as the
# failures came, 15 s later.
old = {}
for t in fails:
    old[int(t)] = old.get(int(t), 0) + 1
print(f"- reference, the former backoff (15 s flat after a first failure): the retries would have fallen due "
      f"over {len(old)} distinct seconds, busiest second {max(old.values())}")
print()
print("| seconds | min | p50 | max |")
print("|---|---:|---:|---:|")
print(f"| retry due, after the workspace's own failure | {stats(due_after_fail)} |")
print(f"| retry due, after the registry came back | {stats(due_after_back)} |")
print(f"| retry claimed (started), after the registry came back | {stats(claimed)} |")
print()
print(f"User's apply (`user-apply`, class `{user.get('priority')}`): applied {user_at - back:.1f} s after the registry came back, "
      f"claimed {u_claim / 1000 - user_at:.1f} s after the apply; "
      f"{len(waiting)} retries queued before it were still waiting then: {len(overtook)} of them started before it, "
      f"{len(waiting) - len(overtook)} after it.")
EOF
