#!/usr/bin/env bash
# Fetch librdkafka 2.0.2's sources with its own test suite (tests/, e.g. 0103-transactions.c) and
# build its test-runner, so that tests/integration/test_librdkafka_transactions.py can run
# librdkafka's transaction tests against kafkalite and Apache Kafka 2.8.2.
# The sources come from the npm registry: node-rdkafka 2.15.0 bundles librdkafka 2.0.2, tests
# included, in deps/librdkafka (CI's machines reach only package registries). Pinned by version
# and sha256. Everything goes into a cache
# outside git: $KAFKALITE_LIBRDKAFKA_HOME, default ~/.cache/kafkalite/librdkafka-2.0.2 (the test
# runner at tests/test-runner). Nothing is committed. Idempotent: a second run only checks.
# Needs npm, a C/C++ toolchain and make; rapidjson-dev lets 0098 (stats checks) build its body.
set -euo pipefail
cd "$(dirname "$0")/.."
home="${KAFKALITE_LIBRDKAFKA_HOME:-$HOME/.cache/kafkalite/librdkafka-2.0.2}"
package="node-rdkafka@2.15.0"
tarball="node-rdkafka-2.15.0.tgz"
sha256="2766852839ffef5fcbc2cdedaa301a546e51928ef6f427709ddb4ed164b1afd5"
runner="$home/tests/test-runner"
stamp="$home/.built"
# a rebuild follows a change of this script (configure flags, pins) or of rapidjson's presence
# (configure decides then whether 0098 builds its checks)
rapidjson=n
if [ -f /usr/include/rapidjson/schema.h ]; then rapidjson=y; fi
want="$(sha256sum scripts/fetch_librdkafka_tests.sh | cut -d' ' -f1) rapidjson=$rapidjson"
if [ -x "$runner" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "fetch_librdkafka_tests: librdkafka 2.0.2's test-runner already in $home/tests" >&2
  exit 0
fi
for tool in npm gcc g++ make; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "fetch_librdkafka_tests: $tool is needed (apt-get install npm build-essential)" >&2
    exit 1
  }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "fetch_librdkafka_tests: fetching $package (librdkafka 2.0.2 with its tests) from npm" >&2
(cd "$work" && npm pack -q "$package" >/dev/null)
echo "$sha256  $work/$tarball" | sha256sum -c --quiet - || {
  echo "fetch_librdkafka_tests: $tarball does not have the pinned sha256" >&2
  exit 1
}
tar xzf "$work/$tarball" -C "$work" package/deps/librdkafka
src="$work/package/deps/librdkafka"
grep -q '#define RD_KAFKA_VERSION 0x020002ff' "$src/src/rdkafka.h" || {
  echo "fetch_librdkafka_tests: $package does not bundle librdkafka 2.0.2" >&2
  exit 1
}
rm -rf "$home.tmp"
mkdir -p "$(dirname "$home")"
mv "$src" "$home.tmp"
echo "fetch_librdkafka_tests: building librdkafka and tests/test-runner (a few minutes)" >&2
(
  cd "$home.tmp"
  # the logs are not named configure.*: mklove would load such a file as a module.
  # --no-download: mklove must not fetch modules from the network; no TLS, SASL, zstd or curl:
  # the transaction tests need none of them (lz4 is librdkafka's builtin copy)
  step() {
    "$@" >>kafkalite-build.txt 2>&1 || {
      tail -40 kafkalite-build.txt >&2
      echo "fetch_librdkafka_tests: '$*' failed (log: $home.tmp/kafkalite-build.txt)" >&2
      exit 1
    }
  }
  step ./configure --no-download --disable-ssl --disable-gssapi --disable-zstd \
    --disable-lz4-ext --disable-curl
  step make -j"$(nproc)" libs
  step make -j"$(nproc)" -C tests test-runner
)
rm -rf "$home"
mv "$home.tmp" "$home"
echo "$want" > "$home/.built"
echo "fetch_librdkafka_tests: built $runner" >&2
