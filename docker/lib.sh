# Shared by docker/ci.sh, docker/engine.sh and docker/standin/build.sh (sourced, not run).

# The docker CLI: Debian's docker.io client (/usr/bin/docker, the same version as its dockerd)
# when present, else whatever `docker` is on PATH; KAFKALITE_DOCKER_CLI overrides.
kl_docker_cli() {
    if [ -n "${KAFKALITE_DOCKER_CLI:-}" ]; then echo "$KAFKALITE_DOCKER_CLI"
    elif [ -x /usr/bin/docker ]; then echo /usr/bin/docker
    else command -v docker || echo docker
    fi
}
DOCKER="$(kl_docker_cli)"
# The classic builder: what docker-compose 1.29 uses too, and it needs no buildx plugin.
export DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}"

kl_now() { date +%s.%N; }
# kl_step_done NAME START: print how long a step took.
kl_step_done() {
    local name="$1" start="$2"
    awk -v name="$name" -v start="$start" -v end="$(kl_now)" \
        'BEGIN { printf "[timing] %-36s %7.1f s\n", name, end - start }'
}
kl_log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }

kl_engine_answers() { timeout 10 "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# kl_quiet CMD...: run CMD with its output in a temp log; show the log's tail only when it fails.
kl_quiet() {
    local out rc=0
    out="$(mktemp /tmp/kafkalite-docker-step.XXXXXX)"
    "$@" >"$out" 2>&1 || rc=$?
    if [ "$rc" != 0 ]; then
        echo "failed ($rc): $*" >&2
        tail -40 "$out" >&2
    fi
    rm -f "$out"
    return "$rc"
}
