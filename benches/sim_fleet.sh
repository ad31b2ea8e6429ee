#!/bin/bash
# `sim serve` at fleet scale (BENCHMARKS.md): start-up time and resident memory of the
# simulated API server for NODES nodes running 20 small DaemonSets, before and after one
# list of every pod.
#
#   benches/sim_fleet.sh [BINARY] [NODES]      # default target/release/daemonsync 5000
set -euo pipefail
BIN=$(realpath "${1:-target/release/daemonsync}")
NODES=${2:-5000}
DIR=$(mktemp -d)
trap 'kill $PID 2>/dev/null || true; rm -rf "$DIR"' EXIT
mkdir -p "$DIR/running"
for i in $(seq -w 1 20); do
  cat > "$DIR/running/ds-$i.yaml" <<YAML
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent-$i, namespace: fleet}
spec:
  selector: {matchLabels: {app: agent-$i}}
  template:
    metadata: {labels: {app: agent-$i}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
        - name: agent
          image: registry.example/agent-$i:1.0.0
          resources:
            requests: {cpu: 10m, memory: 16Mi}
YAML
done
cat > "$DIR/fleet.yaml" <<YAML
nodes: [{name: 'node-{i}', count: $NODES, labels: {kubernetes.io/os: linux}}]
running: [{manifest: running/}]
YAML
memory() { grep -E "VmHWM|VmRSS" "/proc/$PID/status" | tr -s ' \t\n' ' '; echo; }
start=$(date +%s.%N)
"$BIN" sim serve --config "$DIR/fleet.yaml" --kubeconfig "$DIR/kubeconfig" > "$DIR/out" 2>&1 &
PID=$!
until grep -q serving "$DIR/out"; do
  kill -0 $PID 2>/dev/null || { cat "$DIR/out"; exit 1; }
  sleep 0.2
done
echo "start-up: $(echo "$(date +%s.%N) - $start" | bc) s"
echo "ready: $(memory)"
URL=$(sed -n 's/.*at \(http[^;]*\);.*/\1/p' "$DIR/out")
t0=$(date +%s.%N)
bytes=$(curl -sf "$URL/api/v1/pods" | wc -c)
echo "list of every pod: $bytes bytes in $(echo "$(date +%s.%N) - $t0" | bc) s"
echo "after the list: $(memory)"
