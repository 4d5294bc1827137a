#!/usr/bin/env bash
# The test command (README): installs missing test servers, runs every module's tests against real
# servers started on free loopback ports (embedded PostgreSQL by default), then runs the PostgreSQL
# suite again against Debian's PostgreSQL as an external server, and prints a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

scripts/install-test-servers.sh

MVN=(mvn -B -ntp)
# Every module's tests; two modules build and test at once where the module graph allows (each
# module's tests start their own servers on free ports, so they do not meet).
"${MVN[@]}" -T 2 clean install

# Two external clusters: the suite runs in two JVMs, each on a server of its own (some of its
# classes restart or reconfigure the server they meet); the user builds use the first.
eval "$(scripts/start-external-postgres.sh)"
pg_url_1=$LEASES_POSTGRES_URL pg_dir_1=$LEASES_EXTERNAL_PG_DIR
trap 'scripts/start-external-postgres.sh stop "$pg_dir_1"' EXIT
eval "$(scripts/start-external-postgres.sh)"
pg_url_2=$LEASES_POSTGRES_URL pg_dir_2=$LEASES_EXTERNAL_PG_DIR
trap 'scripts/start-external-postgres.sh stop "$pg_dir_1"; scripts/start-external-postgres.sh stop "$pg_dir_2"' EXIT
export LEASES_POSTGRES_URL=$pg_url_1 LEASES_EXTERNAL_PG_DIR=$pg_dir_1
logs=target/test-logs
mkdir -p "$logs"
# Four independent steps at once: the PostgreSQL suite against Debian's PostgreSQL; three user
# builds outside the reactor against the artifacts just installed (with and without leases-bom,
# all four backends, servers of their own; and a custom backend run through lease-tck); the short
# nemesis; and the benchmark CLI end to end
# with tiny counts on every backend (servers of its own).
LEASES_POSTGRES_URL_1=$pg_url_1 LEASES_EXTERNAL_PG_DIR_1=$pg_dir_1 \
  LEASES_POSTGRES_URL_2=$pg_url_2 LEASES_EXTERNAL_PG_DIR_2=$pg_dir_2 \
  "${MVN[@]}" -pl lease-postgres verify \
  -Dleases.reports=surefire-reports-external-postgres >"$logs/external-postgres.log" 2>&1 &
external=$!
LEASES_POSTGRES_URL="$LEASES_POSTGRES_URL" scripts/consumer-builds.sh >"$logs/consumer-builds.log" 2>&1 &
consumers=$!
# Nemesis: seeded random faults on every backend, at most about a minute each; exits 1 on a
# violation. Its servers and workers are its own (without LEASES_POSTGRES_URL: its PostgreSQL
# crash faults must not hit the external server the suite beside it uses); it mostly waits on TTLs.
env -u LEASES_POSTGRES_URL java -jar benchmarks/target/leases-benchmarks.jar nemesis --backends memory,postgres,redis,etcd,consul \
  --start-local --changes 30 --max-seconds 60 --seed 1 --out benchmarks/target/nemesis-smoke \
  >"$logs/nemesis-smoke.out" 2>benchmarks/target/nemesis-smoke.log &
nemesis=$!
# The benchmark smoke starts its own servers too: the external PostgreSQL is restarted mid-run by
# the suite beside it (PostgresServers.restartShared).
env -u LEASES_POSTGRES_URL java -jar benchmarks/target/leases-benchmarks.jar bench --backends memory,postgres,redis,etcd,consul \
  --start-local --trials 1 --latency-samples 30 --latency-warmup 2s --scale 1,10 --scale-rounds 1 --scale-ttl 2s \
  --out benchmarks/target/bench-smoke >"$logs/bench-smoke.log" 2>&1 \
  || { tail -40 "$logs/bench-smoke.log"; exit 1; }
wait "$external" || { grep -E "Tests run|FAIL|ERROR" "$logs/external-postgres.log" | tail -40; exit 1; }
wait "$consumers" || { cat "$logs/consumer-builds.log"; exit 1; }
grep -E "^consumer|versions|cycle|=>" "$logs/consumer-builds.log"
unset LEASES_POSTGRES_URL
wait "$nemesis" || { cat "$logs/nemesis-smoke.out"; tail -40 benchmarks/target/nemesis-smoke.log;
  exit 1; }
cat "$logs/nemesis-smoke.out"

python3 scripts/test-summary.py
echo "test command wall time: $(( $(date +%s) - started )) s"
