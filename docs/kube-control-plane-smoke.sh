#!/usr/bin/env bash
# Manual end-to-end check of the cached control-plane binaries (not part of the repo).
set -euo pipefail
B=$(/work/main/scripts/build-kube.sh | tail -n1)
RUN=$(mktemp -d /tmp/agent-cp-run.XXXXXX)
PIDS=()
cleanup() {
  local p
  local i
  # stop in reverse order (kwok, apiserver, etcd) so the apiserver does not log etcd dial errors
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; wait "${PIDS[i]}" 2>/dev/null || true; done
  [[ ${KEEP_RUN:-} ]] || rm -rf "$RUN"
  echo "cleaned up $RUN" >&2
}
trap cleanup EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2fs", b-a}'; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
EP=$(freeport); PP=$(freeport); AP=$(freeport)
echo "run=$RUN etcd=$EP peer=$PP apiserver=$AP" >&2

openssl genrsa -out "$RUN/sa.key" 2048 2>/dev/null
TOKEN=test-token-$RANDOM$RANDOM
echo "$TOKEN,admin,admin,\"system:masters\"" >"$RUN/tokens.csv"

T0=$(now)
"$B/etcd" --name=t --data-dir="$RUN/etcd" \
  --listen-client-urls="http://127.0.0.1:$EP" --advertise-client-urls="http://127.0.0.1:$EP" \
  --listen-peer-urls="http://127.0.0.1:$PP" --initial-advertise-peer-urls="http://127.0.0.1:$PP" \
  --initial-cluster="t=http://127.0.0.1:$PP" --unsafe-no-fsync --log-level=warn \
  >"$RUN/etcd.log" 2>&1 &
PIDS+=($!); ETCD_PID=$!
until curl -sf "http://127.0.0.1:$EP/health" >/dev/null; do sleep 0.1; done
echo "etcd healthy after $(since "$T0")" >&2

T1=$(now)
"$B/kube-apiserver" --etcd-servers="http://127.0.0.1:$EP" \
  --bind-address=127.0.0.1 --secure-port="$AP" --cert-dir="$RUN/certs" \
  --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="$RUN/sa.key" --service-account-signing-key-file="$RUN/sa.key" \
  --token-auth-file="$RUN/tokens.csv" --authorization-mode=RBAC \
  --disable-admission-plugins=ServiceAccount,StorageObjectInUseProtection \
  --enable-priority-and-fairness=false --profiling=false \
  ${APISERVER_EXTRA:-} >"$RUN/apiserver.log" 2>&1 &
PIDS+=($!); API_PID=$!
H=(-sk -H "Authorization: Bearer $TOKEN")
URL="https://127.0.0.1:$AP"
until [[ $(curl "${H[@]}" "$URL/readyz" 2>/dev/null) == ok ]]; do
  kill -0 $API_PID 2>/dev/null || { tail -30 "$RUN/apiserver.log"; exit 1; }
  sleep 0.1
done
echo "apiserver /readyz ok after $(since "$T1") (total $(since "$T0"))" >&2
curl "${H[@]}" "$URL/version"

cat >"$RUN/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: $URL
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: $TOKEN
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
EOF
K() { kubectl --kubeconfig="$RUN/kubeconfig" "$@"; }

T2=$(now)
"${KWOK_BIN:-$B/kwok}" --kubeconfig="$RUN/kubeconfig" ${KWOK_FLAGS:---manage-all-nodes=false \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-lease-duration-seconds=40} >"$RUN/kwok.log" 2>&1 &
PIDS+=($!); KWOK_PID=$!

cat <<'EOF' | K apply -f - >&2
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-0
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
spec: {}
---
apiVersion: v1
kind: Pod
metadata:
  name: p1
  namespace: default
spec:
  nodeName: kwok-node-0
  containers:
  - name: c
    image: busybox
EOF
until [[ $(K get pod p1 -o jsonpath='{.status.phase}/{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == Running/True ]]; do
  kill -0 $KWOK_PID 2>/dev/null || { tail -30 "$RUN/kwok.log"; exit 1; }
  sleep 0.2
done
echo "pod Running/Ready $(since "$T2") after kwok start (total $(since "$T0"))" >&2
K get nodes -o wide >&2
K get pod p1 -o wide >&2
K get pod p1 -o jsonpath='{.status}' >&2; echo >&2

# deletion is finished by kwok (pod bound to a node)
T3=$(now)
K delete pod p1 --wait=true --timeout=30s >&2
echo "pod delete finished in $(since "$T3")" >&2

# a few more API features: service, pvc delete, watch
K create service clusterip s1 --tcp=80:80 >&2
K get svc s1 -o jsonpath='{.spec.clusterIP}' >&2; echo >&2
cat <<'EOF' | K apply -f - >&2
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: c1}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
EOF
K delete pvc c1 --timeout=20s >&2

echo "--- memory (RSS MiB) ---" >&2
for n in ETCD_PID API_PID KWOK_PID; do
  p=${!n}; echo "$n $(awk '/VmRSS/{printf "%.0f", $2/1024}' /proc/$p/status) (HWM $(awk '/VmHWM/{printf "%.0f", $2/1024}' /proc/$p/status))" >&2
done
du -sh "$RUN" >&2
echo "kwok log:" >&2; head -20 "$RUN/kwok.log" >&2

