#!/usr/bin/env bash
#
# install-consul.sh - make a `consul` server binary available for the
# integration tests, building HashiCorp Consul from its Go module.
#
# Only a Go toolchain and a Go module proxy (GOPROXY, default
# proxy.golang.org) are needed: no GitHub access, no release downloads,
# no Docker. The binary is cached OUTSIDE the repository:
#
#   ${LEASES_CACHE_DIR:-$HOME/.cache/leases}/consul/<CONSUL_VERSION>/consul
#
# Behaviour:
#   * If `consul` is already on PATH, or the cached binary exists, and it
#     runs `consul version`, its path is printed and the script exits 0.
#   * Otherwise the pinned Consul module is downloaded (checksums are
#     verified against the Go checksum database as usual), copied to a
#     temporary build directory, its in-tree `replace` directives
#     (./api, ./sdk, ./proto-public, ...) are dropped so that those nested
#     modules come from the proxy at the versions Consul's go.mod requires,
#     and `go build` produces the binary, which is moved into the cache
#     atomically.
#
# Output: progress, timing and version go to stderr; stdout receives exactly
# one line, the absolute path of the consul binary, so callers can do
#   CONSUL="$(scripts/install-consul.sh)"
#
# Environment knobs:
#   CONSUL_VERSION        Consul module version to build (default pinned below)
#   CONSUL_NESTED_OVERRIDES  "module@version ..." for nested modules (see below)
#   LEASES_CACHE_DIR      cache root (default $HOME/.cache/leases)
#   CONSUL_IGNORE_PATH=1  ignore a `consul` already on PATH, use/build the cache
#   CONSUL_FORCE_BUILD=1  rebuild even if a usable binary exists
#   GO                    go command to use (default: go on PATH, then /usr/local/go/bin/go)
#
set -euo pipefail

# Newest Consul release that the module proxy serves and that builds with
# Go 1.26 (its go.mod asks for go 1.25.9).
DEFAULT_CONSUL_VERSION="v1.22.7"
CONSUL_VERSION="${CONSUL_VERSION:-${DEFAULT_CONSUL_VERSION}}"
[[ "${CONSUL_VERSION}" == v* ]] || CONSUL_VERSION="v${CONSUL_VERSION}"

# Versions of Consul's nested modules (api, sdk, proto-public,
# envoyextensions, troubleshoot). By default they are the versions in the
# `require` block of Consul's own go.mod; entries here (module@version,
# space separated) take precedence. For v1.22.7 the go.mod requires
# api v1.33.7, but the v1.22.7 tree uses api fields added later
# (ACLAuthMethod.TokenNameFormat, ACLToken.Name), first published in
# api v1.34.1; sdk v0.17.3, proto-public v0.7.4, envoyextensions v0.9.6
# and troubleshoot v0.8.7 are used as required.
if [[ "${CONSUL_VERSION}" == "${DEFAULT_CONSUL_VERSION}" ]]; then
  CONSUL_NESTED_OVERRIDES="${CONSUL_NESTED_OVERRIDES-github.com/hashicorp/consul/api@v1.34.1}"
else
  CONSUL_NESTED_OVERRIDES="${CONSUL_NESTED_OVERRIDES-}"
fi
CONSUL_MODULE="github.com/hashicorp/consul"

CACHE_ROOT="${LEASES_CACHE_DIR:-${HOME:?HOME is not set}/.cache/leases}"
INSTALL_DIR="${CACHE_ROOT}/consul/${CONSUL_VERSION}"
CONSUL_BIN="${INSTALL_DIR}/consul"
BUILD_LOG="${INSTALL_DIR}/build.log"

log()  { printf '[install-consul] %s\n' "$*" >&2; }
die()  { printf '[install-consul] ERROR: %s\n' "$*" >&2; exit 1; }

# Succeeds if $1 is an executable that answers `consul version`.
consul_works() {
  [[ -x "$1" ]] || return 1
  timeout 30 "$1" version >/dev/null 2>&1
}

# Print the version banner of $1 (first line of `consul version`).
consul_banner() {
  timeout 30 "$1" version 2>/dev/null | head -n 1 || true
}

