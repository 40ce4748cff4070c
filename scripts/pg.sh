#!/usr/bin/env bash
# A PostgreSQL 15 for the tests of the store: `scripts/pg.sh start` starts one on 127.0.0.1
# (port SNG_PG_PORT, default 55432; data in a temporary directory, printed) unless one answers
# there already, and prints its URL; `scripts/pg.sh stop` stops the one it started.
#   bash scripts/pg.sh start
#   SNG_TEST_DATABASE=postgres://postgres@127.0.0.1:55432/postgres cargo test -p sng-store
set -euo pipefail

PORT="${SNG_PG_PORT:-55432}"
# PostgreSQL 15 where installed, else the newest major installed.
default_bin() {
  if [ -x /usr/lib/postgresql/15/bin/initdb ]; then
    echo /usr/lib/postgresql/15/bin
  else
    ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1
  fi
}
BIN="${SNG_PG_BIN:-$(default_bin)}"
STATE="${TMPDIR:-/tmp}/sng-pg-$PORT"
URL="postgres://postgres@127.0.0.1:$PORT/postgres"

# Run a PostgreSQL program as the `postgres` user when root (initdb refuses root).
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

answers() {
  "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" >/dev/null 2>&1
}

start() {
  if [ ! -x "$BIN/initdb" ]; then
    echo "PostgreSQL 15 is not installed in $BIN (apt-get install postgresql-15)" >&2
    exit 1
  fi
  if answers; then
    echo "PostgreSQL answers on port $PORT already: reused" >&2
    echo "$URL"
    return
  fi
  local dir
  dir="$(mktemp -d "${TMPDIR:-/tmp}/sng-pg.XXXXXX")"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
  as_pg "$BIN/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
  as_pg "$BIN/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o \
    "-p $PORT -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
    start >/dev/null || {
    cat "$dir/log" >&2
    exit 1
  }
  echo "$dir" >"$STATE"
  echo "PostgreSQL 15 started on port $PORT, data in $dir" >&2
  echo "$URL"
}

stop() {
  if [ ! -f "$STATE" ]; then
    echo "no PostgreSQL started by this script on port $PORT" >&2
    return
  fi
  local dir
  dir="$(cat "$STATE")"
  as_pg "$BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  rm -rf "$dir" "$STATE"
  echo "PostgreSQL on port $PORT stopped" >&2
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) echo "$URL" ;;
  # Exit 0 when a PostgreSQL answers on the port (make test stops only one it started).
  running) answers ;;
  *)
    echo "usage: $0 start|stop|url|running" >&2
    exit 2
    ;;
esac
