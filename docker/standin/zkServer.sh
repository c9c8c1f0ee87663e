#!/bin/bash
# `zkServer.sh start-foreground | status` for the zookeeper:3.8 stand-in image (Debian's jars).
set -euo pipefail
config="${ZOOCFGDIR:-/conf}/zoo.cfg"
client_port() {
    local port
    port=$(sed -n 's/^clientPort=\([0-9]*\).*/\1/p' "$config" | tail -1)
    if [ -z "$port" ]; then  # server.N=host:peer:election;[addr:]clientPort
        port=$(sed -n 's/^server\.[0-9]*=.*;\(.*:\)\{0,1\}\([0-9]*\)$/\2/p' "$config" | head -1)
    fi
    echo "${port:-2181}"
}
case "${1:-}" in
    start-foreground)
        # shellcheck disable=SC2086 # JVMFLAGS is a list of options
        exec java -Xmx"${ZK_SERVER_HEAP:-1000}"m -XX:+UseSerialGC \
            -Dzookeeper.log.dir="${ZOO_LOG_DIR:-/logs}" -Dzookeeper.root.logger=INFO,CONSOLE \
            -Dorg.slf4j.simpleLogger.showDateTime=true ${SERVER_JVMFLAGS:-} ${JVMFLAGS:-} \
            -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar \
            org.apache.zookeeper.server.quorum.QuorumPeerMain "$config" ;;
    status)
        port=$(client_port)
        echo "Client port found: $port. Client address: localhost."
        exec 3<>"/dev/tcp/127.0.0.1/$port" || { echo "Error contacting service."; exit 1; }
        printf srvr >&3
        answer=$(timeout 5 cat <&3 || true)
        mode=$(printf '%s\n' "$answer" | sed -n 's/^Mode: //p')
        if [ -z "$mode" ]; then echo "Error contacting service. It is probably not running."; exit 1; fi
        echo "Mode: $mode" ;;
    *)
        echo "usage: zkServer.sh start-foreground|status" >&2; exit 2 ;;
esac
