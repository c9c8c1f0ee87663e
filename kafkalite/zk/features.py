"""``/feature`` in ZooKeeper: the cluster's finalized features (KIP-584), as Kafka 2.8 keeps them.

The controller creates the znode on election (``ControllerZkOps.enable_feature_versioning``); this
store reads it and, for UpdateFeatures at the controller, rewrites it as Kafka's
``KafkaZkClient.updateFeatureZNode`` does (set at any version). A broker follows the znode with a
data watch (``server.feature_cache``). Blocking: run it through ``TwistedZk.run``.
"""

from __future__ import annotations

from zk_schema.features import FEATURE_PATH, FeatureZNode

from kafkalite.zk.ops import ZnodeOps

__all__ = ["FeatureZkStore"]


class FeatureZkStore:
    def __init__(self, zk: ZnodeOps):
        self.zk = zk

    def get(self) -> FeatureZNode | None:
        """The znode (its ``zk_version`` is the features' epoch), None when it is absent."""
        got = self.zk.get_data(FEATURE_PATH)
        if got is None:
            return None
        return FeatureZNode.decode(got[0], got[1])

    def update(self, node: FeatureZNode) -> int:
        """Write ``node`` over the existing znode whatever its version; the new version."""
        return self.zk.set_data(FEATURE_PATH, node.encode(), -1)
