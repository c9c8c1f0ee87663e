#!/usr/bin/env bash
# Set up kafkalite on a fresh Debian/Ubuntu machine: ZooKeeper, Java and kcat from apt when missing,
# then a virtualenv in .venv with kafkalite and its test (and, with --spark, Spark) extras. With
# --apache-kafka, also Maven and Apache Kafka 2.8.2's jars (scripts/fetch_apache_kafka.sh), the
# oracle that the conformance suite and the Kafka-tool tests run beside kafkalite, and librdkafka
# 2.0.2's own test suite, built from npm's node-rdkafka (scripts/fetch_librdkafka_tests.sh), whose
# transaction tests run against both systems; and Spark's own Kafka connector 4.2.0 with the jars
# it needs beyond pyspark's (scripts/fetch_spark_kafka.sh), which the Spark tests run beside the
# kafkalite data source.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

EXTRAS="test"
APACHE_KAFKA=0
for arg in "$@"; do
  case "$arg" in
    --spark) EXTRAS="test,spark" ;;
    --apache-kafka) APACHE_KAFKA=1 ;;
    *) echo "usage: scripts/setup.sh [--spark] [--apache-kafka]" >&2; exit 2 ;;
  esac
done

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

wait_for_apt() {
  # another apt/dpkg (e.g. unattended-upgrades) may hold the lock; wait instead of failing
  for _ in $(seq 1 120); do
    if ! fuser /var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock \
        >/dev/null 2>&1; then
      return 0
    fi
    echo "setup: waiting for another apt/dpkg to finish..." >&2
    sleep 5
  done
}

apt_updated=0
apt_install() {
  wait_for_apt
  if [ "$apt_updated" -eq 0 ]; then
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  wait_for_apt
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

missing=()
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
# kcat (librdkafka's command-line client) is one of the real Kafka clients the tests talk to
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
# openssl makes the test and README certificates (security: TLS listeners)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
# Debian's Chromium and its WebDriver: the console's browser test drives the page headless
# (Selenium from the test extra; no browser download)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/chromedriver ] || missing+=(chromium-driver)
# network namespaces and nftables: the fault tests cut links between brokers and ZooKeeper
# (kafkalite.testing.faults; they skip, saying why, where they cannot run: in CI a skip fails)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
if [ "$APACHE_KAFKA" = 1 ]; then
  # Maven fetches Apache Kafka's jars; the Java programs of tests/jvm are compiled with javac
  # (Debian's maven needs only a JRE, so the JDK is asked for on its own)
  command -v mvn >/dev/null 2>&1 || missing+=(maven)
  command -v javac >/dev/null 2>&1 || missing+=(default-jdk-headless)
  # librdkafka's test-runner: its sources come from npm, built with the C/C++ toolchain;
  # rapidjson's headers let 0098 (transactions read back with stats) build its checks
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  { command -v g++ >/dev/null 2>&1 && command -v make >/dev/null 2>&1; } \
    || missing+=(build-essential)
  [ -f /usr/include/rapidjson/schema.h ] || missing+=(rapidjson-dev)
  # Redis: the Redis Streams peer of bench/peers.py (end-to-end latency with Python clients),
  # whose smoke test runs with the oracle's tests
  command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]} from apt" >&2
  apt_install "${missing[@]}"
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[${EXTRAS}]"
if [ "$APACHE_KAFKA" = 1 ]; then
  bash scripts/fetch_apache_kafka.sh
  bash scripts/fetch_librdkafka_tests.sh
  bash scripts/fetch_spark_kafka.sh
fi
echo "setup: ready (.venv with kafkalite[${EXTRAS}]; ZooKeeper at /usr/share/java/zookeeper.jar)" >&2
