#!/usr/bin/env bash
# Starts Debian's PostgreSQL as a second, external test server: a throw-away cluster in a temp
# directory, on a free loopback port, trust authentication on 127.0.0.1 only.
# Usage: eval "$(scripts/start-external-postgres.sh)"  -> sets LEASES_POSTGRES_URL, LEASES_EXTERNAL_PG_DIR
# Stop:  scripts/start-external-postgres.sh stop "$LEASES_EXTERNAL_PG_DIR"
set -euo pipefail

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
if [ -z "$bindir" ]; then
  echo "start-external-postgres: Debian's postgresql is not installed; run scripts/install-test-servers.sh" >&2
  exit 1
fi
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

if [ "${1:-}" = stop ]; then
  dir=${2:?data directory}
  as_pg "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  exit 0
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dir=$(mktemp -d /tmp/leases-external-pg.XXXXXX)
chmod 755 "$dir"
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$dir"; fi
as_pg "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off" start >/dev/null \
  || { cat "$dir/server.log" >&2; exit 1; }
echo "export LEASES_POSTGRES_URL='jdbc:postgresql://127.0.0.1:$port/postgres?user=postgres'"
echo "export LEASES_EXTERNAL_PG_DIR='$dir'"
echo "start-external-postgres: $("$bindir/postgres" --version) on 127.0.0.1:$port" >&2
