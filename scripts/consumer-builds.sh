#!/usr/bin/env bash
# Builds two tiny user projects (scripts/consumers/) outside the reactor, in a temporary directory,
# with the Maven on PATH, against the artifacts `mvn install` put in the local repository. Run it
# after `mvn install` (scripts/test.sh does): inside the reactor, install runs after the tests, so a
# test there would only see the previous build's artifacts.
#
#   A (with-bom): imports leases-bom, depends on all four backend modules. Built offline. Must
#     resolve ONE Netty version (leases-parent's netty.version) and one Jackson minor, and its main
#     must acquire, renew and release a lease on each backend (PostgreSQL from $LEASES_POSTGRES_URL;
#     redis-server, etcd and a Consul dev agent started here on free loopback ports). Any failure
#     exits 1.
#   B (without-bom): the same four modules without the BOM. Reported, not asserted: it may need to
#     download the extra Netty versions it asks for (the BOM build never needs them).
#   C (custom-backend): a third party's own LeaseStore, compiled against lease-api alone and tested
#     with the whole lease-tck kit (lease-tck as a test dependency, nothing else from this build).
#     Built offline. Every scenario must run and pass (none skipped), or it exits 1.
#
# Extra Maven arguments (e.g. -Dmaven.repo.local=/tmp/repo for a repository other than ~/.m2) go
# in LEASES_CONSUMER_MVN_ARGS.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

pom_value() { # pom_value FILE XPATH-ish: the project's version, or a property
  python3 - "$1" "$2" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
r = ET.parse(sys.argv[1]).getroot()
e = r.find(sys.argv[2], ns)
print(e.text.strip())
PY
}
version=$(pom_value pom.xml m:version)
netty=$(pom_value pom.xml m:properties/m:netty.version)
jackson=$(pom_value pom.xml m:properties/m:jackson.version)
bom_netty=$(pom_value leases-bom/pom.xml m:properties/m:leases.netty.version)
bom_jackson=$(pom_value leases-bom/pom.xml m:properties/m:leases.jackson.version)
hikari=$(pom_value pom.xml m:properties/m:hikaricp.version)
bom_hikari=$(pom_value leases-bom/pom.xml m:properties/m:leases.hikaricp.version)
slf4j=$(pom_value pom.xml m:properties/m:slf4j.version)
bom_slf4j=$(pom_value leases-bom/pom.xml m:properties/m:leases.slf4j.version)
if [[ "$bom_netty" != "$netty" || "$bom_jackson" != "$jackson" || "$bom_hikari" != "$hikari" \
    || "$bom_slf4j" != "$slf4j" ]]; then
  echo "consumer-builds: leases-bom pins Netty $bom_netty / Jackson $bom_jackson / HikariCP" \
    "$bom_hikari / SLF4J $bom_slf4j but leases-parent builds with $netty / $jackson / $hikari /" \
    "$slf4j: make" \
    "leases-bom/pom.xml's properties equal" >&2
  exit 1
fi

: "${LEASES_POSTGRES_URL:?set LEASES_POSTGRES_URL to a JDBC URL (scripts/start-external-postgres.sh)}"
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
await_http() { # await_http URL WHAT: until the URL answers 200 with a body other than ""
  for _ in $(seq 1 300); do
    body=$(curl -fsS "$1" 2>/dev/null || true)
    if [ -n "$body" ] && [ "$body" != '""' ]; then return 0; fi
    sleep 0.2
  done
  echo "consumer-builds: $2 did not come up ($1)" >&2; return 1
}
servers=$(mktemp -d)
pids=()
stop_servers() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$servers"; }
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$servers" \
  >"$servers/redis.log" 2>&1 &
pids+=($!)
etcd_port=$(free_port); etcd_peer=$(free_port)
etcd --name consumer --data-dir "$servers/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "consumer=http://127.0.0.1:$etcd_peer" --log-level warn >"$servers/etcd.log" 2>&1 &
pids+=($!)
consul=$(scripts/install-consul.sh 2>/dev/null)
consul_port=$(free_port)
"$consul" agent -dev -node consumer -bind 127.0.0.1 -client 127.0.0.1 -http-port "$consul_port" \
  -dns-port -1 -grpc-port -1 -grpc-tls-port -1 -serf-lan-port "$(free_port)" \
  -serf-wan-port "$(free_port)" -server-port "$(free_port)" -hcl 'ports { https = -1 }' \
  -hcl 'disable_update_check = true' >"$servers/consul.log" 2>&1 &
pids+=($!)
await_http "http://127.0.0.1:$etcd_port/health" "etcd"
await_http "http://127.0.0.1:$consul_port/v1/status/leader" "Consul"
for _ in $(seq 1 300); do  # a session needs the agent's node in the catalog
  curl -fsS "http://127.0.0.1:$consul_port/v1/catalog/nodes" 2>/dev/null | grep -q '"Node"' && break
  sleep 0.2
done
for _ in $(seq 1 100); do
  redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
endpoints=("$LEASES_POSTGRES_URL" "redis://127.0.0.1:$redis_port" "http://127.0.0.1:$etcd_port"
  "http://127.0.0.1:$consul_port")

# shellcheck disable=SC2206
MVN=(mvn -B -ntp -q ${LEASES_CONSUMER_MVN_ARGS:-} -Dleases.version="$version")
# Named in full: an offline build cannot resolve the "dependency:" prefix, and a fresh local
# repository holds no dependency plugin (the reactor never uses it).
DEP=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
# plugins DIR: fetches, online, the plugins DIR's build runs (and what they need), nothing of its
# dependencies, so that the offline build after it proves the dependencies alone resolve offline.
plugins() { (cd "$1" && "${MVN[@]}" "$DEP:resolve-plugins" -DoutputFile=plugins.txt); }
work=$(mktemp -d)
trap 'rm -rf "$work"; stop_servers' EXIT

