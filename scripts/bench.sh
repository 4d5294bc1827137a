#!/usr/bin/env bash
# The benchmark (README): builds the runnable jar when sources changed, then runs the harness.
# No arguments: memory + embedded PostgreSQL, in under two minutes; prints the table and writes
# reports/<timestamp>/ (report.md, report.json, failover.svg). Arguments go to `bench`, e.g.
#   scripts/bench.sh --backends memory,postgres,redis --start-local
#   scripts/bench.sh --help
set -euo pipefail
cd "$(dirname "$0")/.."
jar=benchmarks/target/leases-benchmarks.jar
if [ ! -f "$jar" ] || [ -n "$(find lease-* benchmarks pom.xml -newer "$jar" \( -name '*.java' -o -name pom.xml -o -name '*.properties' \) -not -path '*/target/*' 2>/dev/null | head -1)" ]; then
  echo "bench: building (first run downloads dependencies)..." >&2
  mvn -B -q -ntp -Dstyle.color=never -DskipTests install -pl benchmarks -am >&2
fi
exec java -jar "$jar" bench "$@"
