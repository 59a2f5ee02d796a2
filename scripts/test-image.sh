#!/usr/bin/env bash
# Build the base image swerve's Docker tests run in, without any registry:
# debootstrap a minimal Debian bookworm (python3, pytest, git, patch) and
# `docker import` it. Skips the build when the image already exists.
#
# Usage: scripts/test-image.sh [--force]
#   SWERVE_TEST_IMAGE   image name (default swerve-test-base:bookworm)
#   DEBIAN_MIRROR       mirror for debootstrap (default: the one apt uses here)
#   DOCKER              client command (default docker; podman works too)
set -euo pipefail

IMAGE="${SWERVE_TEST_IMAGE:-swerve-test-base:bookworm}"
DOCKER="${DOCKER:-docker}"
force=0
case "${1:-}" in
  --force) force=1 ;;
  -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "test-image.sh: unknown argument $1" >&2; exit 2 ;;
esac

if [ "$force" = 0 ] && $DOCKER image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "test-image.sh: $IMAGE already exists (use --force to rebuild)"
  exit 0
fi

command -v debootstrap >/dev/null || { echo "test-image.sh: debootstrap is missing: apt-get install -y debootstrap" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "test-image.sh: debootstrap needs root" >&2; exit 1; }

mirror="${DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
  mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 !~ /^\[/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
fi

dir=$(mktemp -d "${TMPDIR:-/var/tmp}/swerve-rootfs.XXXXXX")
trap 'rm -rf "$dir"' EXIT
start=$(date +%s)
echo "test-image.sh: debootstrap bookworm from $mirror into $dir"
debootstrap --variant=minbase --include=python3,python3-pytest,git,patch,procps \
  bookworm "$dir" "$mirror" >"$dir.log" 2>&1 || { tail -30 "$dir.log" >&2; rm -f "$dir.log"; exit 1; }
rm -f "$dir.log"
# A repo-shaped working directory and a git identity, as task images have.
mkdir -p "$dir/testbed"
chroot "$dir" git config --system user.email swerve@localhost
chroot "$dir" git config --system user.name swerve
chroot "$dir" git config --system init.defaultBranch main
rm -rf "$dir/var/cache/apt/archives/"*.deb "$dir/var/lib/apt/lists/"*
tar -C "$dir" -c . | $DOCKER import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'WORKDIR /testbed' \
  --change 'CMD ["bash"]' \
  - "$IMAGE" >/dev/null
echo "test-image.sh: built $IMAGE in $(( $(date +%s) - start ))s"
