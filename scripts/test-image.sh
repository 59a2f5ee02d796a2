#!/usr/bin/env bash
# Build the base image swerve's Docker tests and `swerve demo` start from,
# without any registry: a minimal Debian bookworm made with debootstrap
# (python3, pytest, git, patch, procps; working directory /testbed), imported
# into the engine. There is one builder, `swerve demo base-image` (package
# internal/demo); this script runs it from the checkout. The image is stamped
# with a hash of its recipe: an image of that name built some other way, or
# from an older recipe, is rebuilt; one with the same stamp is kept.
#
# Usage: scripts/test-image.sh [--force]   (as root: debootstrap needs it)
#   SWERVE_TEST_IMAGE   image name (default swerve-test-base:bookworm)
#   DEBIAN_MIRROR       mirror for debootstrap (default: the one apt uses here)
#   DOCKER_HOST         the engine to import into (default: the local Docker)
set -euo pipefail
cd "$(dirname "$0")/.."
args=(--image "${SWERVE_TEST_IMAGE:-swerve-test-base:bookworm}")
case "${1:-}" in
  --force) args+=(--force) ;;
  -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "test-image.sh: unknown argument $1" >&2; exit 2 ;;
esac
[ -z "${DEBIAN_MIRROR:-}" ] || args+=(--mirror "$DEBIAN_MIRROR")
CGO_ENABLED=0 exec go run ./cmd/swerve demo base-image "${args[@]}"
