#!/usr/bin/env bash
# Fetch the runtime jars a pinned pom names from Maven Central into a cache folder outside git,
# once: `maven_fetch.sh NAME POM DEST MARKER_JAR`. A stamp of the pom's sha256 beside DEST makes a
# second run only check (a changed pom fetches again); MARKER_JAR is a jar that must be in DEST.
# Used by fetch_apache_kafka.sh and fetch_spark_kafka.sh. Nothing is built or committed.
set -euo pipefail
name="$1"; pom="$2"; dest="$3"; marker="$4"
stamp="$(dirname "$dest")/.pom.sha256"
want="$(sha256sum "$pom" | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$dest/$marker" ]; then
  echo "$name: already in $dest" >&2
  exit 0
fi
command -v mvn >/dev/null 2>&1 || { echo "$name: Maven (mvn) is needed: apt-get install maven" >&2; exit 1; }
echo "$name: fetching with Maven into $dest" >&2
rm -rf "$dest.tmp"
mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$dest.tmp" \
  -DincludeScope=runtime
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "$want" > "$stamp"
echo "$name: $(ls "$dest" | wc -l) jars in $dest" >&2
