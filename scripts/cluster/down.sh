#!/usr/bin/env bash
# Stops the cluster up.sh started: kubelet, every container of its
# containerd, containerd, kube-apiserver and etcd; removes its bridge and
# puts back the sysctls kubelet changed. Images stay in CLUSTER_DIR, so the
# next up.sh imports nothing. Safe to run when nothing runs.
set -uo pipefail
CACHE=${SWERVE_CI_CACHE:-$HOME/.cache/swerve-ci}
F=${CLUSTER_DIR:-$CACHE/cluster}
SOCK=$F/ctrd/containerd.sock
stop() { # name
  local pid
  [ -f "$F/$1.pid" ] || return 0
  pid=$(cat "$F/$1.pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$F/$1.pid"
}
stop kubelet
stop scheduler
if [ -S "$SOCK" ]; then
  for c in $(ctr -a "$SOCK" -n k8s.io tasks ls -q 2>/dev/null); do
    ctr -a "$SOCK" -n k8s.io tasks kill -s SIGKILL "$c" >/dev/null 2>&1
  done
  sleep 1
  for c in $(ctr -a "$SOCK" -n k8s.io containers ls -q 2>/dev/null); do
    ctr -a "$SOCK" -n k8s.io tasks delete -f "$c" >/dev/null 2>&1
    ctr -a "$SOCK" -n k8s.io containers delete "$c" >/dev/null 2>&1
  done
fi
stop ctrd
stop apiserver
stop etcd
# containerd-shim processes of this containerd outlive it; end them.
for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $SOCK" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
# Pod sandboxes' mounts and network namespaces under the cluster's dirs.
grep -o " $F/[^ ]*" /proc/mounts 2>/dev/null | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
ip link del swervebr0 2>/dev/null
# etcd's data and the CNI leases belong to this cluster run only.
rm -rf "$F/etcd-data" "$F/cni-state" "$F/kubelet-root"
if [ -f "$F/sysctl.saved" ]; then
  read -r om panic oops < "$F/sysctl.saved"
  sysctl -qw vm.overcommit_memory="$om" kernel.panic="$panic" kernel.panic_on_oops="$oops"
  rm -f "$F/sysctl.saved"
fi
echo "cluster in $F stopped" >&2
