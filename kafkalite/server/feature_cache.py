"""A broker's view of the cluster's features (KIP-584): what it supports and what the cluster has
finalized in ``/feature``, as Kafka 2.8's BrokerFeatures and FinalizedFeatureCache.

Kafka 2.8 defines no feature, so a broker supports none (``SUPPORTED_FEATURES`` is empty, as
``BrokerFeatures.createDefault()``) and the controller writes ``/feature`` Enabled with none
finalized. The cache follows the znode with a data watch: Enabled, it holds the features and the
epoch (the znode's version); absent or Disabled, it is empty and the epoch unknown (-1), so that
ApiVersions v3 answers as Kafka's.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from zk_schema._codec import SchemaError
from zk_schema.features import ENABLED, FEATURE_PATH, FeatureZNode

log = logging.getLogger(__name__)

__all__ = ["SUPPORTED_FEATURES", "UNKNOWN_EPOCH", "FinalizedFeatureCache"]

#: feature name -> (min version, max version) this broker supports: none in Kafka 2.8
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = {}

#: ApiVersionsResponse.UNKNOWN_FINALIZED_FEATURES_EPOCH
UNKNOWN_EPOCH = -1


class FinalizedFeatureCache:
    def __init__(self):
        self.features: dict[str, tuple[int, int]] = {}   # name -> (min level, max level)
        self.epoch = UNKNOWN_EPOCH
        self._watch = None
        self._epoch_waiters: list[tuple[int, defer.Deferred]] = []

    def start(self, zk) -> None:
        """Follow ``/feature`` (``zk``: a started ZkClient delivering on the reactor)."""
        self._watch = zk.watch_data(FEATURE_PATH, self.update)

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    def update(self, data: bytes | None, zk_version: int | None) -> None:
        """The znode's new contents (``None``: absent)."""
        node = None
        if data is not None:
            try:
                node = FeatureZNode.decode(data, zk_version)
            except SchemaError as exc:
                log.error("%s cannot be read, finalized features unknown: %s", FEATURE_PATH, exc)
        if node is None or node.status != ENABLED:
            self.features, self.epoch = {}, UNKNOWN_EPOCH
        else:
            self.features, self.epoch = dict(node.features), zk_version
        waiting, self._epoch_waiters = self._epoch_waiters, []
        for epoch, d in waiting:
            if self.epoch >= epoch:
                d.callback(self.epoch)
            else:
                self._epoch_waiters.append((epoch, d))

    def wait_for_epoch(self, epoch: int) -> defer.Deferred:
        """Fires once the cache holds ``epoch`` or a later one (Kafka's waitUntilEpochOrThrow;
        the caller adds its timeout)."""
        if self.epoch >= epoch:
            return defer.succeed(self.epoch)
        d = defer.Deferred(lambda d: self._epoch_waiters.remove((epoch, d))
                           if (epoch, d) in self._epoch_waiters else None)
        self._epoch_waiters.append((epoch, d))
        return d
