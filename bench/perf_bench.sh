#!/usr/bin/env bash
# The single-broker throughput benchmark of issue 3: `kafkalite perf produce` (acks=1) and
# `kafkalite perf consume` of the same records, against ZooKeeper + one broker started with
# `kafkalite cluster up` on free ports in a scratch directory. Prints both tools' output; the
# targets are produce >= 300,000 records/s and consume >= 600,000 records/s on a 2-core machine
# (client and broker share the cores).
#
#   bench/perf_bench.sh [NUM_RECORDS] [RECORD_SIZE] [ROUNDS]        (defaults 1000000 100 1)
#
# KAFKALITE (the kafkalite command) and PYTHON may be overridden.
set -euo pipefail

NUM_RECORDS=${1:-1000000}
RECORD_SIZE=${2:-100}
ROUNDS=${3:-1}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$( [ -x /work/venv/bin/python ] && echo /work/venv/bin/python || echo python3 )}
KAFKALITE=${KAFKALITE:-"$PYTHON -m kafkalite"}
DATA=$(mktemp -d /tmp/kafkalite-perf-bench-XXXXXX)

free_port() {
    "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
ZK_PORT=$(free_port)
BASE_PORT=$(free_port)
BOOTSTRAP=127.0.0.1:$BASE_PORT

cleanup() {
    if [ -n "${CLUSTER_PID:-}" ] && kill -0 "$CLUSTER_PID" 2>/dev/null; then
        kill -TERM "$CLUSTER_PID"
        wait "$CLUSTER_PID" 2>/dev/null || true
    fi
    rm -rf "$DATA"
}
trap cleanup EXIT

cd "$HERE"
$KAFKALITE cluster up --brokers 1 --data-dir "$DATA" --zk-port "$ZK_PORT" \
    --base-port "$BASE_PORT" >"$DATA/cluster.out" 2>&1 &
CLUSTER_PID=$!
for _ in $(seq 1 120); do
    grep -q "^KAFKALITE_ZOOKEEPER=" "$DATA/cluster.out" 2>/dev/null && break
    kill -0 "$CLUSTER_PID" 2>/dev/null || { cat "$DATA/cluster.out"; exit 1; }
    sleep 0.5
done
grep -q "^KAFKALITE_ZOOKEEPER=" "$DATA/cluster.out" || { cat "$DATA/cluster.out"; exit 1; }
echo "cluster: ZooKeeper 127.0.0.1:$ZK_PORT, broker $BOOTSTRAP ($(nproc) cores)"

for round in $(seq 1 "$ROUNDS"); do
    topic=perf-$round
    echo "== round $round: perf produce --num-records $NUM_RECORDS --record-size $RECORD_SIZE"
    $KAFKALITE perf produce --topic "$topic" --num-records "$NUM_RECORDS" \
        --record-size "$RECORD_SIZE" --throughput -1 --acks 1 --bootstrap-server "$BOOTSTRAP"
    echo "== round $round: perf consume --messages $NUM_RECORDS"
    $KAFKALITE perf consume --topic "$topic" --messages "$NUM_RECORDS" \
        --bootstrap-server "$BOOTSTRAP"
done
