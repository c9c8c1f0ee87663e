"""Client quota entities and enforcement as Kafka 2.8's DefaultQuotaCallback and
ClientQuotaManager: which quota applies to (user, client id), which clients share a rate, what a
violation answers, and one request's bookkeeping (``quota_throttle.RequestQuota``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafkalite.protocol import messages as m
from kafkalite.server.quota_manager import (
    DEFAULT, ClientQuotaManager, ClientQuotas, principal_name, read_quota_configs,
)
from kafkalite.server.quota_throttle import RequestQuota

# every entity that can hold a quota for user u1 with client id c1, most specific first, with
# the metric tags (the shared rate) each one gives (DefaultQuotaCallback.quotaMetricTags)
PRECEDENCE = [
    (("u1", "c1"), ("u1", "c1")),
    (("u1", DEFAULT), ("u1", "c1")),
    (("u1", None), ("u1", "")),
    ((DEFAULT, "c1"), ("u1", "c1")),
    ((DEFAULT, DEFAULT), ("u1", "c1")),
    ((DEFAULT, None), ("u1", "")),
    ((None, "c1"), ("", "c1")),
    ((None, DEFAULT), ("", "c1")),
]


@pytest.mark.parametrize("first", range(len(PRECEDENCE)))
def test_the_most_specific_entity_applies(first):
    manager = ClientQuotaManager("producer_byte_rate")
    # the entities from ``first`` on are set, each with its own bound
    manager.set_overrides({entity: 100.0 + i for i, (entity, _) in enumerate(PRECEDENCE)
                           if i >= first})
    entity, tags = PRECEDENCE[first]
    assert manager.metric_tags("u1", "c1") == tags
    assert manager.quota("u1", "c1") == 100.0 + first


def test_no_entity_no_quota():
    manager = ClientQuotaManager("producer_byte_rate")
    manager.set_overrides({("u2", None): 5.0, (None, "c2"): 6.0})
    assert manager.quota("u1", "c1") is None
    assert manager.record_and_get_throttle_ms("u1", "c1", 1e12, 0) == 0


def test_clients_of_a_user_quota_share_one_rate():
    manager = ClientQuotaManager("producer_byte_rate")
    manager.set_overrides({("alice", None): 1000.0})
    assert manager.record_and_get_throttle_ms("alice", "a", 6000, 0) == 0
    # 6000 + 6000 over 10 s: 1200 B/s -> (1200 - 1000) / 1000 * 10 s
    assert manager.record_and_get_throttle_ms("alice", "b", 6000, 0) == 2000
    assert manager.record_and_get_throttle_ms("bob", "b", 6000, 0) == 0


def test_request_throttle_is_capped_at_one_window():
    quotas = ClientQuotas(11, 1)
    quotas.update({(None, "c"): {"request_percentage": "1.0"}})
    # 50 %-seconds over 10 s: 5 % -> (5 - 1) / 1 * 10 s, capped at 1 s
    assert quotas.request.record_and_get_throttle_ms("u", "c", 50.0, 0) == 1000


def test_update_parses_kafkas_strings_and_enablement_is_sticky():
    quotas = ClientQuotas()
    assert not quotas.enabled
    quotas.update({("alice", None): {"producer_byte_rate": "1048576",
                                     "SCRAM-SHA-256": "salt=...", "consumer_byte_rate": "1.0E7"}})
    assert quotas.produce.quota("alice", "x") == 1048576.0
    assert quotas.fetch.quota("alice", "x") == 1e7
    assert quotas.request.quota("alice", "x") is None
    quotas.update({})
    assert quotas.produce.quota("alice", "x") is None
    assert quotas.enabled          # as Kafka: recording goes on until a restart


def test_fetch_max_bytes_is_what_the_quota_allows_in_its_window():
    quotas = ClientQuotas(11, 1)
    quotas.update({(None, DEFAULT): {"consumer_byte_rate": "1000"}})
    assert quotas.fetch.max_value_in_quota_window("u", "c") == 10000.0
    assert ClientQuotas().fetch.max_value_in_quota_window("u", "c") == float("inf")


def test_principal_name():
    assert principal_name("User:alice") == "alice"
    assert principal_name("User:ANONYMOUS") == "ANONYMOUS"


class _Store:
    def __init__(self, users, clients, pairs):
        self.users, self.clients, self.pairs = users, clients, pairs

    def fetch_all(self, entity_type):
        return self.users if entity_type == "users" else self.clients

    def fetch_all_user_clients(self):
        return self.pairs


def test_quota_configs_are_read_from_kafkas_znode_names():
    store = _Store({"%3Cdefault%3E": {"producer_byte_rate": "1"}, "<default>": {"x": "2"},
                    "al%2Fice": {}},
                   {"c1": {"consumer_byte_rate": "3"}},
                   {"<default>/clients/<default>": {"request_percentage": "4"},
                    "al%2Fice/clients/c%3A1": {"producer_byte_rate": "5"}})
    assert read_quota_configs(store) == {
        ("<default>", None): {"producer_byte_rate": "1"},       # a user named "<default>"
        (DEFAULT, None): {"x": "2"},
        (None, "c1"): {"consumer_byte_rate": "3"},
        (DEFAULT, DEFAULT): {"request_percentage": "4"},
        ("al/ice", "c:1"): {"producer_byte_rate": "5"},
    }


# --- one request ------------------------------------------------------------------------------

class _Connection:
    def __init__(self):
        self.throttled: list[int] = []

    def throttle(self, ms):
        self.throttled.append(ms)


def _request(quotas, now=0, exempt=False, seconds=(0.0, 0.0)):
    ticks = iter(seconds)
    connection = _Connection()
    quota = RequestQuota(quotas, "User:alice", "c", lambda: now, connection, exempt=exempt,
                         timer=lambda: next(ticks))
    return quota, connection


def test_produce_bytes_over_quota_throttle_the_answer_and_the_connection():
    quotas = ClientQuotas()
    quotas.update({(None, "c"): {"producer_byte_rate": "1000"}})
    quota, connection = _request(quotas)
    assert quota.produce_throttle_ms(20000) == 10000
    quota.handler_returned()
    response = quota.finish(m.ProduceResponse())
    assert response.throttle_time_ms == 10000 and connection.throttled == [10000]


def test_handler_time_counts_in_the_request_quota():
    quotas = ClientQuotas()
    quotas.update({(None, "c"): {"request_percentage": "1"}})
    quota, connection = _request(quotas, seconds=(10.0, 10.2))   # 0.2 s in the handler
    quota.handler_returned()
    response = quota.finish(m.MetadataResponse())
    # 20 %-seconds over 10 s = 2 % -> (2 - 1) / 1 * 10 s, capped at one window
    assert response.throttle_time_ms == 1000 and connection.throttled == [1000]


def test_a_throttled_fetch_takes_its_bytes_back():
    quotas = ClientQuotas()
    quotas.update({(None, "c"): {"consumer_byte_rate": "1000"}})
    quota, _ = _request(quotas)
    assert quota.fetch_throttle_ms(9000) == 0
    quota2, _ = _request(quotas)
    assert quota2.fetch_throttle_ms(3000) == 2000          # 12000 over 10 s
    assert quotas.fetch._rates[("", "c")].measure(0) == pytest.approx(900.0)


def test_exempt_requests_record_nothing_and_are_never_throttled():
    quotas = ClientQuotas()
    quotas.update({(None, "c"): {"producer_byte_rate": "1", "request_percentage": "0.001"}})
    quota, connection = _request(quotas, exempt=True, seconds=(0.0, 5.0))
    assert quota.produce_throttle_ms(10 ** 9) == 0
    quota.handler_returned()
    assert quota.finish(m.ProduceResponse()).throttle_time_ms == 0
    assert connection.throttled == [] and not quotas.produce._rates


def test_acks_zero_records_its_bytes_and_mutes_without_an_answer():
    quotas = ClientQuotas()
    quotas.update({(None, "c"): {"producer_byte_rate": "1000", "request_percentage": "0.001"}})
    quota, connection = _request(quotas, seconds=(0.0, 5.0))
    quota.produce_throttle_ms(20000)
    quota.handler_returned()
    assert quota.finish(None) is None
    assert connection.throttled == [10000]
    assert not quotas.request._rates                   # Kafka records no request time for it


def test_no_quota_set_means_no_bookkeeping_at_all():
    from kafkalite.server.dispatch import ApiDispatcher
    broker = SimpleNamespace(quotas=ClientQuotas(), clock_ms=lambda: 0)
    ctx = ApiDispatcher(broker).context(SimpleNamespace(), "kafka", 3, 11, 1, "c")
    assert ctx.quota is None
    broker.quotas.update({(None, "c"): {"producer_byte_rate": "1"}})
    ctx = ApiDispatcher(broker).context(SimpleNamespace(), "kafka", 3, 11, 1, "c")
    assert isinstance(ctx.quota, RequestQuota) and ctx.quota.client_id == "c"


def test_static_client_id_defaults_come_last():
    from kafkalite.config import BrokerConfig
    config = BrokerConfig.from_dict({"broker.id": 1, "zookeeper.connect": "zk:2181",
                                     "quota.producer.default": 500})
    quotas = ClientQuotas.from_config(config)
    assert quotas.produce.enabled and not quotas.fetch.enabled
    assert quotas.produce.quota("u", "c") == 500.0
    quotas.update({(None, DEFAULT): {"producer_byte_rate": "700"}})
    assert quotas.produce.quota("u", "c") == 700.0          # /config/clients/<default> first
    quotas.update({("u", None): {"producer_byte_rate": "900"}})
    assert quotas.produce.quota("u", "c") == 900.0
    assert quotas.produce.quota("v", "c") == 500.0          # no user quota for v: client-id tags
    assert ClientQuotas.from_config(BrokerConfig.from_dict(
        {"broker.id": 1, "zookeeper.connect": "zk:2181"})).produce.static_default is None


def test_a_rate_unused_for_an_hour_is_dropped():
    from kafkalite.server.quota_manager import INACTIVE_RATE_EXPIRY_MS
    manager = ClientQuotaManager("producer_byte_rate")
    manager.set_overrides({(None, DEFAULT): 1000.0})
    manager.record_and_get_throttle_ms("u", "old", 10, 0)
    manager.record_and_get_throttle_ms("u", "busy", 10, INACTIVE_RATE_EXPIRY_MS - 1000)
    assert set(manager._rates) == {("", "old"), ("", "busy")}     # not an hour yet
    manager.record_and_get_throttle_ms("u", "busy", 10, INACTIVE_RATE_EXPIRY_MS + 60000)
    assert set(manager._rates) == {("", "busy")}
