#!/usr/bin/env bash
# The test command (README): installs missing test servers, runs every module's tests against real
# servers started on free loopback ports (embedded PostgreSQL by default), then runs the PostgreSQL
# suite again against Debian's PostgreSQL as an external server, and prints a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

scripts/install-test-servers.sh

MVN=(mvn -B -ntp)
"${MVN[@]}" clean install

eval "$(scripts/start-external-postgres.sh)"
trap 'scripts/start-external-postgres.sh stop "$LEASES_EXTERNAL_PG_DIR"' EXIT
LEASES_POSTGRES_URL="$LEASES_POSTGRES_URL" "${MVN[@]}" -pl lease-postgres verify \
  -Dleases.reports=surefire-reports-external-postgres
unset LEASES_POSTGRES_URL

# The benchmark CLI end to end with tiny counts, on every backend that needs no external service.
java -jar benchmarks/target/leases-benchmarks.jar bench --backends memory,postgres,redis,etcd,consul \
  --start-local --trials 1 --latency-samples 30 --scale 1,10 --scale-rounds 1 \
  --out benchmarks/target/bench-smoke >/dev/null

# Nemesis: seeded random faults on every backend, at most about a minute each; exits 1 on a violation.
java -jar benchmarks/target/leases-benchmarks.jar nemesis --backends memory,postgres,redis,etcd,consul \
  --start-local --changes 30 --max-seconds 60 --seed 1 --out benchmarks/target/nemesis-smoke \
  2>benchmarks/target/nemesis-smoke.log || { tail -40 benchmarks/target/nemesis-smoke.log; exit 1; }

python3 scripts/test-summary.py
echo "test command wall time: $(( $(date +%s) - started )) s"
