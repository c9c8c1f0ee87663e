#!/usr/bin/env bash
# Build librdkafka 2.0.2's own benchmark client, examples/rdkafka_performance, for
# bench/vs_kafka.py.
# 2.0.2 is the librdkafka that confluent-kafka's wheels in this project's lock bundle. The sources
# come from scripts/fetch_librdkafka_tests.sh's cache (librdkafka 2.0.2 from npm's node-rdkafka,
# pinned by sha256), which this script runs when that cache is missing. That cache is rebuilt from
# scratch whenever its script changes, so the sources are copied into a cache of this script's own
# and the binary is built there:
#   $KAFKALITE_RDKAFKA_PERF_HOME, default ~/.cache/kafkalite/rdkafka-performance-2.0.2
# (binary: bin/rdkafka_performance). Idempotent: a second run only checks. Prints the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."
rdk_home="${KAFKALITE_LIBRDKAFKA_HOME:-$HOME/.cache/kafkalite/librdkafka-2.0.2}"
home="${KAFKALITE_RDKAFKA_PERF_HOME:-$HOME/.cache/kafkalite/rdkafka-performance-2.0.2}"
binary="$home/bin/rdkafka_performance"
want="$(sha256sum bench/build_rdkafka_performance.sh | cut -d' ' -f1)"
if [ -x "$binary" ] && [ "$(cat "$home/.built" 2>/dev/null)" = "$want" ]; then
  echo "$binary"
  exit 0
fi
if [ ! -f "$rdk_home/examples/rdkafka_performance.c" ]; then
  bash scripts/fetch_librdkafka_tests.sh >&2
fi
grep -q '#define RD_KAFKA_VERSION 0x020002ff' "$rdk_home/src/rdkafka.h" || {
  echo "build_rdkafka_performance: $rdk_home is not librdkafka 2.0.2" >&2
  exit 1
}
rm -rf "$home.tmp"
mkdir -p "$home.tmp"
# the sources only (not the other cache's build products): a clean build of its own
# ('*.so' not '*.so*': mklove's module configure.socket must come along)
(cd "$rdk_home" && tar cf - --exclude='*.o' --exclude='*.a' --exclude='*.so' \
  --exclude='*.so.[0-9]*' --exclude='*.d' --exclude=tests --exclude=config.cache \
  --exclude=Makefile.config --exclude=config.h .) | tar xf - -C "$home.tmp"
echo "build_rdkafka_performance: building librdkafka 2.0.2 and examples/rdkafka_performance" >&2
(
  cd "$home.tmp"
  step() {
    "$@" >>kafkalite-build.txt 2>&1 || {
      tail -40 kafkalite-build.txt >&2
      echo "build_rdkafka_performance: '$*' failed (log: $home.tmp/kafkalite-build.txt)" >&2
      exit 1
    }
  }
  # no TLS, SASL, zstd or curl: a PLAINTEXT bench needs none (lz4 is librdkafka's builtin copy);
  # --no-download: mklove must not fetch modules from the network
  step ./configure --no-download --disable-ssl --disable-sasl --disable-zstd --disable-lz4-ext \
    --disable-curl
  step make -j"$(nproc)" libs
  step make -C examples rdkafka_performance
  mkdir -p bin
  cp examples/rdkafka_performance bin/
)
rm -rf "$home"
mv "$home.tmp" "$home"
echo "$want" > "$home/.built"
echo "$binary"
