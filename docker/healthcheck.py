#!/opt/kafkalite/bin/python
"""Healthcheck of the kafkalite broker image: healthy when the broker answers a Metadata request
on ``host:port`` (default: 127.0.0.1 and the port of the first listener the environment sets, in
either convention the entrypoint reads (KAFKALITE_LISTENERS, KAFKA_LISTENERS, or the listeners
cp-kafka's rule derives from KAFKA_ADVERTISED_LISTENERS), else 9092), lists itself among the live
brokers (KAFKALITE_BROKER_ID, or KAFKA_BROKER_ID) and knows a controller.

    kafkalite-healthcheck [host:port]
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path


def _entrypoint():
    """The entrypoint's module (its rules for the environment), beside this file: in the image
    /usr/local/bin/kafkalite-entrypoint, in the checkout docker/entrypoint.py."""
    here = Path(__file__).resolve().parent
    for name in ("kafkalite-entrypoint", "entrypoint.py"):
        path = here / name
        if path.exists():
            loader = importlib.machinery.SourceFileLoader("kafkalite_image_entrypoint", str(path))
            spec = importlib.util.spec_from_loader(loader.name, loader)
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            return module
    raise FileNotFoundError(f"no kafkalite-entrypoint beside {__file__}")


def default_address(environ: dict[str, str]) -> str:
    listeners = _entrypoint().effective_listeners(environ)
    first = listeners.split(",")[0].strip()
    port = first.rsplit(":", 1)[-1] if first else ""
    return f"127.0.0.1:{port if port.isdigit() and port != '0' else 9092}"


def main(argv: list[str]) -> int:
    from kafkalite.protocol import messages as m
    from kafkalite.local.cluster import request

    address = argv[0] if argv else default_address(dict(os.environ))
    host, _, port = address.rpartition(":")
    try:
        response = request(host or "127.0.0.1", int(port), m.MetadataRequest(topics=[]),
                           timeout_s=4.0)
    except Exception as exc:  # noqa: BLE001 - any failure is "unhealthy", said in one line
        print(f"unhealthy: no Metadata answer from {address}: {exc}")
        return 1
    live = sorted(b.node_id for b in response.brokers)
    me = _entrypoint().broker_id(dict(os.environ))
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
