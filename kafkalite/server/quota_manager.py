"""Client quota enforcement (KIP-13, KIP-55, KIP-124), as Kafka 2.8's ClientQuotaManager,
ClientRequestQuotaManager and DefaultQuotaCallback do it, without I/O or clocks of its own.

One ``ClientQuotaManager`` per quota type: ``producer_byte_rate`` (bytes of Produce requests),
``consumer_byte_rate`` (bytes of Fetch responses to consumers; followers are exempt) and
``request_percentage`` (the share of a handler's time, in percent, as Kafka's request quota).
``ClientQuotas`` holds the three and is what the broker keeps.

Which quota applies to a request is decided by (user principal, client id), with Kafka's
precedence (most specific first)::

    /config/users/<user>/clients/<client-id>     /config/users/<default>/clients/<client-id>
    /config/users/<user>/clients/<default>       /config/users/<default>/clients/<default>
    /config/users/<user>                         /config/users/<default>
    /config/clients/<client-id>                  /config/clients/<default>
    quota.producer.default / quota.consumer.default (static, deprecated in Kafka 2.8)

(left column before right within a row group, as ``DefaultQuotaCallback.quotaMetricTags``
orders them). The entity that applies names the shared rate: all client ids of a user with a
user quota share one rate, as in Kafka. A rate is a ``quota_rates.SampledRate``; a violation
answers Kafka's throttle time (the request quota's is capped at one window).

Quotas come from ZooKeeper (``read_quota_configs``, blocking: run it on the ZooKeeper pool) and
are replaced whole by ``ClientQuotas.update`` at start-up and on every ``/config/changes``
notification. As in Kafka, a manager stays "enabled" (keeps recording) once it has seen a quota,
until the broker restarts.
"""

from __future__ import annotations

from typing import Mapping

from zk_schema import config as s_config

from kafkalite.server.quota_rates import SampledRate, throttle_time_ms
from kafkalite.server.quota_values import LONG_MAX, java_parse_double

__all__ = ["DEFAULT", "PRODUCE", "FETCH", "REQUEST", "ClientQuotaManager", "ClientQuotas",
           "read_quota_configs", "principal_name"]

PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
QUOTA_TYPES = (PRODUCE, FETCH, REQUEST)


class _Default:
    """The ``<default>`` entity of its kind (never equal to a real name)."""

    def __repr__(self) -> str:
        return "<default>"


DEFAULT = _Default()

# Kafka's ClientRequestQuotaManager.NanosToPercentagePerSecond, for seconds
SECONDS_TO_PERCENT = 100.0
# Kafka's ClientQuotaManager.InactiveSensorExpirationTimeSeconds: a client's rate unused this
# long is dropped (looked for at most once a minute)
INACTIVE_RATE_EXPIRY_MS = 3600 * 1000
_EXPIRY_CHECK_MS = 60 * 1000


def principal_name(principal: str) -> str:
    """``User:alice`` -> ``alice`` (KafkaPrincipal.getName)."""
    _kind, sep, name = principal.partition(":")
    return name if sep else principal


