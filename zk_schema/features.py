"""``/feature``: the cluster's finalized feature versions (KIP-584), written by the controller.

Payload: ``{"version":1,"status":1,"features":{"<name>":{"min_version_level":1,
"max_version_level":2}}}``; status 1 is Enabled, 0 Disabled. Kafka 2.8's controller creates it,
Enabled and with no features (2.8 defines none), when it is elected with
inter.broker.protocol.version 2.7 or newer, its default; kafkalite's controller does the same, so
the tree looks as Kafka's does to tools and to a Kafka broker joining it.
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Any

from zk_schema._codec import SchemaError, dump, int_field, load_object

FEATURE_PATH = "/feature"
DISABLED = 0
ENABLED = 1


def feature_path() -> str:
    return FEATURE_PATH


@dataclass(frozen=True)
class FeatureZNode:
    status: int = ENABLED
    # feature name -> (min_version_level, max_version_level)
    features: dict[str, tuple[int, int]] = dc_field(default_factory=dict)
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({"features": {name: {"min_version_level": lo, "max_version_level": hi}
                                  for name, (lo, hi) in self.features.items()},
                     "version": 1, "status": self.status})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "FeatureZNode":
        obj = load_object(data, FEATURE_PATH)
        status = int_field(obj, "status", FEATURE_PATH)
        if status not in (DISABLED, ENABLED):
            raise SchemaError(f"{FEATURE_PATH}: unknown status {status}")
        raw: Any = obj.get("features", {})
        raw = {} if raw is None else raw
        if not isinstance(raw, dict):
            raise SchemaError(f"{FEATURE_PATH}: features is not an object")
        features = {}
        for name, levels in raw.items():
            if not isinstance(levels, dict):
                raise SchemaError(f"{FEATURE_PATH}: feature {name!r} is not an object")
            features[name] = (int_field(levels, "min_version_level", FEATURE_PATH),
                              int_field(levels, "max_version_level", FEATURE_PATH))
        return cls(status=status, features=features, zk_version=zk_version)
