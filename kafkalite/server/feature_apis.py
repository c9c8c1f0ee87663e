"""UpdateFeatures (KIP-584) at the active controller, as Kafka 2.8's KafkaApis.handleUpdateFeatures
and KafkaController.processFeatureUpdates.

In order: Alter on the cluster (else CLUSTER_AUTHORIZATION_FAILED for the whole request), the
active controller (else NOT_CONTROLLER), then each update checked against the finalized features
(the broker's ``feature_cache``) and the supported ones (none in Kafka 2.8, so adding or upgrading
a feature is always refused). Kafka's third refusal, "Feature versioning system is disabled."
(inter.broker.protocol.version below 2.7), cannot happen: kafkalite always speaks 2.8. When the
valid updates change the features, ``/feature`` is rewritten (Enabled) and the answer waits until
this broker's cache has read it back, up to the request's timeout; a failure there turns every
valid update into FEATURE_UPDATE_FAILED.
"""

from __future__ import annotations

import logging

from twisted.internet import defer

from kafkalite import errors
from kafkalite.protocol import messages as m
from kafkalite.jvm_hashing import java_string_hash, scala_hash_map_order
from kafkalite.protocol.api_keys import ApiKey
from kafkalite.security.acl import ResourceType
from kafkalite.server.feature_cache import SUPPORTED_FEATURES
from kafkalite.server.topic_admin import is_active_controller
from kafkalite.zk.features import FeatureZkStore
from zk_schema.features import ENABLED, FeatureZNode

log = logging.getLogger(__name__)

__all__ = ["handle_update_features", "validate_update", "scala_hash_order"]

_INVALID = errors.InvalidRequestError.code
# ApiError(Errors.X) carries X's default message, NONE's included (Errors.NONE.message() is
# "NONE"), and UpdateFeaturesResponse sends it
_NONE_MESSAGE = "NONE"
_CLUSTER_DENIED = "Cluster authorization failed."
_NOT_CONTROLLER = "This is not the correct controller for this cluster."
_UPDATE_FAILED = "Unable to update finalized features due to an unexpected server error."


def handle_update_features(broker, ctx, request: m.UpdateFeaturesRequest):
    if not ctx.authz.may(ApiKey.UPDATE_FEATURES, ResourceType.CLUSTER):
        return m.UpdateFeaturesResponse(error_code=errors.ClusterAuthorizationFailedError.code,
                                        error_message=_CLUSTER_DENIED)
    if not is_active_controller(broker):
        return m.UpdateFeaturesResponse(error_code=errors.NotControllerError.code,
                                        error_message=_NOT_CONTROLLER)
    return _apply(broker, request)


def validate_update(update: m.FeatureUpdate, existing: tuple[int, int] | None,
                    supported: dict[str, tuple[int, int]]
                    ) -> tuple[tuple[int, int] | None, str | None]:
    """``(new (min, max) or None to delete, None)`` for a valid update, ``(None, message)`` for an
    invalid one (INVALID_REQUEST with Kafka's message): KafkaController.validateFeatureUpdate."""
    level, downgrade = update.max_version_level, update.allow_downgrade
    if not update.feature:
        return None, "Feature name can not be empty."
    if level < 1 and downgrade:               # UpdateFeaturesRequest.isDeleteRequest
        if existing is None:
            return None, "Can not delete non-existing finalized feature."
        return None, None
    if level < 1:
        return None, (f"Can not provide maxVersionLevel: {level} less than 1 without setting "
                      "the allowDowngrade flag to true in the request.")
    if existing is not None:
        low, high = existing
        if level == high:
            return None, (f"Can not {'downgrade' if downgrade else 'upgrade'} a finalized "
                          f"feature from existing maxVersionLevel:{high} to the same value.")
        if level < high and not downgrade:
            return None, (f"Can not downgrade finalized feature from existing maxVersionLevel:"
                          f"{high} to provided maxVersionLevel:{level} without setting the "
                          "allowDowngrade flag in the request.")
        if downgrade and level > high:
            return None, (f"When the allowDowngrade flag set in the request, the provided "
                          f"maxVersionLevel:{level} can not be greater than existing "
                          f"maxVersionLevel:{high}.")
        if level < low:
            return None, (f"Can not downgrade finalized feature to maxVersionLevel:{level} "
                          f"because it's lower than the existing minVersionLevel:{low}.")
    support = supported.get(update.feature)
    if support is None:
        return None, ("Could not apply finalized feature update because the provided feature "
                      "is not supported.")
    if level < support[0]:
        return None, (f"Could not apply finalized feature update because the provided "
                      f"maxVersionLevel:{level} is lower than the supported "
                      f"minVersion:{support[0]}.")
    # every broker runs this code, so none has an incompatible range for a supported feature
    return (support[0], level), None


def _apply(broker, request: m.UpdateFeaturesRequest) -> defer.Deferred:
    cache = broker.feature_cache
    existing = dict(cache.features)
    target = dict(existing)
    results: dict[str, tuple[int, str | None]] = {}     # feature -> (code, message); last wins
    for update in request.feature_updates:
        new_range, problem = validate_update(update, existing.get(update.feature),
                                             SUPPORTED_FEATURES)
        if problem is not None:
            results[update.feature] = (_INVALID, problem)
            continue
        if new_range is None:
            target.pop(update.feature, None)
        else:
            target[update.feature] = new_range
        results[update.feature] = (errors.NONE, _NONE_MESSAGE)

    def answer(_=None):
        return m.UpdateFeaturesResponse(results=[
            m.UpdatableFeatureResult(name, *results[name]) for name in scala_hash_order(results)])

    if target == existing:
        return defer.succeed(answer())

    def failed(failure):
        log.warning("Processing of feature updates %s failed: %s", request,
                    failure.getErrorMessage())
        for name, (code, _) in results.items():
            if code == errors.NONE:
                results[name] = (errors.FeatureUpdateFailedError.code, _UPDATE_FAILED)

    d = broker.deferred_zk.run(FeatureZkStore(broker.zk).update, FeatureZNode(ENABLED, target))
    d.addCallback(cache.wait_for_epoch)
    d.addTimeout(max(request.timeout_ms, 0) / 1000.0, broker.reactor)
    d.addErrback(failed)
    return d.addCallback(answer)


def scala_hash_order(names) -> list[str]:
    """``names`` in the order Kafka 2.8 answers them: its results are a Scala 2.13
    ``mutable.HashMap`` keyed by feature name."""
    return scala_hash_map_order(names, java_string_hash)
