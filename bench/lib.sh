# Shell functions shared by the bench scripts (bench/run-overhead.sh, bench/restart-and-burst.sh).
# Sourced, not run: `source "$ROOT/bench/lib.sh"`. It defines functions only; what they read is set
# by the script:
#   ROOT, ENGINE, REGISTRY_BIN, MODULE   before check_tools, pick_sng, push_module;
#   SERVER_LOG_FILTER (the server's SNG_LOG) and SERVER_ARGS (array, extra `sng server`
#   arguments, may be unset)             before launch_server / start_server;
#   cleanup                              the function make_work has run at exit.
# They set WORK, RESULTS, SNG, SNG_DESC, REGISTRY, REGISTRY_PID, SERVER_PID, SERVER_DIR, and
# SNG_SERVER, SNG_TOKEN, SNG_TENANT (exported) for the `sng` client.

say() { echo "bench: $*" >&2; }
die() { echo "bench: error: $*" >&2; exit 1; }

# check_tools: the engine, docker-registry, python3 and curl are there; ENGINE made absolute.
check_tools() {
  [ -x "$ENGINE" ] || die "no engine at $ENGINE (run \`make setup\`)"
  [ -x "$REGISTRY_BIN" ] || die "no docker-registry at $REGISTRY_BIN (Debian package docker-registry)"
  local tool
  for tool in python3 curl; do command -v "$tool" >/dev/null || die "$tool is needed"; done
  ENGINE=$(readlink -f "$ENGINE")
}

# pick_sng: SNG is SNG_BIN when set, else a release build of this checkout; SNG_DESC says which.
pick_sng() {
  if [ -n "${SNG_BIN:-}" ]; then
    SNG=$SNG_BIN
    SNG_DESC="prebuilt SNG_BIN"
  else
    say "cargo build --release --bin sng"
    cargo build --release --bin sng >&2
    SNG=$ROOT/target/release/sng
    SNG_DESC="built from $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD -- crates 2>/dev/null || echo '+uncommitted changes')"
  fi
  [ -x "$SNG" ] || die "no sng binary at $SNG"
}

# make_work NAME: a fresh temporary directory WORK (${TMPDIR:-/tmp}/NAME.XXXXXX) with an empty
# RESULTS file; no registry or server yet; `cleanup` runs at exit (INT and TERM exit 130 and 143).
make_work() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  RESULTS=$WORK/results.tsv
  : >"$RESULTS"
  REGISTRY_PID=
  SERVER_PID=
  SERVER_DIR=
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}

# remove_work: remove WORK, or keep it with BENCH_KEEP=1.
remove_work() {
  if [ "${BENCH_KEEP:-0}" = 1 ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}

# stop_process VAR: SIGTERM to the background process whose id is in VAR (if any), wait for it to
# exit, empty VAR.
stop_process() {
  local pid=${!1}
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    printf -v "$1" '%s' ''
  fi
}

# --- time -------------------------------------------------------------------------------------
now_ns() { date +%s%N; }
# Timestamps of measured intervals, in microseconds, into a variable: bash's EPOCHREALTIME (the
# same wall clock as `date +%s%N`) when there, so that the timing itself forks no process in the
# middle of what it measures; `date +%s%N` otherwise.
stamp() {
  if [ -n "${EPOCHREALTIME:-}" ]; then
    printf -v "$1" '%s' "${EPOCHREALTIME//[.,]/}"
  else
    printf -v "$1" '%s' "$(($(date +%s%N) / 1000))"
  fi
}
# elapsed_ms START_US VAR: milliseconds since START_US, into VAR.
elapsed_ms() {
  local _now
  stamp _now
  printf -v "$2" '%s' "$(((_now - $1) / 1000))"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# poll_until SECONDS PID CMD…: run CMD every 20 ms until it succeeds; fail when PID dies or time is up.
poll_until() {
  local deadline=$(($(now_ns) + $1 * 1000000000)) pid=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || return 1
    [ "$(now_ns)" -lt "$deadline" ] || return 1
    sleep 0.02
  done
}

# --- registry ---------------------------------------------------------------------------------
registry_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$REGISTRY/v2/")" = 200 ]; }

# start_registry: a docker-registry on a free port of 127.0.0.1 (REGISTRY), data under WORK.
start_registry() {
  mkdir -p "$WORK/registry/data"
  local try
  for try in 1 2 3 4 5; do
    REGISTRY=127.0.0.1:$(free_port)
    cat >"$WORK/registry/config.yml" <<EOF
version: 0.1
log: { level: warn, accesslog: { disabled: true } }
storage: { filesystem: { rootdirectory: "$WORK/registry/data" } }
http: { addr: $REGISTRY }
EOF
    "$REGISTRY_BIN" serve "$WORK/registry/config.yml" >"$WORK/registry/log" 2>&1 &
    REGISTRY_PID=$!
    if poll_until 30 "$REGISTRY_PID" registry_up; then return 0; fi
    stop_registry
  done
  cat "$WORK/registry/log" >&2
  die "docker-registry did not start"
}

