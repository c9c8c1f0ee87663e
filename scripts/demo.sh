#!/usr/bin/env bash
# Set everything up (ZooKeeper, Java, a virtualenv with kafkalite and PySpark), start ZooKeeper
# and 3 brokers, run the demo (a replicated topic, keyed records, the Spark payments pipeline),
# print the results and stop everything it started. Keep the cluster running with:
#   .venv/bin/kafkalite cluster up --brokers 3
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --spark
exec .venv/bin/kafkalite cluster up --brokers 3 --data-dir "${KAFKALITE_DEMO_DIR:-./kafkalite-data}" \
  --demo --exit-after-demo "$@"
