#!/usr/bin/env bash
# Run `make test` the way a fresh machine with only Go would: in a container
# made from the local test base image with python3 (and pytest) removed, no C
# compiler, no container engine, no network, no ../shared, and none of the
# SWERVE_* or CI variables. The host's Go toolchain and module cache are
# mounted read-only at the same paths, the host's build cache is shared (a
# warm cache only saves time: set SWERVE_ONLYGO_COLD=1 for a cold one), the
# host's make is mounted in, and the checkout (tracked and untracked files,
# not ignored ones) is copied in. Every test that needs more than Go must skip
# with a one-line reason; the run fails otherwise.
#
# Usage: scripts/test-only-go.sh [make target, default test]
#   SWERVE_TEST_IMAGE   base image (default swerve-test-base:bookworm;
#                       scripts/test-image.sh builds it)
#   SWERVE_ONLYGO_IMAGE the derived image (default swerve-test-onlygo:bookworm)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
target=${1:-test}
base="${SWERVE_TEST_IMAGE:-swerve-test-base:bookworm}"
image="${SWERVE_ONLYGO_IMAGE:-swerve-test-onlygo:bookworm}"
goroot=$(go env GOROOT)
modcache=$(go env GOMODCACHE)
cache=()
[ -n "${SWERVE_ONLYGO_COLD:-}" ] || cache=(-v "$(go env GOCACHE)":/gocache -e GOCACHE=/gocache)
make=$(command -v make)

docker image inspect "$base" >/dev/null 2>&1 || { echo "test-only-go.sh: $base is missing: run scripts/test-image.sh" >&2; exit 1; }
# The derived image: the base without python3 and without the task-shaped
# /testbed, rebuilt when the base or this recipe changes.
dockerfile=$(printf 'FROM %s\nRUN apt-get purge -y -qq "python3*" "libpython3*" >/dev/null && apt-get autoremove -y -qq >/dev/null && rm -rf /testbed && ! command -v python3 && ! command -v cc\nWORKDIR /root\n' \
  "$(docker image inspect --format '{{.Id}}' "$base")")
stamp=$(printf '%s' "$dockerfile" | sha256sum | cut -c1-12)
if [ "$(docker image inspect --format '{{index .Config.Labels "swerve.onlygo"}}' "$image" 2>/dev/null || true)" != "$stamp" ]; then
  printf '%s\nLABEL swerve.onlygo=%s\n' "$dockerfile" "$stamp" | docker build -q -t "$image" - >/dev/null
fi

# The container has no network and sees the module cache read-only: fetch
# every module the build and the tests need into it first (on a machine
# whose cache is cold, `go vet` in there would otherwise try to write it).
go mod download

start=$(date +%s)
git ls-files -z --cached --others --exclude-standard | tar -c --null -T - |
  docker run --rm -i --network none \
    -v "$goroot":"$goroot":ro -v "$modcache":"$modcache":ro -v "$make":/usr/bin/make:ro "${cache[@]}" \
    -e PATH="$goroot/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    -e GOMODCACHE="$modcache" -e GOPROXY=off -e GOTOOLCHAIN=local -e HOME=/root \
    "$image" bash -c "mkdir -p /src/swerve && cd /src/swerve && tar -x && make $target"
echo "test-only-go.sh: make $target passed with only Go in $(( $(date +%s) - start ))s"
