#!/usr/bin/env bash
# Build local stand-ins for the two public base images kafkalite's docker files use, for machines
# that cannot pull from a registry:
#
#   python:3.11-slim  <- Debian bookworm (minbase, debootstrap) + Debian's python3 (3.11)
#   zookeeper:3.8     <- Debian bookworm (minbase, debootstrap) + Debian's ZooKeeper 3.8 + a JRE
#
# They carry the official names, so docker/Dockerfile and docker/docker-compose.yml run unchanged.
# Needs root (debootstrap), debootstrap, a running Docker engine, and network access to the Debian
# mirror and (through `docker build --network host`) nothing else.
#
# Cached: an image that already exists with this recipe's label is kept; an official image (no
# stand-in label) is never replaced. --force rebuilds. Environment:
#   DEBIAN_MIRROR (http://deb.debian.org/debian), KAFKALITE_STANDIN_CA (this machine's CA bundle,
#   copied into the python stand-in as PIP_CERT), KAFKALITE_DOCKER_CLI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=../lib.sh
. "$here/../lib.sh"

force=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        *) echo "usage: docker/standin/build.sh [--force]" >&2; exit 2 ;;
    esac
done

MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
BASE_IMAGE="kafkalite-standin/debian:$SUITE"
CA_BUNDLE="${KAFKALITE_STANDIN_CA:-${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}}"
[ -f "$CA_BUNDLE" ] || { echo "standin: no CA bundle at $CA_BUNDLE" >&2; exit 1; }

base_recipe="debootstrap-minbase-$SUITE-v1"
# one recipe per image: editing the ZooKeeper stand-in does not rebuild python's (nor, with it,
# every kafkalite image layer)
python_recipe="$( (echo "$base_recipe"; cat "$here/python.Dockerfile" "$CA_BUNDLE") \
    | sha256sum | cut -c1-16)"
zk_recipe="$( (echo "$base_recipe"; cat "$here/zookeeper.Dockerfile" \
    "$here/zookeeper-entrypoint.sh" "$here/zkServer.sh") | sha256sum | cut -c1-16)"

label_of() {  # label_of IMAGE LABEL -> value, "<none>" when unset, "" when no such image
    "$DOCKER" image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true
}

# needs_build IMAGE RECIPE: 0 when IMAGE must be (re)built
needs_build() {
    local image="$1" recipe="$2" have
    have="$(label_of "$image" org.kafkalite.standin.recipe)"
    if [ -z "$have" ]; then return 0; fi
    if [ "$have" = "<no value>" ]; then
        kl_log "standin: $image exists and is not a stand-in (an official image): kept"
        return 1
    fi
    if [ "$force" = 1 ] || [ "$have" != "$recipe" ]; then return 0; fi
    kl_log "standin: $image is up to date (recipe $recipe)"
    return 1
}

want_python=0; want_zk=0
needs_build python:3.11-slim "$python_recipe" && want_python=1
needs_build zookeeper:3.8 "$zk_recipe" && want_zk=1
if [ "$want_python" = 0 ] && [ "$want_zk" = 0 ]; then exit 0; fi

if [ "$force" = 1 ] || [ "$(label_of "$BASE_IMAGE" org.kafkalite.standin.recipe)" != "$base_recipe" ]; then
    command -v debootstrap >/dev/null || { echo "standin: debootstrap is not installed" >&2; exit 1; }
    [ "$(id -u)" = 0 ] || { echo "standin: debootstrap needs root" >&2; exit 1; }
    t=$(kl_now)
    rootfs="$(mktemp -d /var/tmp/kafkalite-standin-rootfs.XXXXXX)"
    trap 'rm -rf "$rootfs"' EXIT
    kl_log "standin: debootstrap --variant=minbase $SUITE from $MIRROR"
    debootstrap --variant=minbase "$SUITE" "$rootfs" "$MIRROR" > "$rootfs.log" 2>&1 \
        || { tail -30 "$rootfs.log" >&2; exit 1; }
    rm -f "$rootfs.log"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/var/cache/apt/*.bin
    kl_step_done "standin: debootstrap $SUITE" "$t"
    t=$(kl_now)
    tar --numeric-owner -C "$rootfs" -c . | "$DOCKER" import \
        --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' \
        --change "LABEL org.kafkalite.standin=debian:$SUITE org.kafkalite.standin.recipe=$base_recipe" \
        - "$BASE_IMAGE" >/dev/null
    rm -rf "$rootfs"
    trap - EXIT
    kl_step_done "standin: docker import $BASE_IMAGE" "$t"
fi

if [ "$want_python" = 1 ]; then
    t=$(kl_now)
    context="$(mktemp -d)"
    cp "$here/python.Dockerfile" "$context/Dockerfile"
    cp "$CA_BUNDLE" "$context/ca-bundle.crt"
    kl_quiet "$DOCKER" build --network host --build-arg "RECIPE=$python_recipe" -t python:3.11-slim \
        "$context"
    rm -rf "$context"
    kl_step_done "standin: build python:3.11-slim" "$t"
fi
if [ "$want_zk" = 1 ]; then
    t=$(kl_now)
    kl_quiet "$DOCKER" build --network host --build-arg "RECIPE=$zk_recipe" -t zookeeper:3.8 \
        -f "$here/zookeeper.Dockerfile" "$here"
    kl_step_done "standin: build zookeeper:3.8" "$t"
fi
"$DOCKER" image prune -f --filter label=org.kafkalite.standin >/dev/null 2>&1 || true
