#!/usr/bin/env bash
# The full nemesis run: at least 1,000 leadership changes on every backend (memory, PostgreSQL,
# Redis primary + replica, a 3-member etcd cluster, a 3-server Consul cluster), all servers started
# on loopback (--start-local), a fixed seed so that a finding can be replayed. Backends run at once,
# each as its own nemesis process with its own servers (NEMESIS_PARALLEL=0 runs them one after
# another). Logs go to reports/nemesis-full-<timestamp>/; the summary lines are printed at the end.
# Exit status: 0 no violation and no measurement failure; 1 a violation on some backend; 3 a
# measurement failure (see that backend's .out and .log).
#   NEMESIS_CHANGES (1000)  NEMESIS_SEED (20251201)  NEMESIS_BACKENDS (memory,postgres,redis,etcd,consul)
#   NEMESIS_PARALLEL (1)    extra arguments go to every `nemesis` process (e.g. --lanes 3 --workers 5)
set -euo pipefail
cd "$(dirname "$0")/.."
changes=${NEMESIS_CHANGES:-1000}
seed=${NEMESIS_SEED:-20251201}
backends=${NEMESIS_BACKENDS:-memory,postgres,redis,etcd,consul}
parallel=${NEMESIS_PARALLEL:-1}
jar=benchmarks/target/leases-benchmarks.jar
if [ ! -f "$jar" ] || [ -n "$(find lease-* benchmarks pom.xml -newer "$jar" \( -name '*.java' -o -name pom.xml -o -name '*.properties' \) -not -path '*/target/*' 2>/dev/null | head -1)" ]; then
  echo "nemesis-full: building the harness..." >&2
  mvn -B -q -ntp -Dstyle.color=never -DskipTests package -pl benchmarks -am >&2
fi
out=reports/nemesis-full-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out"
echo "nemesis-full: $changes changes per backend on $backends, seed $seed, logs in $out" >&2
started=$(date +%s)
declare -A pid
status=0
for b in ${backends//,/ }; do
  java -jar "$jar" nemesis --backends "$b" --start-local --changes "$changes" --seed "$seed" \
    --out "$out/$b" "$@" >"$out/$b.out" 2>"$out/$b.log" &
  pid[$b]=$!
  if [ "$parallel" != 1 ]; then
    wait "${pid[$b]}" || { s=$?; [ "$status" = 1 ] || status=$s; }
  fi
done
if [ "$parallel" = 1 ]; then
  for b in "${!pid[@]}"; do
    wait "${pid[$b]}" || { s=$?; [ "$status" = 1 ] || status=$s; }
  done
fi
for b in ${backends//,/ }; do
  grep -h -E "^nemesis: $b (faults by type|rate|changes|VIOLATION|FAILED)" "$out/$b.out" \
    || echo "nemesis: $b produced no summary; see $out/$b.log"
done
echo "nemesis-full: seed $seed, wall time $(( $(date +%s) - started )) s, exit status $status"
exit "$status"
