#!/usr/bin/env bash
# Set up (scripts/setup.sh, with the Spark extra and Apache Kafka 2.8.2 as the oracle) and run the whole test suite: unit, integration,
# system and Spark tests against a real ZooKeeper and real broker processes; then the Docker system
# test (docker/ci.sh: installs docker.io, starts its own dockerd, builds the images, runs the
# docker-compose cluster) when running as root, or with KAFKALITE_WITH_DOCKER=1. Set
# KAFKALITE_WITH_DOCKER=0 to leave Docker out. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --spark --apache-kafka
rc=0
# pytest exits 5 when no tests ran: that, like any non-zero code, fails the run
.venv/bin/python -m pytest tests -m "not docker" "$@" || rc=$?
with_docker="${KAFKALITE_WITH_DOCKER:-}"
if [ -z "$with_docker" ]; then
  if [ "$(id -u)" -eq 0 ]; then with_docker=1; else with_docker=0; fi
fi
if [ "$with_docker" = 1 ]; then
  PYTHON=.venv/bin/python bash docker/ci.sh || rc=$?
else
  echo "test: Docker system test not run (it needs root to install and start dockerd;" \
       "run with KAFKALITE_WITH_DOCKER=1 to include it)" >&2
fi
exit "$rc"
