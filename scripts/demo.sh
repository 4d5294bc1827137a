#!/usr/bin/env bash
# The main job (README): builds the runnable jar once, then runs the demo on embedded PostgreSQL
# (or on $LEASES_POSTGRES_URL when set). Extra arguments go to the jar, e.g. `scripts/demo.sh help`.
set -euo pipefail
cd "$(dirname "$0")/.."
jar=benchmarks/target/leases-benchmarks.jar
if [ ! -f "$jar" ] || [ -n "$(find lease-* benchmarks pom.xml -newer "$jar" -name '*.java' -o -newer "$jar" -name pom.xml 2>/dev/null | head -1)" ]; then
  echo "demo: building (first run downloads dependencies)..." >&2
  mvn -B -q -ntp -DskipTests install -pl benchmarks -am
fi
exec java -jar "$jar" "$@"
