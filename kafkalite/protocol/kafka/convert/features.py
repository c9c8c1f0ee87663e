"""UpdateFeatures (57), KIP-584, between Kafka's protocol and the model (version 0 only in Kafka
2.8). ApiVersions' feature fields are converted with ApiVersions (``cluster.py``)."""

from __future__ import annotations

from kafkalite.protocol import messages as m
from kafkalite.protocol.kafka.convert import Converter
from kafkalite.protocol.kafka.entities import millis

__all__ = ["UPDATE_FEATURES"]


def _request(entity, version: int) -> m.UpdateFeaturesRequest:
    return m.UpdateFeaturesRequest(
        timeout_ms=millis(entity.timeout),
        feature_updates=[m.FeatureUpdate(u.feature, int(u.max_version_level),
                                         bool(u.allow_downgrade))
                         for u in entity.feature_updates])


UPDATE_FEATURES = Converter(
    _request,
    lambda r, version: {"throttle_time": r.throttle_time_ms, "error_code": r.error_code,
                        "error_message": r.error_message,
                        "results": [{"feature": x.feature, "error_code": x.error_code,
                                     "error_message": x.error_message} for x in r.results]})
