#!/usr/bin/env bash
# Build kafkalite's images from this checkout, sending the engine only what the images need
# (pyproject.toml, setup.cfg, README.md, pyspark_kafkalite.py, kafkalite/, zk_schema/,
# spark_integration/, docker/) — not .git, virtualenvs or caches:
#
#   docker/build.sh            kafkalite:latest        (broker and CLI)
#   docker/build.sh --spark    kafkalite:latest and kafkalite-spark:latest (the pipeline image)
#
# KAFKALITE_IMAGE / KAFKALITE_SPARK_IMAGE change the tags (docker-compose.yml reads the same
# variables). `docker compose build` builds the same images from the whole checkout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"
cd "$here/.."

spark=0
for arg in "$@"; do
    case "$arg" in
        --spark) spark=1 ;;
        *) echo "usage: docker/build.sh [--spark]" >&2; exit 2 ;;
    esac
done

build() {  # build TARGET TAG
    local t
    t=$(kl_now)
    tar -c --exclude=__pycache__ --exclude='*.pyc' --exclude='*.egg-info' \
        pyproject.toml setup.cfg README.md pyspark_kafkalite.py kafkalite zk_schema \
        spark_integration docker \
        | kl_quiet "$DOCKER" build --network host -f docker/Dockerfile --target "$1" -t "$2" -
    kl_step_done "build $2" "$t"
}

build kafkalite "${KAFKALITE_IMAGE:-kafkalite:latest}"
if [ "$spark" = 1 ]; then
    build spark "${KAFKALITE_SPARK_IMAGE:-kafkalite-spark:latest}"
fi
