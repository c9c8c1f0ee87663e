"""``/cluster/id``: the cluster's id, created once by the first broker.

Payload: ``{"version":"1","id":"<base64url uuid>"}`` (the version is a string here, as in Kafka).
"""

from __future__ import annotations

from dataclasses import dataclass

from zk_schema._codec import dump, load_object, random_uuid_base64, str_field

CLUSTER_PATH = "/cluster"
CLUSTER_ID_PATH = "/cluster/id"


def cluster_id_path() -> str:
    return CLUSTER_ID_PATH


def new_cluster_id() -> str:
    """A fresh random cluster id (22 chars of URL-safe base64)."""
    return random_uuid_base64()


@dataclass(frozen=True)
class ClusterId:
    id: str
    zk_version: int | None = None

    def encode(self) -> bytes:
        return dump({"version": "1", "id": self.id})

    @classmethod
    def decode(cls, data: bytes, zk_version: int | None = None) -> "ClusterId":
        obj = load_object(data, CLUSTER_ID_PATH)
        return cls(id=str_field(obj, "id", CLUSTER_ID_PATH), zk_version=zk_version)
