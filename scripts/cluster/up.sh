#!/usr/bin/env bash
# Starts a one-node Kubernetes cluster on this machine for swerve's k8s
# backend tests, and prints the path of its admin kubeconfig.
#
#   scripts/cluster/up.sh                  # -> $CLUSTER_DIR/admin.kubeconfig
#   KUBECONFIG=$(scripts/cluster/up.sh)
#
# Everything lives under CLUSTER_DIR (default $SWERVE_CI_CACHE/cluster):
# certificates and tokens made with openssl, etcd (Debian etcd-server), the
# kube-apiserver, kube-scheduler and kubelet that build-kube.sh built, and a containerd of
# its own (Debian containerd: its own root, state, socket and CNI dirs;
# docker's containerd is never touched) with a CNI bridge. Images come from
# the local docker engine (docker save | ctr import), no registry: a pause
# image made from busybox-static, swerve-test-base:bookworm, the leak
# tests' image (scripts/leak-image.sh) and the kit's django images, each
# only when containerd does not have it yet (set CLUSTER_IMAGES to change
# the list). Running it while the cluster is up
# only prints the kubeconfig. scripts/cluster/down.sh stops it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${SWERVE_CI_CACHE:-$HOME/.cache/swerve-ci}
F=${CLUSTER_DIR:-$CACHE/cluster}
NS=${CLUSTER_NAMESPACES:-swerve swerve-other}
NODE=localnode
PAUSE=docker.io/local/pause:1
IMAGES=${CLUSTER_IMAGES:-swerve-test-base:bookworm $("$here/../leak-image.sh" --name) $(for n in 15499 16139 16901 16938 17087; do printf 'swebench/sweb.eval.x86_64.django_1776_django-%s:latest ' $n; done)}
mkdir -p "$F"
P=$F/pki
SOCK=$F/ctrd/containerd.sock
KCFG=$F/admin.kubeconfig
API=https://127.0.0.1:16443
log() { printf '%6ss %s\n' "$(( $(date +%s) - t0 ))" "$*" >&2; }
t0=$(date +%s)

alive() { [ -f "$F/$1.pid" ] && kill -0 "$(cat "$F/$1.pid")" 2>/dev/null; }
api() { curl -sS --cacert "$P/ca.crt" -H "Authorization: Bearer $(cat "$P/admin.token")" "$@"; }
node_ready() {
  api "$API/api/v1/nodes/$NODE" 2>/dev/null | python3 -c '
import json,sys
d=json.load(sys.stdin)
sys.exit(0 if any(c["type"]=="Ready" and c["status"]=="True" for c in d.get("status",{}).get("conditions",[])) else 1)' 2>/dev/null
}

if alive etcd && alive apiserver && alive ctrd && alive scheduler && alive kubelet && node_ready; then
  echo "$KCFG"; exit 0
fi
if alive etcd || alive apiserver || alive ctrd || alive scheduler || alive kubelet; then
  log "a part of the cluster runs but the node is not Ready: restarting it"
  "$here/down.sh" >&2
fi

BIN=$("$here/build-kube.sh")
for cmd in etcd containerd ctr openssl curl python3; do
  command -v $cmd >/dev/null || { echo "up.sh: $cmd not found (apt-get install etcd-server containerd containernetworking-plugins busybox-static openssl curl)" >&2; exit 1; }
