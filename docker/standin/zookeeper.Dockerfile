# Stand-in for the official zookeeper:3.8 image, for machines that cannot pull from a registry.
# Debian bookworm's ZooKeeper 3.8 (libzookeeper-java) on a headless JRE, with an entrypoint that
# understands the official image's interface: the ZOO_* variables (ZOO_MY_ID, ZOO_SERVERS,
# ZOO_TICK_TIME, ZOO_4LW_COMMANDS_WHITELIST, ZOO_ADMINSERVER_ENABLED, ZOO_CFG_EXTRA, ...),
# /conf/zoo.cfg, /data, /datalog, port 2181, `zkServer.sh start-foreground|status` on PATH.
# It also reads cp-zookeeper's ZOOKEEPER_CLIENT_PORT, _TICK_TIME, _INIT_LIMIT, _SYNC_LIMIT,
# _MAX_CLIENT_CNXNS and _SERVER_ID (for docker/docker-compose.cp-style.yml).
FROM kafkalite-standin/debian:bookworm

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        default-jre-headless libzookeeper-java libslf4j-java \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && groupadd --system --gid 1000 zookeeper \
 && useradd --system --uid 1000 --gid zookeeper --home-dir /data --no-create-home zookeeper \
 && mkdir -p /conf /data /datalog /logs \
 && chown zookeeper:zookeeper /conf /data /datalog /logs

COPY zookeeper-entrypoint.sh /docker-entrypoint.sh
COPY zkServer.sh /usr/local/bin/zkServer.sh

ENV ZOO_CONF_DIR=/conf ZOO_DATA_DIR=/data ZOO_DATA_LOG_DIR=/datalog ZOO_LOG_DIR=/logs \
    ZOO_TICK_TIME=2000 ZOO_INIT_LIMIT=5 ZOO_SYNC_LIMIT=2 \
    ZOO_AUTOPURGE_PURGEINTERVAL=0 ZOO_AUTOPURGE_SNAPRETAINCOUNT=3 ZOO_MAX_CLIENT_CNXNS=60 \
    ZOO_STANDALONE_ENABLED=true ZOO_ADMINSERVER_ENABLED=true ZOOCFGDIR=/conf
VOLUME ["/data", "/datalog", "/logs"]
EXPOSE 2181 2888 3888 8080

ARG RECIPE=unknown
LABEL org.kafkalite.standin="zookeeper:3.8" org.kafkalite.standin.recipe="${RECIPE}"
ENTRYPOINT ["/docker-entrypoint.sh"]
CMD ["zkServer.sh", "start-foreground"]