stop_registry() { stop_process REGISTRY_PID; }

# push_module NAME: MODULE pushed to the registry as bench/NAME, tag 1.0.0.
push_module() {
  "$SNG" module push "$MODULE" "oci://$REGISTRY/bench/$1" --tag 1.0.0 --insecure >/dev/null
}

# workspace_doc NAME MODULE_NAME: the Workspace NAME of the module bench/MODULE_NAME, tag 1.0.0.
workspace_doc() {
  cat <<EOF
apiVersion: tofu.stackngo.io/v1alpha1
kind: Workspace
metadata:
  name: $1
spec:
  module:
    source: oci://$REGISTRY/bench/$2
    tag: "1.0.0"
EOF
}

# --- server -----------------------------------------------------------------------------------
server_up() {
  [ -s "$SERVER_DIR/server.url" ] && curl -sf -o /dev/null "$(cat "$SERVER_DIR/server.url")/healthz"
}

# launch_server DIR LOG: start a server on DIR (new or existing) in the background, log appended
# to LOG; sets SERVER_PID and SERVER_DIR, does not wait.
launch_server() {
  SERVER_DIR=$1
  mkdir -p "$SERVER_DIR"
  # BENCH_SERVER_ENV: extra VAR=value words for the server only (e.g. an allocator's LD_PRELOAD,
  # MALLOC_ARENA_MAX), word-split.
  # shellcheck disable=SC2086
  env ${BENCH_SERVER_ENV:-} SNG_LOG=$SERVER_LOG_FILTER "$SNG" server --data-dir "$SERVER_DIR" --listen 127.0.0.1:0 \
    --engine "$ENGINE" --insecure-registry "$REGISTRY" ${SERVER_ARGS[@]+"${SERVER_ARGS[@]}"} >>"$2" 2>&1 &
  SERVER_PID=$!
}

# use_server: export the client settings of the server in SERVER_DIR.
use_server() {
  export SNG_SERVER SNG_TOKEN
  SNG_SERVER=$(cat "$SERVER_DIR/server.url")
  SNG_TOKEN=$(cat "$SERVER_DIR/admin.token")
  export SNG_TENANT=default
}

# start_server DIR [LOG]: launch (log in LOG, default DIR.log), wait until it answers, use it.
start_server() {
  local log=${2:-$1.log}
  launch_server "$1" "$log"
  poll_until 60 "$SERVER_PID" server_up || { cat "$log" >&2; die "sng server did not start"; }
  use_server
}

stop_server() { stop_process SERVER_PID; }

# --- bare engine ------------------------------------------------------------------------------
# engine_steps LOG [WRAPPER…]: in the current directory, the engine by hand as sng runs it (init,
# plan -out, show -json of the plan, apply of the plan, output -json), each command prefixed by
# WRAPPER, its output appended to LOG; prints the ms of each step on one line, comma-separated.
# Fails with LOG on stderr when a step fails.
engine_steps() {
  local log=$1 s t ms1 out=
  shift
  for s in init plan show apply output; do
    stamp t
    case $s in
      init) "$@" "$ENGINE" init -input=false >>"$log" 2>&1 ;;
      plan) "$@" "$ENGINE" plan -input=false -out=p >>"$log" 2>&1 ;;
      show) "$@" "$ENGINE" show -json p >/dev/null 2>>"$log" ;;
      apply) "$@" "$ENGINE" apply -input=false p >>"$log" 2>&1 ;;
      output) "$@" "$ENGINE" output -json >/dev/null 2>>"$log" ;;
    esac || { cat "$log" >&2; return 1; }
    elapsed_ms "$t" ms1
    out+="$ms1,"
  done
  echo "${out%,}"
}

# --- several replicas on PostgreSQL (bench/replicas.sh) ---------------------------------------
# Set by these: PG_URL (the server's URL, database `postgres`), REPLICA_PIDS and REPLICA_DIRS
# (arrays, one entry per replica started by start_replica).

