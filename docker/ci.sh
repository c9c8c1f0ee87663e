#!/usr/bin/env bash
# CI for the docker side of kafkalite, on a fresh Debian machine (root; apt reachable; no registry):
#
#   1. apt: docker.io, docker-compose, debootstrap (when missing)
#   2. a Docker engine: the one that answers, else dockerd started with its own data root
#      (/var/lib/kafkalite-docker, reused by later runs on the same machine) and stopped at the end
#   3. the stand-in base images python:3.11-slim and zookeeper:3.8 when missing (cached in the
#      data root; docker/standin/build.sh)
#   4. pytest -m docker on tests/system/test_docker*.py and the ZooKeeper launcher's container test
#      in tests/integration/test_zookeeper_launcher.py (they build kafkalite's images, runs the compose
#      cluster, kills a broker, runs the Spark pipeline service and compares its window totals
#      exactly with totals computed from its input, tears down; then the cp-all-in-one-style
#      docker-compose.cp-style.yml: a broker configured by cp-kafka's KAFKA_* variables, produce,
#      consume, the pipeline service again; it prints its own step timings)
#
# Each step prints its time. Extra arguments go to pytest. PYTHON (default: .venv/bin/python, made
# by scripts/setup.sh when missing) must have kafkalite installed with its test extra.
# KAFKALITE_DOCKER_PIPELINE=0 leaves out the Spark image and the pipeline step.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/.."
# shellcheck source=lib.sh
. "$here/lib.sh"

total=$(kl_now)
echo "docker-ci: $(date -u +%FT%TZ) on $(uname -srm), $(nproc) cores"

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

t=$(kl_now)
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    kl_log "docker-ci: apt-get install ${missing[*]}"
    for _ in $(seq 1 60); do  # another apt/dpkg may hold the lock
        fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock \
            >/dev/null 2>&1 || break
        sleep 5
    done
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
DOCKER="$(kl_docker_cli)"
kl_step_done "1 install docker.io/compose/debootstrap" "$t"

t=$(kl_now)
engine="$($SUDO "$here/engine.sh" start)"
kl_log "docker-ci: engine $engine ($("$DOCKER" version --format '{{.Server.Version}}'))"
stop_engine() {
    if [ "$engine" = started ]; then
        local t2
        t2=$(kl_now)
        $SUDO "$here/engine.sh" stop >/dev/null
        kl_step_done "5 stop the engine" "$t2"
    fi
    kl_step_done "docker-ci total" "$total"
}
trap stop_engine EXIT
kl_step_done "2 engine ($engine)" "$t"

t=$(kl_now)
$SUDO "$here/standin/build.sh"
kl_step_done "3 base images (stand-ins if missing)" "$t"

t=$(kl_now)
if [ -z "${PYTHON:-}" ]; then
    # the project's virtualenv (scripts/setup.sh makes it, with kafkalite and its test extra)
    [ -x .venv/bin/python ] || scripts/setup.sh
    PYTHON=.venv/bin/python
fi
rc=0
# in CI an engine is there (step 2): the test must not skip for want of one
KAFKALITE_DOCKER_REQUIRED=1 "$PYTHON" -m pytest -m docker -p no:cacheprovider -q \
    tests/system/test_docker*.py tests/integration/test_zookeeper_launcher.py "$@" || rc=$?
kl_step_done "4 pytest -m docker" "$t"
exit "$rc"
