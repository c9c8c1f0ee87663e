"""The elected controller leaves ``/feature`` Enabled, as Kafka 2.8's does (KIP-584).

Kafka 2.8's controller creates ``{"features":{},"version":1,"status":1}`` on election; kafkalite's
wrote nothing, the one znode the ZooKeeper layout comparison (tests/oracle/
test_zookeeper_layout.py) found missing from kafkalite's tree.
"""

import json

import pytest

import zk_schema
from zk_schema import SchemaError
from zk_schema.features import DISABLED, ENABLED, FeatureZNode

from controller_fakes import ControllerHarness


def test_election_creates_an_enabled_feature_znode_with_no_features():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.controller(1)
    data, _ = h.admin.get_data(zk_schema.FEATURE_PATH)
    assert json.loads(data) == {"features": {}, "version": 1, "status": 1}


def test_a_disabled_feature_znode_is_enabled_and_its_features_kept():
    h = ControllerHarness(brokers=(1, 2, 3))
    h.admin.create(zk_schema.FEATURE_PATH, FeatureZNode(DISABLED, {"x": (1, 2)}).encode())
    h.controller(1)
    node = FeatureZNode.decode(h.admin.get_data(zk_schema.FEATURE_PATH)[0])
    assert (node.status, node.features) == (ENABLED, {"x": (1, 2)})


def test_feature_znode_round_trip_and_refusals():
    node = FeatureZNode(ENABLED, {"metadata.version": (1, 3)})
    assert FeatureZNode.decode(node.encode()) == node
    with pytest.raises(SchemaError):
        FeatureZNode.decode(b'{"version":1,"status":7,"features":{}}')
    with pytest.raises(SchemaError):
        FeatureZNode.decode(b'{"version":1,"status":1,"features":[]}')
