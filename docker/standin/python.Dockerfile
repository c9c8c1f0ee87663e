# Stand-in for the official python:3.11-slim image, for machines that cannot pull from a registry.
# Built by docker/standin/build.sh FROM a debootstrapped Debian bookworm (whose python3 is 3.11).
# It offers what kafkalite's Dockerfile relies on from the official image: `python`/`python3`,
# a working `python -m venv`, pip allowed outside a venv, UTF-8 locale, CA certificates.
FROM kafkalite-standin/debian:bookworm

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv python-is-python3 ca-certificates netbase tzdata \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED

# This machine's CA bundle, at a path of its own: installing Debian's ca-certificates (above, or in
# a later image) regenerates /etc/ssl/certs, so a copy there would not survive.
COPY ca-bundle.crt /usr/local/share/kafkalite-standin/ca-bundle.crt
ENV LANG=C.UTF-8 \
    PIP_CERT=/usr/local/share/kafkalite-standin/ca-bundle.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1

ARG RECIPE=unknown
LABEL org.kafkalite.standin="python:3.11-slim" org.kafkalite.standin.recipe="${RECIPE}"
CMD ["python3"]
