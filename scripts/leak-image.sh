#!/usr/bin/env bash
# Build the image of the leak tests (package internal/episode/leaktest) in
# the local Docker engine when it is missing, and print its name: the test
# base image with the repositories internal/episode/leaktest/testdata/
# plant.sh makes under /leaks, tagged with the hash of plant.sh (the name
# leaktest.Image computes). No registry, no network: git makes everything.
# The backends that take their images from Docker get it from there:
# scripts/cluster/up.sh imports it into the cluster, apptainer-ci.sh
# converts it; the Docker, Podman and E2B tests build it themselves when
# missing (the same recipe: leaktest.Dockerfile).
#
# Usage: scripts/leak-image.sh [--name]   (--name: print the name only)
#   SWERVE_TEST_IMAGE   base image (default swerve-test-base:bookworm)
#   SWERVE_LEAK_IMAGE   the name, instead of the hash's
set -euo pipefail
cd "$(dirname "$0")/.."
recipe=internal/episode/leaktest/testdata/plant.sh
base=${SWERVE_TEST_IMAGE:-swerve-test-base:bookworm}
img=${SWERVE_LEAK_IMAGE:-swerve-test-leaks:$(sha256sum "$recipe" | cut -c1-12)}
case "${1:-}" in
  --name) echo "$img"; exit 0 ;;
  -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "leak-image.sh: unknown argument $1" >&2; exit 2 ;;
esac
if ! docker image inspect "$img" >/dev/null 2>&1; then
  docker image inspect "$base" >/dev/null 2>&1 || { echo "leak-image.sh: $base is missing: run scripts/test-image.sh" >&2; exit 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp "$recipe" "$tmp/plant.sh"
  # The same three lines as leaktest.Dockerfile.
  printf 'FROM %s\nCOPY plant.sh /tmp/plant.sh\nRUN sh /tmp/plant.sh /leaks && rm /tmp/plant.sh\n' "$base" >"$tmp/Dockerfile"
  docker build -q -t "$img" "$tmp" >/dev/null
fi
echo "$img"
