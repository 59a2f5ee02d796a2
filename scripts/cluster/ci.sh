#!/usr/bin/env bash
# CI step for the k8s backend: .ci/run evals what it prints.
#
#   eval "$(scripts/cluster/ci.sh)"
#
# Installs the Debian packages the local cluster needs, builds (or finds
# cached) kube-apiserver, kube-scheduler and kubelet, starts the cluster
# (up.sh), makes the image the init-container test copies swerve from, and
# prints the exports that make the k8s tests mandatory. A watchdog stops
# the cluster (down.sh) once the process that ran this script (.ci/run)
# has exited, however it exits, so nothing is left running after CI.
# Progress goes to stderr; only the exports go to stdout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
t0=$(date +%s)
log() { printf '[k8s %4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*" >&2; }

need=()
for p in etcd-server containerd containernetworking-plugins busybox-static openssl curl; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || { apt-get update -qq >&2; apt-get install -y -qq "${need[@]}" >/dev/null; }
fi
"$here/build-kube.sh" >/dev/null
log "kube binaries ready"
kcfg=$("$here/up.sh")
log "cluster up"

# The shim image: busybox (sh, cp) and this tree's static swerve at /swerve.
CACHE=${SWERVE_CI_CACHE:-$HOME/.cache/swerve-ci}
F=${CLUSTER_DIR:-$CACHE/cluster}
img=local/swerve-shim:ci
tmp=$(mktemp -d)
mkdir -p "$tmp/root/bin"
cp /bin/busybox "$tmp/root/bin/busybox"
for c in sh cp chmod mv; do ln -s busybox "$tmp/root/bin/$c"; done
(cd "$root" && CGO_ENABLED=0 nice -n 10 go build -trimpath -o "$tmp/root/swerve" ./cmd/swerve)
tar -C "$tmp/root" -cf "$tmp/root.tar" .
docker import "$tmp/root.tar" "$img" >/dev/null
docker save "$img" | ctr -a "$F/ctrd/containerd.sock" -n k8s.io images import - >/dev/null
rm -rf "$tmp"
log "shim image docker.io/$img imported"

# Stop the cluster when .ci/run ends: an EXIT trap in it (chained before
# any trap it had), and a watchdog in case it is killed without running one.
ci_pid=$PPID
setsid bash -c "while kill -0 $ci_pid 2>/dev/null; do sleep 2; done; CLUSTER_DIR='$F' '$here/down.sh'" </dev/null >/dev/null 2>&1 &

echo "swerve_k8s_down() { CLUSTER_DIR='$F' '$here/down.sh' >/dev/null 2>&1 || true; }"
echo "trap \"swerve_k8s_down; \$(trap -p EXIT | sed -e \"s/^trap -- '//\" -e \"s/' EXIT\\\$//\")\" EXIT"
# The local cluster's bridge plugin enforces no NetworkPolicy: network-less
# boxes are allowed to open on it, and TestNetworkIsolation checks that
# the backend finds it so.
echo "export KUBECONFIG='$kcfg' SWERVE_K8S_TESTS=1 SWERVE_K8S_ALLOW_NETWORK=1 SWERVE_K8S_EXPECT_NETWORK=open SWERVE_K8S_SHIM_IMAGE=docker.io/$img SWERVE_K8S_PARALLEL=\${SWERVE_K8S_PARALLEL:-20}"