# build NAME [MAVEN FLAGS]: copies the project, resolves, compiles and runs its main.
build() {
  local name=$1; shift
  local dir="$work/$name"
  cp -r "$root/scripts/consumers/$name" "$dir"
  mkdir -p "$dir/src/main/java/example"
  cp "$root/scripts/consumers/Main.java" "$dir/src/main/java/example/"
  (plugins "$dir" && cd "$dir" && "${MVN[@]}" "$@" "$DEP:list" -DoutputFile=deps.txt \
      && "${MVN[@]}" "$@" compile "$DEP:build-classpath" -Dmdep.outputFile=cp.txt) \
    >"$dir/build.log" 2>&1 || { echo "--- $name: build failed"; tail -30 "$dir/build.log"; return 1; }
  java -cp "$dir/target/classes:$(cat "$dir/cp.txt")" example.Main "${endpoints[@]}" \
      >"$dir/run.txt" 2>&1 \
    || { echo "--- $name: main failed"; cat "$dir/run.txt"; return 1; }
}

# versions DIR GROUP-PATTERN: the distinct versions of the matching resolved artifacts
versions() {
  grep -E "^\s+$2:" "$1/deps.txt" | grep -v "netty-tcnative" | awk -F: '{print $4}' | sort -u
}

echo "consumer A (imports leases-bom $version; all four backends), offline:"
build with-bom -o || { echo "consumer-builds: A failed" >&2; exit 1; }
a="$work/with-bom"
a_netty=$(versions "$a" "io\.netty")
a_jackson=$(versions "$a" "com\.fasterxml\.jackson[^:]*" | cut -d. -f1,2 | sort -u)
echo "  Netty artifacts: $(grep -cE '^\s+io\.netty:' "$a/deps.txt"), versions: $(echo $a_netty)"
echo "  Jackson versions (major.minor): $(echo $a_jackson)"
sed 's/^/  /' "$a/run.txt" | grep -v "^  runtime\|SLF4J"
echo "  at run time: $(grep '^runtime' "$a/run.txt" | awk '{print $3}' | sort -u | tr '\n' ' ')"
fail=0
if [[ "$a_netty" != "$netty" ]]; then
  echo "consumer-builds: A resolved Netty '$(echo $a_netty)', expected only $netty" >&2; fail=1
fi
if [[ "$a_jackson" != "$(echo "$jackson" | cut -d. -f1,2)" ]]; then
  echo "consumer-builds: A resolved Jackson '$(echo $a_jackson)', expected only $jackson" >&2; fail=1
fi
if [[ $(grep -c '^cycle ok' "$a/run.txt") != 4 ]]; then
  echo "consumer-builds: A did not complete acquire, renew and release on all four backends" >&2
  fail=1
fi
runtime=$(grep '^runtime' "$a/run.txt" | grep -v tcnative | awk '{print $3}' | sort -u)
if [[ "$runtime" != "$netty" ]]; then
  echo "consumer-builds: A ran with Netty jars '$(echo $runtime)', expected only $netty" >&2; fail=1
fi

echo "consumer C (a custom backend, tested with lease-tck $version), offline:"
cp -r "$root/scripts/consumers/custom-backend" "$work/custom-backend"
if (plugins "$work/custom-backend" && cd "$work/custom-backend" && "${MVN[@]}" -o test) >"$work/custom-backend/build.log" 2>&1; then
  report=$(ls "$work"/custom-backend/target/surefire-reports/TEST-*.xml)
  counts=$(python3 - "$report" <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
print(r.get("tests"), r.get("failures"), r.get("errors"), r.get("skipped"))
PY
)
  read -r tests failures errors skipped <<<"$counts"
  echo "  MapLeaseStore: $tests kit scenarios, $failures failed, $errors errors, $skipped skipped"
  if [[ "$tests" -lt 40 || "$failures" != 0 || "$errors" != 0 || "$skipped" != 0 ]]; then
    echo "consumer-builds: C ran $tests scenarios ($failures failed, $errors errors, $skipped" \
      "skipped); expected the whole kit to run and pass" >&2
    fail=1
  fi
else
  echo "--- custom-backend: build or kit failed"; tail -40 "$work/custom-backend/build.log"
  echo "consumer-builds: C failed" >&2
  fail=1
fi

echo "consumer B (no BOM; all four backends ${version}):"
if build without-bom; then
  b="$work/without-bom"
  b_netty=$(versions "$b" "io\.netty")
  echo "  Netty versions resolved: $(echo $b_netty)"
  grep -E "^\s+io\.netty:" "$b/deps.txt" | grep -v tcnative | awk -F: '{print "    " $2 " " $4}' | sort
  echo "  Jackson versions: $(versions "$b" "com\.fasterxml\.jackson[^:]*" | tr '\n' ' ')"
  echo "  its main ran with Netty jars: $(grep '^runtime' "$b/run.txt" | awk '{print $3}' | sort -u | tr '\n' ' ')"
  grep '^cycle' "$b/run.txt" | sed 's/^/  /' 
  if [[ $(echo "$b_netty" | wc -l) -gt 1 ]]; then
    echo "  => without the BOM, Netty versions diverge; import dev.leases:leases-bom."
  fi
else
  echo "  (B could not be built; see above)"
fi
exit $fail