done
[ -x /usr/lib/cni/bridge ] || { echo "up.sh: /usr/lib/cni/bridge not found (apt-get install containernetworking-plugins)" >&2; exit 1; }
NODEIP=$(ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
NODEIP=${NODEIP:-$(hostname -I | awk '{print $1}')}

# Certificates and tokens, once per CLUSTER_DIR (the node IP is in the
# apiserver's certificate: a new IP makes new ones).
if [ ! -f "$P/done" ] || [ "$(cat "$P/done")" != "$NODEIP" ]; then
  rm -rf "$P"; mkdir -p "$P"
  (
    cd "$P"
    ossl() { openssl "$@" >/dev/null 2>&1; }
    ossl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=swerve-local-ca
    cert() { # name subject [san]
      ossl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2"
      if [ -n "${3:-}" ]; then printf 'subjectAltName=%s\n' "$3" > "$1.ext"; else : > "$1.ext"; fi
      ossl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 3650 -extfile "$1.ext"
    }
    cert apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:$NODEIP,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
    ossl genrsa -out sa.key 2048
    ossl rsa -in sa.key -pubout -out sa.pub
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > admin.token
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > node.token
    printf '%s,admin,1,"system:masters"\n%s,system:node:%s,2,"system:nodes"\n' "$(cat admin.token)" "$(cat node.token)" "$NODE" > tokens.csv
    chmod 600 ./*.key ./*.token tokens.csv
  )
  echo "$NODEIP" > "$P/done"
fi
kubeconfig() { # file user token
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: swerve-local
  cluster: {server: "$API", certificate-authority: "$P/ca.crt"}
users:
- name: $2
  user: {token: "$3"}
contexts:
- name: swerve-local
  context: {cluster: swerve-local, user: $2, namespace: swerve}
current-context: swerve-local
KC
  chmod 600 "$1"
}
kubeconfig "$KCFG" admin "$(cat "$P/admin.token")"
kubeconfig "$F/kubelet.kubeconfig" "system:node:$NODE" "$(cat "$P/node.token")"

# containerd and CNI configuration
mkdir -p "$F/ctrd" "$F/cni" "$F/kubelet-root" "$F/etcd-data" "$F/cni-state"
cat > "$F/ctrd/config.toml" <<TOML
version = 2
root = "$F/ctrd/root"
state = "$F/ctrd/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = "$F/ctrd/debug.sock"
[metrics]
  address = ""
[plugins]
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$PAUSE"
    enable_selinux = false
    # root here lacks CAP_SYS_RESOURCE: without this runc cannot start anything
    restrict_oom_score_adj = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$F/cni"
  [plugins."io.containerd.internal.v1.opt"]
    path = "$F/ctrd/opt"
TOML
cat > "$F/cni/10-swerve.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "swerve-local",
  "plugins": [
    {"type": "bridge", "bridge": "swervebr0", "isGateway": true, "ipMasq": true,
     "ipam": {"type": "host-local", "dataDir": "$F/cni-state", "ranges": [[{"subnet": "10.244.7.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
cat > "$F/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODEIP
port: 10250
readOnlyPort: 0
healthzPort: 0
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$SOCK
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$P/ca.crt"}
authorization: {mode: Webhook}
registerNode: true
resolvConf: ""
maxPods: 110
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
enforceNodeAllocatable: []
cgroupsPerQOS: true
serializeImagePulls: false
YAML

# The sysctls kubelet changes, saved once so down.sh can put them back.
[ -f "$F/sysctl.saved" ] || sysctl -n vm.overcommit_memory kernel.panic kernel.panic_on_oops | paste -sd' ' > "$F/sysctl.saved"

start() { # name logfile cmd...
  local name=$1; shift
  setsid nice -n 10 "$@" > "$F/$name.log" 2>&1 < /dev/null &
  echo $! > "$F/$name.pid"
}
start etcd etcd --name swerve-local --data-dir "$F/etcd-data" \
  --listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
  --listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
  --initial-cluster swerve-local=http://127.0.0.1:23800
start apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:23790 \
  --bind-address=127.0.0.1 --secure-port=16443 --advertise-address="$NODEIP" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" --token-auth-file="$P/tokens.csv" \
  --service-account-issuer=https://kubernetes.default.svc \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-cluster-ip-range=10.96.0.0/24 --authorization-mode=Node,RBAC \
  --enable-admission-plugins=NodeRestriction \
  --kubelet-client-certificate="$P/kubelet-client.crt" --kubelet-client-key="$P/kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP
start ctrd containerd --config "$F/ctrd/config.toml"

wait_for() { # what seconds cmd...
  local what=$1 n=$(( $2 * 2 )); shift 2
  until "$@" >/dev/null 2>&1; do
    n=$((n - 1))
    if [ $n -le 0 ]; then echo "up.sh: $what not ready; see $F/*.log" >&2; exit 1; fi
    sleep 0.5
  done
}
wait_for "containerd" 60 ctr -a "$SOCK" version
log "containerd up"

# Images, without a registry. The pause image is busybox-static sleeping.
have() { ctr -a "$SOCK" -n k8s.io images ls -q | grep -qx "$1"; }
if ! have "$PAUSE"; then
  tmp=$(mktemp -d)
  mkdir -p "$tmp/root/bin"
  cp /bin/busybox "$tmp/root/bin/busybox"
  tar -C "$tmp/root" -cf "$tmp/root.tar" .
  docker import --change 'ENTRYPOINT ["/bin/busybox","sleep","2147483647"]' "$tmp/root.tar" "${PAUSE#docker.io/}" >/dev/null
  docker save "${PAUSE#docker.io/}" | ctr -a "$SOCK" -n k8s.io images import - >/dev/null
  rm -rf "$tmp"
  log "imported $PAUSE"
fi
for img in $IMAGES; do
  full=$img
  case $img in */*) ;; *) full=library/$img ;; esac
  case ${full%%/*} in *.*|localhost*) ;; *) full=docker.io/$full ;; esac
  if have "$full"; then continue; fi
  if ! docker image inspect "$img" >/dev/null 2>&1; then
    log "skipping $img: not in the local docker engine"; continue
  fi
  docker save "$img" | ctr -a "$SOCK" -n k8s.io images import - >/dev/null
  log "imported $img"
done

wait_for "kube-apiserver" 120 api -f "$API/readyz"
log "apiserver ready"
start scheduler "$BIN/kube-scheduler" --kubeconfig "$KCFG" --leader-elect=false \
  --bind-address=127.0.0.1 --secure-port=10259
start kubelet "$BIN/kubelet" --config "$F/kubelet.yaml" --kubeconfig "$F/kubelet.kubeconfig" \
  --root-dir "$F/kubelet-root" --hostname-override "$NODE" --node-ip "$NODEIP" -v=1
wait_for "node $NODE" 120 node_ready
# The kubelet registers its node with the not-ready taint, which the
# controller-manager's node lifecycle controller removes; none runs here.
api -o /dev/null -X PATCH -H 'Content-Type: application/merge-patch+json' "$API/api/v1/nodes/$NODE" -d '{"spec":{"taints":null}}'
log "node Ready"

for ns in $NS; do
  api -o /dev/null -X POST -H 'Content-Type: application/json' "$API/api/v1/namespaces" \
    -d "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}" || true
  # No controller-manager runs here: make the default service account
  # that pod admission looks up.
  api -o /dev/null -X POST -H 'Content-Type: application/json' "$API/api/v1/namespaces/$ns/serviceaccounts" \
    -d '{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}' || true
done
log "cluster up: export KUBECONFIG=$KCFG"
echo "$KCFG"
