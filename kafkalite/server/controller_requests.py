"""Which controller requests (LeaderAndIsr, UpdateMetadata, StopReplica) a broker obeys.

Kafka 2.8 takes a controller request from anyone who can reach a PLAINTEXT port and only refuses
an epoch *older* than one it has seen; a single forged LeaderAndIsr with a high epoch makes a
leader follow a broker that does not exist, and every later request of the real controller is
then "stale". kafkalite obeys a controller request only when ZooKeeper backs it:

- the request names the broker that ``/controller`` names, at the epoch ``/controller_epoch``
  holds, both read from ZooKeeper for this request (a claim ZooKeeper does not back is refused
  and logged; only when ZooKeeper cannot be read does the last confirmed controller stand in);
- it is addressed to this broker's current registration: its broker epoch (KIP-380; Kafka lets
  ``-1`` through, kafkalite's controller always sends the epoch, so nothing else is accepted).

Which listener may carry a controller request (the control-plane listener of KIP-291, or the
inter-broker one when there is none) is the API table's listener rule
(``api_table.listener_may_carry``): a request on another listener never reaches this gate.

Requests are admitted one at a time, in arrival order, as Kafka's replica state-change lock does:
a LeaderAndIsr waiting for ZooKeeper is never overtaken by the next one.

``judge`` is the pure decision; ``ControllerRequestGate`` does the ZooKeeper reads around it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from twisted.internet import defer

from kafkalite import errors

log = logging.getLogger(__name__)

IDENTITY_READ_ATTEMPTS = 3     # /controller moved between the reads: read again


@dataclass(frozen=True)
class ControllerIdentity:
    """The controller ZooKeeper names and its epoch, read as one consistent pair."""
    controller_id: int
    epoch: int


@dataclass(frozen=True)
class Refusal:
    error: type[errors.KafkaError]
    reason: str


def judge(controller_id: int, controller_epoch: int, broker_epoch: int,
          known: ControllerIdentity | None, my_broker_epoch: int) -> Refusal | None:
    """None when the request may be obeyed, else why not. ``known`` is ZooKeeper's controller
    (None: ZooKeeper names none and none could be confirmed)."""
    if known is None:
        return Refusal(errors.NotControllerError,
                       f"broker {controller_id} claims to be controller at epoch "
                       f"{controller_epoch}, but ZooKeeper names no controller")
    if controller_epoch < known.epoch:
        return Refusal(errors.StaleControllerEpochError,
                       f"controller epoch {controller_epoch} is older than ZooKeeper's "
                       f"{known.epoch}: the request comes from a deposed controller")
    if controller_epoch > known.epoch:
        return Refusal(errors.StaleControllerEpochError,
                       f"controller epoch {controller_epoch} is newer than ZooKeeper's "
                       f"{known.epoch}: no controller ever held it")
    if controller_id != known.controller_id:
        return Refusal(errors.NotControllerError,
                       f"broker {controller_id} is not the controller at epoch {known.epoch} "
                       f"(ZooKeeper names broker {known.controller_id})")
    if broker_epoch != my_broker_epoch:
        return Refusal(errors.StaleBrokerEpochError,
                       f"the request is for broker epoch {broker_epoch}, but this broker's "
                       f"registration has epoch {my_broker_epoch}")
    return None


class ControllerRequestGate:
    """Admits controller requests that ZooKeeper backs (see the module docstring).

    ``read_identity()`` returns a Deferred firing with the ZooKeeper-confirmed
    ControllerIdentity or None; ``broker_epoch()`` returns this broker's broker epoch as it
    knows it, and ``read_broker_epoch()`` a Deferred of its registration's epoch in ZooKeeper
    (asked when a request names a newer one: the controller may see a new registration before
    the broker has heard back from its own create).
    """

    def __init__(self, read_identity, broker_epoch, read_broker_epoch):
        self._read_identity = read_identity
        self._broker_epoch = broker_epoch
        self._read_broker_epoch = read_broker_epoch
        self.last_confirmed: ControllerIdentity | None = None
        self.refused = 0
        self._lock = defer.DeferredLock()

    def admit(self, request, apply) -> defer.Deferred:
        """Fire with ``apply(request)``'s response if the request is backed by ZooKeeper, else
        with the request's error response."""
        return self._lock.run(self._admit, request, apply)

    @defer.inlineCallbacks
    def _admit(self, request, apply):
        known = yield self._confirmed_identity()
        my_broker_epoch = self._broker_epoch()
        if request.broker_epoch > my_broker_epoch:
            try:
                my_broker_epoch = (yield self._read_broker_epoch()) or my_broker_epoch
            except Exception as exc:  # noqa: BLE001 - judged by what the broker knows
                log.warning("cannot read this broker's registration from ZooKeeper: %s", exc)
        refusal = judge(request.controller_id, request.controller_epoch, request.broker_epoch,
                        known, my_broker_epoch)
        if refusal is not None:
            self.refused += 1
            log.warning("refused %s claiming controller %d at epoch %d: %s",
                        type(request).__name__, request.controller_id,
                        request.controller_epoch, refusal.reason)
            return request.error_response(refusal.error.code, refusal.reason)
        response = yield defer.maybeDeferred(apply, request)
        return response

    @defer.inlineCallbacks
    def _confirmed_identity(self):
        try:
            identity = yield self._read_identity()
        except Exception as exc:  # noqa: BLE001 - ZooKeeper unreachable: the last confirmation
            log.warning("cannot read the controller from ZooKeeper (%s); judging by the last "
                        "confirmed controller %s", exc, self.last_confirmed)
            return self.last_confirmed
        if identity is not None:
            self.last_confirmed = identity
        return identity


@defer.inlineCallbacks
def read_controller_identity(deferred_zk):
    """The controller and its epoch from ZooKeeper as one pair. The election creates
    ``/controller`` and bumps ``/controller_epoch`` in one transaction, so an epoch read before
    and after ``/controller`` that has not moved belongs to that controller."""
    for _ in range(IDENTITY_READ_ATTEMPTS):
        before = yield deferred_zk.get_controller_epoch()
        controller_id = yield deferred_zk.get_controller_id()
        after = yield deferred_zk.get_controller_epoch()
        if controller_id is None or before is None or after is None:
            return None
        if before.epoch == after.epoch:
            return ControllerIdentity(controller_id, after.epoch)
    raise errors.NotControllerError("the controller kept moving while it was read")
