#!/usr/bin/env bash
# Builds two tiny user projects (scripts/consumers/) outside the reactor, in a temporary directory,
# with the Maven on PATH, against the artifacts `mvn install` put in the local repository. Run it
# after `mvn install` (scripts/test.sh does): inside the reactor, install runs after the tests, so a
# test there would only see the previous build's artifacts.
#
#   A (with-bom): imports leases-bom, depends on lease-redis and lease-etcd. Built offline. Must
#     resolve ONE Netty version (leases-parent's netty.version) and one Jackson minor, and its main
#     must run. Any failure exits 1.
#   B (without-bom): the same two modules without the BOM. Reported, not asserted: it may need to
#     download the extra Netty versions it asks for (the BOM build never needs them).
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
if [[ "$bom_netty" != "$netty" || "$bom_jackson" != "$jackson" ]]; then
  echo "consumer-builds: leases-bom pins Netty $bom_netty / Jackson $bom_jackson but leases-parent" \
    "builds with $netty / $jackson: make leases-bom/pom.xml's properties equal" >&2
  exit 1
fi

# shellcheck disable=SC2206
MVN=(mvn -B -ntp -q ${LEASES_CONSUMER_MVN_ARGS:-} -Dleases.version="$version")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# build NAME [MAVEN FLAGS]: copies the project, resolves, compiles and runs its main.
build() {
  local name=$1; shift
  local dir="$work/$name"
  cp -r "$root/scripts/consumers/$name" "$dir"
  mkdir -p "$dir/src/main/java/example"
  cp "$root/scripts/consumers/Main.java" "$dir/src/main/java/example/"
  (cd "$dir" && "${MVN[@]}" "$@" dependency:list -DoutputFile=deps.txt \
      && "${MVN[@]}" "$@" compile dependency:build-classpath -Dmdep.outputFile=cp.txt) \
    >"$dir/build.log" 2>&1 || { echo "--- $name: build failed"; tail -30 "$dir/build.log"; return 1; }
  java -cp "$dir/target/classes:$(cat "$dir/cp.txt")" example.Main >"$dir/run.txt" 2>&1 \
    || { echo "--- $name: main failed"; cat "$dir/run.txt"; return 1; }
}

# versions DIR GROUP-PATTERN: the distinct versions of the matching resolved artifacts
versions() {
  grep -E "^\s+$2:" "$1/deps.txt" | grep -v "netty-tcnative" | awk -F: '{print $4}' | sort -u
}

echo "consumer A (imports leases-bom $version; lease-redis + lease-etcd), offline:"
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
runtime=$(grep '^runtime' "$a/run.txt" | grep -v tcnative | awk '{print $3}' | sort -u)
if [[ "$runtime" != "$netty" ]]; then
  echo "consumer-builds: A ran with Netty jars '$(echo $runtime)', expected only $netty" >&2; fail=1
fi

echo "consumer B (no BOM; lease-redis + lease-etcd ${version}):"
if build without-bom; then
  b="$work/without-bom"
  b_netty=$(versions "$b" "io\.netty")
  echo "  Netty versions resolved: $(echo $b_netty)"
  grep -E "^\s+io\.netty:" "$b/deps.txt" | grep -v tcnative | awk -F: '{print "    " $2 " " $4}' | sort
  echo "  Jackson versions: $(versions "$b" "com\.fasterxml\.jackson[^:]*" | tr '\n' ' ')"
  echo "  its main ran with Netty jars: $(grep '^runtime' "$b/run.txt" | awk '{print $3}' | sort -u | tr '\n' ' ')"
  if [[ $(echo "$b_netty" | wc -l) -gt 1 ]]; then
    echo "  => without the BOM, Netty versions diverge; import dev.leases:leases-bom."
  fi
else
  echo "  (B could not be built; see above)"
fi
exit $fail
