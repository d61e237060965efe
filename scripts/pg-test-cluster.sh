#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests of the PostgreSQL token store.
#
#   scripts/pg-test-cluster.sh start [DIR]   initdb + pg_ctl start; prints the URL as its last line
#   scripts/pg-test-cluster.sh stop [DIR]    stops the cluster and removes DIR
#   scripts/pg-test-cluster.sh url [DIR]     prints the URL of a running cluster
#   scripts/pg-test-cluster.sh halt [DIR]    stops the server, keeping its data (outage tests)
#   scripts/pg-test-cluster.sh resume [DIR]  starts a halted server again on the same port
#   scripts/pg-test-cluster.sh restart [DIR] pg_ctl restart -m fast (MODE=immediate: -m immediate)
#   scripts/pg-test-cluster.sh freeze [DIR]  SIGSTOP to the server's processes: a database that
#                                             accepts connections and never answers (slow-database tests)
#   scripts/pg-test-cluster.sh thaw [DIR]    SIGCONT: the frozen server answers again
#
# FSYNC=on at start: a cluster that flushes its commits to disk as a production server does
# (durability benches; kept by halt/resume/restart); the default is fsync=off (tests only).
#
# DIR defaults to $WHEREABOUTS_PG_TEST_DIR, else /tmp/whereabouts-pg-test-$UID. The cluster
# listens on 127.0.0.1 on a free port (no unix socket), trusts local connections (it holds test
# data only) and runs as the calling user; as root, PostgreSQL refuses to run, so it runs as the
# unprivileged user `nobody`. Nothing is installed here: .ci/run installs Debian's `postgresql`.
set -euo pipefail

cmd=${1:-}
dir=${2:-${WHEREABOUTS_PG_TEST_DIR:-/tmp/whereabouts-pg-test-$(id -u)}}

# initdb and pg_ctl: on PATH, else Debian's versioned directory (the newest).
find_bin() {
  if command -v "$1" >/dev/null 2>&1; then
    command -v "$1"
    return
  fi
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$found" ]; then
    echo "pg-test-cluster: $1 not found; install PostgreSQL (Debian: apt-get install -y postgresql)" >&2
    exit 1
  fi
  echo "$found"
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u nobody -- "$@"
  else
    "$@"
  fi
}

url_of() {
  echo "postgres://whereabouts@127.0.0.1:$(cat "$dir/port")/postgres"
}

# fsync off unless the cluster was started with FSYNC=on; unix_socket_directories empty: TCP on
# 127.0.0.1 only.
server_options() {
  echo "-c listen_addresses=127.0.0.1 -c port=$(cat "$dir/port") -c unix_socket_directories='' -c fsync=$(cat "$dir/fsync" 2>/dev/null || echo off) -c max_connections=200"
}

server_start() {
  as_owner "$pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o "$(server_options)" >/dev/null || {
    cat "$dir/server.log" >&2
    exit 1
  }
}

case "$cmd" in
start)
  initdb=$(find_bin initdb)
  pg_ctl=$(find_bin pg_ctl)
  if [ -f "$dir/data/postmaster.pid" ] && as_owner "$pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    url_of
    exit 0
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  chmod 700 "$dir"
  if [ "$(id -u)" = 0 ]; then
    chown nobody "$dir"
    if ! runuser -u nobody -- test -x "$dir"; then
      echo "pg-test-cluster: $dir is not reachable by the user nobody (a parent directory is private); use a directory under /tmp" >&2
      exit 1
    fi
  fi
  port=$(node -e "const s=require('node:net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
  echo "$port" >"$dir/port"
  case "${FSYNC:-off}" in
  on | off) echo "${FSYNC:-off}" >"$dir/fsync" ;;
  *)
    echo "pg-test-cluster: FSYNC must be on or off, not ${FSYNC}" >&2
    exit 2
    ;;
  esac
  as_owner "$initdb" -D "$dir/data" -U whereabouts --auth=trust --encoding=UTF8 --no-locale >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
  server_start
  url_of
  ;;
halt)
  pg_ctl=$(find_bin pg_ctl)
  as_owner "$pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
  ;;
resume)
  pg_ctl=$(find_bin pg_ctl)
  server_start
  url_of
  ;;
restart)
  pg_ctl=$(find_bin pg_ctl)
  as_owner "$pg_ctl" -D "$dir/data" -l "$dir/server.log" -m "${MODE:-fast}" -w -t 60 restart -o "$(server_options)" >/dev/null
  url_of
  ;;
freeze | thaw)
  signal=STOP
  [ "$cmd" = thaw ] && signal=CONT
  main=$(head -n 1 "$dir/data/postmaster.pid")
  # The postmaster and every backend and helper it started.
  kill -s "$signal" "$main" $(pgrep -P "$main" || true)
  ;;
stop)
  if [ -d "$dir/data" ]; then
    pg_ctl=$(find_bin pg_ctl)
    as_owner "$pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
  ;;
url)
  url_of
  ;;
*)
  echo "usage: $0 start|stop|url|halt|resume|restart|freeze|thaw [DIR]" >&2
  exit 2
  ;;
esac