# cpu_ticks PID VAR: utime+stime of the process (all its threads), in clock ticks, into VAR. No
# fork.
cpu_ticks() {
  local line rest
  read -r line <"/proc/$1/stat" || return 1
  rest=${line##*) } # after "(comm) ": field 3 (state) onwards
  local -a f
  read -r -a f <<<"$rest"
  # f[0] is field 3, so field N is f[N-3]: utime 14, stime 15.
  printf -v "$2" '%s' "$((f[11] + f[12]))"
}

# pg_start: the PostgreSQL of the tests (scripts/pg.sh start: started, or reused when one answers
# on its port); sets PG_URL. It is never stopped here: others may share it.
pg_start() {
  command -v psql >/dev/null || die "psql is needed (Debian package postgresql-client-15)"
  PG_URL=$("$ROOT/scripts/pg.sh" start 2>/dev/null) || die "scripts/pg.sh start failed"
}

# pg_db_url NAME: the URL of database NAME on PG_URL's server.
pg_db_url() { echo "${PG_URL%/*}/$1"; }

# pg_sql NAME SQL: run SQL in database NAME, unaligned tuples only, `|`-separated, on stdout;
# tried 3 times, a second apart, when psql fails (the server is shared: a full disk, a restart).
pg_sql() {
  local try out
  for try in 1 2 3; do
    if out=$(PGOPTIONS="-c client_min_messages=warning" psql "$(pg_db_url "$1")" -X -qAt -v ON_ERROR_STOP=1 -c "$2"); then
      [ -z "$out" ] || printf '%s\n' "$out"
      return 0
    fi
    [ "$try" = 3 ] || sleep 1
  done
  return 1
}

# pg_create_db NAME: a fresh database NAME (dropped first if it exists).
pg_create_db() {
  pg_sql postgres "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" >/dev/null
  pg_sql postgres "CREATE DATABASE \"$1\"" >/dev/null
}

# pg_server_store NAME: BENCH_STORE (sqlite, the default, or postgres) for the servers: with
# postgres, a fresh database sng_bench_NAME_PID on scripts/pg.sh's PostgreSQL (PG_DB; the caller
# drops it) and a master key in WORK, added to SERVER_ARGS.
pg_server_store() {
  case ${BENCH_STORE:-sqlite} in
    sqlite) ;;
    postgres)
      pg_start
      PG_DB=sng_bench_$1_$$
      pg_create_db "$PG_DB"
      head -c 32 /dev/urandom >"$WORK/master.key"
      chmod 600 "$WORK/master.key"
      SERVER_ARGS+=(--database "$(pg_db_url "$PG_DB")" --master-key-file "$WORK/master.key")
      ;;
    *) die "BENCH_STORE must be sqlite or postgres, not $BENCH_STORE" ;;
  esac
}

# pg_drop_db NAME: drop database NAME (its sessions are ended).
pg_drop_db() { pg_sql postgres "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" >/dev/null 2>&1 || true; }

# pg_postmaster_pid: the process id of the PostgreSQL server (first line of postmaster.pid in its
# data directory), or nothing when it cannot be read.
pg_postmaster_pid() {
  local dir
  dir=$(pg_sql postgres "SHOW data_directory" 2>/dev/null) || return 0
  [ -r "$dir/postmaster.pid" ] && head -1 "$dir/postmaster.pid"
}

# start_replica DIR LOG DATABASE_URL MASTER_KEY_FILE: start one more replica on DIR (its own data
# directory) sharing DATABASE_URL, wait until it answers; appended to REPLICA_PIDS, REPLICA_DIRS.
# The first replica of a fresh database writes DIR/admin.token; later ones get a copy of the first
# one's before they start. Leaves SERVER_PID and SERVER_DIR on it, client settings not changed.
start_replica() {
  local dir=$1 log=$2
  local -a SERVER_ARGS=(${SERVER_ARGS[@]+"${SERVER_ARGS[@]}"} --database "$3" --master-key-file "$4")
  mkdir -p "$dir"
  if [ "${#REPLICA_DIRS[@]}" -gt 0 ] && [ ! -s "$dir/admin.token" ]; then
    cp "${REPLICA_DIRS[0]}/admin.token" "$dir/admin.token"
  fi
  launch_server "$dir" "$log"
  REPLICA_PIDS+=("$SERVER_PID")
  REPLICA_DIRS+=("$dir")
  poll_until 60 "$SERVER_PID" server_up || { cat "$log" >&2; die "replica $dir did not start"; }
  [ -s "$dir/admin.token" ] || die "replica $dir: no admin token (the first replica of a database writes it)"
}

# stop_replicas: SIGTERM to every replica at once, wait for them; REPLICA_PIDS and REPLICA_DIRS
# emptied.
stop_replicas() {
  local p
  for p in ${REPLICA_PIDS[@]+"${REPLICA_PIDS[@]}"}; do kill -TERM "$p" 2>/dev/null || true; done
  for p in ${REPLICA_PIDS[@]+"${REPLICA_PIDS[@]}"}; do wait "$p" 2>/dev/null || true; done
  REPLICA_PIDS=()
  REPLICA_DIRS=()
  SERVER_PID=
}

# replica_urls: the URLs of the replicas started, space-separated.
replica_urls() {
  local d out=
  for d in "${REPLICA_DIRS[@]}"; do out+="$(cat "$d/server.url") "; done
  echo "${out% }"
}
