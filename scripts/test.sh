#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite: unit, integration and system tests
# against a real ZooKeeper and real broker processes. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh ${KAFKALITE_SETUP_ARGS:-}
# pytest exits 5 when no tests ran; that is a failure here, and any non-zero code fails the run.
exec .venv/bin/python -m pytest tests -q "$@"