class ClientQuotaManager:
    """The quotas and rates of one quota type."""

    def __init__(self, quota_type: str, samples: int = 11, window_ms: int = 1000,
                 max_throttle_ms: int | None = None, static_default: float | None = None):
        self.quota_type = quota_type
        # quota.producer.default / quota.consumer.default: the last resort of a client id
        self.static_default = static_default
        self.samples = samples
        self.window_ms = window_ms
        self.max_throttle_ms = max_throttle_ms
        # (user, client) -> bound; user/client: a name, DEFAULT, or None (not part of the entity)
        self.overrides: dict[tuple, float] = {}
        self.enabled = static_default is not None
        self._rates: dict[tuple[str, str], SampledRate] = {}
        self._last_used: dict[tuple[str, str], int] = {}
        self._last_expiry_check = 0

    def set_overrides(self, overrides: Mapping[tuple, float]) -> None:
        self.overrides = dict(overrides)
        if self.overrides:
            self.enabled = True

    # --- DefaultQuotaCallback --------------------------------------------------------------------
    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """(user tag, client-id tag) of the rate this client is measured by; "" leaves a part
        out (quotaMetricTags)."""
        has = self.overrides.__contains__
        if (has((user, client_id)) or has((user, DEFAULT))):
            return user, client_id
        if has((user, None)):
            return user, ""
        if has((DEFAULT, client_id)) or has((DEFAULT, DEFAULT)):
            return user, client_id
        if has((DEFAULT, None)):
            return user, ""
        return "", client_id

    def quota_limit(self, tags: tuple[str, str]) -> float | None:
        """The bound of the entity the tags name, None without one (quotaLimit)."""
        user, client_id = tags
        get = self.overrides.get
        if user and client_id:
            for key in ((user, client_id), (user, DEFAULT), (DEFAULT, client_id),
                        (DEFAULT, DEFAULT)):
                if key in self.overrides:
                    return get(key)
            return None
        if user:
            for key in ((user, None), (DEFAULT, None)):
                if key in self.overrides:
                    return get(key)
            return None
        if client_id:
            for key in ((None, client_id), (None, DEFAULT)):
                if key in self.overrides:
                    return get(key)
            return self.static_default
        return None

    def quota(self, user: str, client_id: str) -> float | None:
        return self.quota_limit(self.metric_tags(user, client_id))

    def _rate(self, tags: tuple[str, str], now_ms: int) -> SampledRate:
        if now_ms - self._last_expiry_check >= _EXPIRY_CHECK_MS:
            self._last_expiry_check = now_ms
            for idle in [t for t, used in self._last_used.items()
                         if now_ms - used >= INACTIVE_RATE_EXPIRY_MS]:
                del self._rates[idle], self._last_used[idle]
        self._last_used[tags] = now_ms
        rate = self._rates.get(tags)
        if rate is None:
            rate = self._rates[tags] = SampledRate(self.samples, self.window_ms)
        return rate

    # --- recording -------------------------------------------------------------------------------
    def record_and_get_throttle_ms(self, user: str, client_id: str, value: float,
                                   now_ms: int) -> int:
        """Record ``value`` and answer how long the client must wait (0: within its quota);
        nothing is recorded while no quota of this type was ever set (maybeRecordAndGet...)."""
        if not self.enabled:
            return 0
        tags = self.metric_tags(user, client_id)
        rate = self._rate(tags, now_ms)
        rate.record(value, now_ms)
        bound = self.quota_limit(tags)
        if bound is None:
            return 0
        measured = rate.measure(now_ms)
        if measured <= bound:                     # Quota.acceptable (upper bound)
            return 0
        throttle = throttle_time_ms(rate, measured, bound, now_ms)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return throttle

    def record_no_throttle(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        if self.enabled:
            self._rate(self.metric_tags(user, client_id), now_ms).record(value, now_ms)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (a throttled fetch sends no data: unrecordQuotaSensor)."""
        self.record_no_throttle(user, client_id, -value, now_ms)

    def max_value_in_quota_window(self, user: str, client_id: str) -> float:
        """The most one request may carry without being throttled for sure
        (getMaxValueInQuotaWindow): what Fetch's max_bytes is cut to."""
        if not self.enabled:
            return float("inf")
        bound = self.quota(user, client_id)
        if bound is None:
            return float("inf")
        return bound * (self.samples - 1) * self.window_ms / 1000.0


class ClientQuotas:
    """The broker's three client quota managers (Kafka's QuotaManagers, client part)."""

    def __init__(self, samples: int = 11, window_seconds: int = 1,
                 producer_default: float | None = None, consumer_default: float | None = None):
        window_ms = window_seconds * 1000
        self.produce = ClientQuotaManager(PRODUCE, samples, window_ms,
                                          static_default=producer_default)
        self.fetch = ClientQuotaManager(FETCH, samples, window_ms,
                                        static_default=consumer_default)
        # ClientRequestQuotaManager: at most one window of throttle per request
        self.request = ClientQuotaManager(REQUEST, samples, window_ms, max_throttle_ms=window_ms)

    @classmethod
    def from_config(cls, config) -> "ClientQuotas":
        def static(value: int) -> float | None:       # Long.MaxValue: no static quota
            return None if value >= LONG_MAX else float(value)
        return cls(config.quota_window_num, config.quota_window_size_seconds,
                   static(config.quota_producer_default), static(config.quota_consumer_default))

    @property
    def enabled(self) -> bool:
        return self.produce.enabled or self.fetch.enabled or self.request.enabled

    def managers(self) -> tuple[ClientQuotaManager, ...]:
        return self.produce, self.fetch, self.request

    def update(self, configs: Mapping[tuple, Mapping[str, str]]) -> None:
        """Replace every quota with those of ``configs`` ({(user, client): znode config});
        values that are not numbers are skipped (Kafka refuses them when written)."""
        per_type: dict[str, dict[tuple, float]] = {t: {} for t in QUOTA_TYPES}
        for entity, config in configs.items():
            for key, text in config.items():
                if key in per_type:
                    try:
                        per_type[key][entity] = java_parse_double(text)
                    except ValueError:
                        continue
        for manager in self.managers():
            manager.set_overrides(per_type[manager.quota_type])


def _entity(child: str):
    name = s_config.quota_entity_from_znode(child)
    return DEFAULT if name is None else name


def read_quota_configs(store) -> dict[tuple, dict[str, str]]:
    """Every user, client-id and (user, client-id) quota config in ZooKeeper, keyed
    (user, client) as ``ClientQuotaManager.overrides``. Blocking (a ``zk.quotas.QuotaZkStore``)."""
    found: dict[tuple, dict[str, str]] = {}
    for child, config in store.fetch_all(s_config.USERS).items():
        if config:
            found[(_entity(child), None)] = config
    for child, config in store.fetch_all(s_config.CLIENTS).items():
        if config:
            found[(None, _entity(child))] = config
    for path, config in store.fetch_all_user_clients().items():
        if config:
            user_child, _, client_child = path.split("/")
            found[(_entity(user_child), _entity(client_child))] = config
    return found
