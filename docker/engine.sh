#!/usr/bin/env bash
# Start or stop a Docker engine for kafkalite's docker tests, on machines where Debian's docker.io
# is installed but no engine runs (no systemd here). It uses a data root of its own, so images
# built by one run (the stand-in base images, kafkalite's layers) are still there for the next.
#
#   docker/engine.sh start    an engine answers afterwards; prints "running" if one already did
#                             (nothing started), "started" if this started dockerd.
#                             Exit 3: none answers and none can be started here (not root, or no
#                             dockerd: apt-get install docker.io).
#   docker/engine.sh stop     stop the dockerd that `start` started (and only that one)
#   docker/engine.sh status   exit 0 when an engine answers
#
# KAFKALITE_DOCKER_DATA_ROOT (/var/lib/kafkalite-docker) is the engine's --data-root; its log is
# /var/log/kafkalite-dockerd.log.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=lib.sh
. "$here/lib.sh"

DATA_ROOT="${KAFKALITE_DOCKER_DATA_ROOT:-/var/lib/kafkalite-docker}"
PIDFILE=/run/kafkalite-dockerd.pid
LOG=/var/log/kafkalite-dockerd.log

start() {
    if kl_engine_answers; then echo running; return 0; fi
    if [ "$(id -u)" != 0 ] || ! command -v dockerd >/dev/null 2>&1; then
        echo "engine: no Docker engine answers and none can be started here" \
             "(needs root and dockerd: apt-get install docker.io)" >&2
        return 3
    fi
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        echo "engine: dockerd $(cat "$PIDFILE") runs but does not answer; see $LOG" >&2
        return 1
    fi
    rm -f "$PIDFILE"
    mkdir -p "$DATA_ROOT"
    kl_log "engine: starting dockerd --data-root $DATA_ROOT (log: $LOG)"
    # setsid: the engine outlives this shell, and is not killed with the caller's process group
    setsid dockerd --data-root "$DATA_ROOT" --exec-root /run/kafkalite-docker \
        --pidfile "$PIDFILE" --host unix:///var/run/docker.sock >>"$LOG" 2>&1 < /dev/null &
    for _ in $(seq 1 120); do
        if kl_engine_answers; then echo started; return 0; fi
        sleep 0.5
    done
    echo "engine: dockerd did not answer within 60 s; last lines of $LOG:" >&2
    tail -20 "$LOG" >&2
    return 1
}

stop() {
    if [ ! -f "$PIDFILE" ]; then echo "engine: not started by engine.sh; left alone" >&2; return 0; fi
    local pid
    pid="$(cat "$PIDFILE")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid"
        for _ in $(seq 1 120); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2>/dev/null; then
            echo "engine: dockerd $pid did not stop within 60 s; killing it" >&2
            kill -KILL "$pid" || true
        fi
    fi
    rm -f "$PIDFILE"
    echo stopped
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) kl_engine_answers ;;
    *) echo "usage: docker/engine.sh start|stop|status" >&2; exit 2 ;;
esac
