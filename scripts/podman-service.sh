#!/usr/bin/env bash
# Start Podman's Docker-compatible API socket so the docker backend can be
# tested against Podman too, and load the test image into it from Docker.
# Prints the socket's address (for SWERVE_PODMAN_HOST) on its last line.
#
# Podman 4.3 (Debian bookworm) needs two settings on hosts like CI's: no
# default ulimits (runc cannot set them here) and runc rather than crun
# (crun refuses hybrid cgroup hierarchies). They go in a containers.conf of
# our own, passed with CONTAINERS_CONF, so the host's Podman is untouched.
#
# Usage: scripts/podman-service.sh     (root; needs podman and docker)
set -euo pipefail
SOCK=${SWERVE_PODMAN_SOCK:-/run/swerve-podman.sock}
CONF_DIR=${SWERVE_PODMAN_CONF_DIR:-/etc/swerve-podman}
IMAGE="${SWERVE_TEST_IMAGE:-swerve-test-base:bookworm}"

mkdir -p "$CONF_DIR"
cat >"$CONF_DIR/containers.conf" <<'CONF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF="$CONF_DIR/containers.conf"

# Always a fresh service on our own socket: one left from an earlier run may
# have a stale configuration or a deleted working directory (conmon then
# fails every container with "Failed to get working directory").
pkill -f "podman system service.*unix://$SOCK" 2>/dev/null || true
for _ in $(seq 1 20); do
  pgrep -f "podman system service.*unix://$SOCK" >/dev/null || break
  sleep 0.5
done
rm -f "$SOCK"
(cd / && exec podman system service --time=0 "unix://$SOCK" >/var/log/swerve-podman-service.log 2>&1 &)
for _ in $(seq 1 30); do
  curl -sf --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1 && break
  sleep 1
done
curl -sf --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1 ||
  { tail -20 /var/log/swerve-podman-service.log >&2; echo "podman-service.sh: the API socket did not come up" >&2; exit 1; }
# Podman's copy must be Docker's image, not an older one of the same name.
want=$(docker image inspect --format '{{.Id}}' "$IMAGE")
have=$(podman image inspect --format '{{.Id}}' "localhost/$IMAGE" 2>/dev/null || true)
if [ "sha256:${have#sha256:}" != "$want" ]; then
  docker save "$IMAGE" | podman load -q >/dev/null
fi
echo "unix://$SOCK"
