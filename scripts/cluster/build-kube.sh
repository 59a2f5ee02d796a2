#!/usr/bin/env bash
# Builds kube-apiserver, kubelet and kube-scheduler from the Go module proxy, once per
# version, into a cache outside the work tree, and prints the bin directory.
#
#   scripts/cluster/build-kube.sh            # -> $SWERVE_CI_CACHE/kubernetes-v1.34.4/bin
#
# k8s.io/kubernetes replaces its staging modules with ./staging/..., so it
# cannot be installed with `go install`; a scratch module that requires it
# and points each staging module at its published twin builds both
# commands. A cold build takes about 15 minutes on 2 cores (the scheduler
# adds seconds: it shares the apiserver's packages); a warm one returns at
# once.
set -euo pipefail
KUBE_VERSION=${KUBE_VERSION:-v1.34.4}
CACHE=${SWERVE_CI_CACHE:-$HOME/.cache/swerve-ci}
DIR=$CACHE/kubernetes-$KUBE_VERSION
BIN=$DIR/bin
if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kubelet" ] && [ -x "$BIN/kube-scheduler" ] && [ -f "$DIR/.done" ]; then
  echo "$BIN"; exit 0
fi
mkdir -p "$DIR/src" "$BIN"
exec 9>"$DIR/.lock"
flock 9
if [ -x "$BIN/kube-scheduler" ] && [ -f "$DIR/.done" ]; then echo "$BIN"; exit 0; fi
staging_version=v0${KUBE_VERSION#v1}
cd "$DIR/src"
{
  echo "module swerve.local/kubebuild"
  echo
  echo "go 1.24"
  echo
  echo "require k8s.io/kubernetes $KUBE_VERSION"
  echo
  echo "replace ("
  for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go \
    cloud-provider cluster-bootstrap code-generator component-base component-helpers \
    controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation \
    endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy \
    kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission \
    sample-apiserver sample-cli-plugin sample-controller; do
    echo "	k8s.io/$m => k8s.io/$m $staging_version"
  done
  echo ")"
} > go.mod
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
go mod tidy >&2
ld="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION"
for c in kube-apiserver kubelet kube-scheduler; do
  [ -x "$BIN/$c" ] && continue
  echo "building $c $KUBE_VERSION (cold: several minutes)" >&2
  go build -trimpath -tags tools -ldflags "$ld" -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c" >&2
  mv "$BIN/$c.tmp" "$BIN/$c"
done
touch "$DIR/.done"
echo "$BIN"