# Report a usable binary and exit successfully.
found() {
  log "using $1 ($(consul_banner "$1"))"
  printf '%s\n' "$1"
  exit 0
}

# ---------------------------------------------------------------------------
# 1. Fast path: an existing consul on PATH or in the cache.
# ---------------------------------------------------------------------------
if [[ "${CONSUL_FORCE_BUILD:-0}" != 1 ]]; then
  if [[ "${CONSUL_IGNORE_PATH:-0}" != 1 ]] && path_consul="$(command -v consul 2>/dev/null)"; then
    path_consul="$(readlink -f "${path_consul}")"
    consul_works "${path_consul}" && found "${path_consul}"
    log "ignoring ${path_consul}: 'consul version' failed"
  fi
  consul_works "${CONSUL_BIN}" && found "${CONSUL_BIN}"
fi

# ---------------------------------------------------------------------------
# 2. Build from the Go module.
# ---------------------------------------------------------------------------
GO="${GO:-$(command -v go 2>/dev/null || true)}"
[[ -n "${GO}" ]] || { [[ -x /usr/local/go/bin/go ]] && GO=/usr/local/go/bin/go; }
[[ -n "${GO}" && -x "${GO}" ]] || die "no Go toolchain found (put go on PATH or set GO=/path/to/go)"
log "Go toolchain: $("${GO}" version)"

# Deterministic Go settings for the build: never switch toolchains behind our
# back, resolve/verify modules through the proxy + checksum DB, static binary.
export GOTOOLCHAIN=local
export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
export GOWORK=off

mkdir -p "${INSTALL_DIR}" || die "cannot create cache dir ${INSTALL_DIR}"

# Serialise concurrent invocations (e.g. parallel test modules); the second
# caller waits and then takes the fast path.
if command -v flock >/dev/null 2>&1; then
  exec 9>"${INSTALL_DIR}/.lock"
  if ! flock -n 9; then
    log "another install is running, waiting for lock ${INSTALL_DIR}/.lock ..."
    flock 9
  fi
  if [[ "${CONSUL_FORCE_BUILD:-0}" != 1 ]] && consul_works "${CONSUL_BIN}"; then
    found "${CONSUL_BIN}"
  fi
fi

WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/consul-build.XXXXXX")"
tmp_bin="${INSTALL_DIR}/.consul.tmp.$$"   # renamed to ${CONSUL_BIN} when verified
cleanup() {
  # the copied module tree is read-only in places; make it removable
  chmod -R u+w "${WORK_DIR}" 2>/dev/null || true
  rm -rf "${WORK_DIR}"
  rm -f "${tmp_bin}"
}
trap cleanup EXIT

: >"${BUILD_LOG}"
# Run a command, appending its output to the build log (and echoing it to
# stderr); on failure show the tail of the log and abort with a clear message.
run() {
  local rc cmd
  cmd="$(printf '%q ' "$@")"
  log "+ ${cmd}"
  set +e
  "$@" 2>&1 | tee -a "${BUILD_LOG}" >&2
  rc=${PIPESTATUS[0]}
  set -e
  if ((rc != 0)); then
    log "---- last lines of ${BUILD_LOG} ----"
    tail -n 40 "${BUILD_LOG}" >&2 || true
    die "command failed (exit ${rc}): ${cmd}(full log: ${BUILD_LOG})"
  fi
}

start_ts=$(date +%s)

# 2a. Download (and checksum-verify) the Consul module source.
log "downloading ${CONSUL_MODULE}@${CONSUL_VERSION} via ${GOPROXY:-$("${GO}" env GOPROXY)}"
json_field() { sed -n "s/^[[:space:]]*\"$1\"[[:space:]]*:[[:space:]]*\"\\([^\"]*\\)\".*/\\1/p" <<<"$2" | head -n 1; }
dl_json="$(cd "${WORK_DIR}" && "${GO}" mod download -json "${CONSUL_MODULE}@${CONSUL_VERSION}" 2>>"${BUILD_LOG}")" \
  || die "go mod download ${CONSUL_MODULE}@${CONSUL_VERSION} failed (is this version served by ${GOPROXY:-the module proxy}?): $(json_field Error "${dl_json}") $(tail -n 3 "${BUILD_LOG}")"
