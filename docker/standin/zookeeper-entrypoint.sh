#!/bin/bash
# Entrypoint of the zookeeper:3.8 stand-in image: the official image's interface (ZOO_* variables
# -> /conf/zoo.cfg, ZOO_MY_ID -> /data/myid, runs as the zookeeper user), written for Debian's
# ZooKeeper. Only used where the official image cannot be pulled.
#
# It also takes Confluent cp-zookeeper's names for the settings a single server needs (what
# docker/docker-compose.cp-style.yml uses), before the ZOO_* ones: ZOOKEEPER_CLIENT_PORT
# (clientPort), ZOOKEEPER_TICK_TIME, ZOOKEEPER_INIT_LIMIT, ZOOKEEPER_SYNC_LIMIT,
# ZOOKEEPER_MAX_CLIENT_CNXNS, ZOOKEEPER_SERVER_ID (myid). The official zookeeper image ignores them.
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
        echo "tickTime=${ZOOKEEPER_TICK_TIME:-$ZOO_TICK_TIME}"
        echo "initLimit=${ZOOKEEPER_INIT_LIMIT:-$ZOO_INIT_LIMIT}"
        echo "syncLimit=${ZOOKEEPER_SYNC_LIMIT:-$ZOO_SYNC_LIMIT}"
        echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
        echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
        echo "maxClientCnxns=${ZOOKEEPER_MAX_CLIENT_CNXNS:-$ZOO_MAX_CLIENT_CNXNS}"
        echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
        echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
        if [ -n "${ZOO_4LW_COMMANDS_WHITELIST:-}" ]; then
            echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
        fi
        if [ -n "${ZOO_SERVERS:-}" ]; then
            for server in $ZOO_SERVERS; do echo "$server"; done
        else
            echo "clientPort=${ZOOKEEPER_CLIENT_PORT:-2181}"
        fi
        for line in ${ZOO_CFG_EXTRA:-}; do echo "$line"; done
    } > "$config"
fi
if [ ! -f "$ZOO_DATA_DIR/myid" ]; then
    echo "${ZOOKEEPER_SERVER_ID:-${ZOO_MY_ID:-1}}" > "$ZOO_DATA_DIR/myid"
fi
exec "$@"
