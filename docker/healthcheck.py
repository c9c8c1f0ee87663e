#!/opt/kafkalite/bin/python
"""Healthcheck of the kafkalite broker image: healthy when the broker answers a Metadata request
on ``host:port`` (default: 127.0.0.1 and the port of the first listener in KAFKALITE_LISTENERS, or
9092), lists itself among the live brokers (KAFKALITE_BROKER_ID) and knows a controller.

    kafkalite-healthcheck [host:port]
"""

from __future__ import annotations

import os
import sys


def default_address(environ: dict[str, str]) -> str:
    listeners = environ.get("KAFKALITE_LISTENERS", "")
    first = listeners.split(",")[0].strip()
    port = first.rsplit(":", 1)[-1] if first else ""
    return f"127.0.0.1:{port if port.isdigit() and port != '0' else 9092}"


def main(argv: list[str]) -> int:
    from kafkalite.protocol import messages as m
    from kafkalite.testing.cluster import request

    address = argv[0] if argv else default_address(dict(os.environ))
    host, _, port = address.rpartition(":")
    try:
        response = request(host or "127.0.0.1", int(port), m.MetadataRequest(topics=[]),
                           timeout_s=4.0)
    except Exception as exc:  # noqa: BLE001 - any failure is "unhealthy", said in one line
        print(f"unhealthy: no Metadata answer from {address}: {exc}")
        return 1
    live = sorted(b.node_id for b in response.brokers)
    me = os.environ.get("KAFKALITE_BROKER_ID")
    if me is not None and me.isdigit() and int(me) not in live:
        print(f"unhealthy: broker {me} is not among the live brokers {live} yet")
        return 1
    if response.controller_id < 0:
        print(f"unhealthy: no controller known yet (live brokers {live})")
        return 1
    print(f"healthy: live brokers {live}, controller {response.controller_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