mod_dir="$(json_field Dir "${dl_json}")"
info_file="$(json_field Info "${dl_json}")"
[[ -n "${mod_dir}" && -d "${mod_dir}" ]] || die "go mod download gave no source dir: ${dl_json}"
log "module source: ${mod_dir}"

# 2b. Copy to a writable build dir (the module cache is read-only).
SRC="${WORK_DIR}/src"
cp -R "${mod_dir}" "${SRC}"
chmod -R u+w "${SRC}"
cd "${SRC}"

# 2c. Drop `replace` directives pointing into Consul's own tree; the module
# zip does not contain nested modules (api/, sdk/, ...), so they must come
# from the proxy. Their versions are the ones Consul's go.mod already
# `require`s, unless CONSUL_NESTED_OVERRIDES names another version.
mapfile -t local_replaces < <(awk '
  /=>/ {
    for (i = 1; i <= NF; i++) if ($i == "=>") break
    if ($(i + 1) !~ /^\.\.?\//) next          # only local-path targets
    s = ($1 == "replace") ? 2 : 1             # single-line or block form
    old = $s
    if (s + 1 < i) old = old "@" $(s + 1)     # "old vX => ./dir" form
    print old
  }' go.mod)
nested_modules=()
for r in "${local_replaces[@]}"; do
  log "dropping replace ${r} => (local dir)"
  "${GO}" mod edit -dropreplace="${r}"
  mod_path="${r%@*}"
  ver=""
  for o in ${CONSUL_NESTED_OVERRIDES}; do
    [[ "${o%@*}" == "${mod_path}" ]] && ver="${o#*@}"
  done
  if [[ -z "${ver}" ]]; then
    # the version in Consul's `require` block
    ver="$(awk -v m="${mod_path}" '$1 == m && $2 ~ /^v/ { print $2; exit }
                                   $1 == "require" && $2 == m { print $3; exit }' go.mod)"
  fi
  [[ -n "${ver}" ]] || die "go.mod of ${CONSUL_VERSION} has no require for ${mod_path}; set CONSUL_NESTED_OVERRIDES"
  nested_modules+=("${mod_path}@${ver}")
done
if ((${#nested_modules[@]})); then
  log "nested modules from proxy: ${nested_modules[*]}"
  # fetch them and record their go.sum entries (verified against sumdb)
  run "${GO}" mod download "${nested_modules[@]}"
  run "${GO}" get "${nested_modules[@]}"
fi

# 2d. Build. Version metadata mirrors Consul's Makefile (GitCommit/BuildDate).
build_date="$(sed -n 's/.*"Time"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "${info_file}" 2>/dev/null | head -n 1)"
git_commit="$(sed -n 's/.*"Hash"[[:space:]]*:[[:space:]]*"\([0-9a-f]\{7\}\).*/\1/p' "${info_file}" 2>/dev/null | head -n 1)"
ldflags="-s -w"
[[ -n "${build_date}" ]] && ldflags+=" -X ${CONSUL_MODULE}/version.BuildDate=${build_date}"
[[ -n "${git_commit}" ]] && ldflags+=" -X ${CONSUL_MODULE}/version.GitCommit=${git_commit}"

build_start=$(date +%s)
log "building consul ${CONSUL_VERSION} (this can take 5-15 minutes on 2 cores) ..."
run "${GO}" build -trimpath -ldflags "${ldflags}" -o "${tmp_bin}" .
build_secs=$(( $(date +%s) - build_start ))

consul_works "${tmp_bin}" || die "built binary ${tmp_bin} does not run 'consul version'"
mv -f "${tmp_bin}" "${CONSUL_BIN}"

total_secs=$(( $(date +%s) - start_ts ))
log "build time: ${build_secs}s (total incl. downloads: ${total_secs}s)"
log "version: $(consul_banner "${CONSUL_BIN}")"
log "installed: ${CONSUL_BIN}"
printf '%s\n' "${CONSUL_BIN}"
