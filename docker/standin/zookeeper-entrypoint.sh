#!/bin/bash
# Entrypoint of the zookeeper:3.8 stand-in image: the official image's interface (ZOO_* variables
# -> /conf/zoo.cfg, ZOO_MY_ID -> /data/myid, runs as the zookeeper user), written for Debian's
# ZooKeeper. Only used where the official image cannot be pulled.
set -euo pipefail

if [ "${1:-}" = "zkServer.sh" ] && [ "$(id -u)" = "0" ]; then
    chown -R zookeeper:zookeeper "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR" "$ZOO_LOG_DIR" "$ZOO_CONF_DIR"
    exec setpriv --reuid=zookeeper --regid=zookeeper --init-groups "$0" "$@"
fi

config="$ZOO_CONF_DIR/zoo.cfg"
if [ ! -f "$config" ]; then
    {
        echo "dataDir=$ZOO_DATA_DIR"
        echo "dataLogDir=$ZOO_DATA_LOG_DIR"
        echo "tickTime=$ZOO_TICK_TIME"
        echo "initLimit=$ZOO_INIT_LIMIT"
        echo "syncLimit=$ZOO_SYNC_LIMIT"
        echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
        echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
        echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
        echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
        echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
        if [ -n "${ZOO_4LW_COMMANDS_WHITELIST:-}" ]; then
            echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
        fi
        if [ -n "${ZOO_SERVERS:-}" ]; then
            for server in $ZOO_SERVERS; do echo "$server"; done
        else
            echo "clientPort=2181"
        fi
        for line in ${ZOO_CFG_EXTRA:-}; do echo "$line"; done
    } > "$config"
fi
if [ ! -f "$ZOO_DATA_DIR/myid" ]; then
    echo "${ZOO_MY_ID:-1}" > "$ZOO_DATA_DIR/myid"
fi
exec "$@"
