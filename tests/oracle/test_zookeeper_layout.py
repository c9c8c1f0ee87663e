"""kafkalite's ZooKeeper layout checked by Kafka itself.

One scenario (topics with a config override, a reassignment, a topic config change, ACLs, a SCRAM
user, a consumer group with committed offsets, a topic deletion, a broker killed with kill -9; see
``kafkalite.testing.zk_layout_scenario``) runs against 3 kafkalite brokers and 3 Apache Kafka
2.8.2 brokers of this module's own, each on a chroot of the session's ZooKeeper, both side by
side. Each tree is then read with Kafka's own ``zookeeper-shell`` and compared (paths, znode kinds,
JSON fields, types and normalised values; ``kafkalite.testing.zk_layout``). Every difference must
be listed with its reason in ``kafkalite.testing.zk_layout_expected``, and every listed one must
still occur. The module writes the outcome to ``docs/zookeeper-layout.md`` on every run.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from kafkalite.testing import zk_layout
from kafkalite.local.cluster import LocalCluster
from kafkalite.testing.oracle_fixtures import SHARED_SETTINGS, session_chroot, side_by_side
from kafkalite.testing.zk_layout_expected import EXPECTED_DIFFERENCES
from kafkalite.testing.zk_layout_scenario import (
    ACL_GROUP, ACL_PREFIX, ACL_TOPIC, AUTHORIZER_SETTINGS, DELETED_TOPIC, SCENARIO, TOPIC, USER,
    Side, run_and_dump,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "zookeeper-layout.md")
GENERATED_BY = ("`tests/oracle/test_zookeeper_layout.py` on every run "
                "(`kafkalite.testing.zk_layout.render_markdown`)")


@dataclass
class LayoutRun:
    sides: dict[str, Side]
    nodes: dict[str, dict[str, zk_layout.Znode]]
    layouts: dict[str, zk_layout.Layout]
    diffs: list[zk_layout.Difference]


def _run_both(sides: list[Side]) -> dict[str, dict[str, zk_layout.Znode]]:
    """Each side's scenario and dump in a thread of its own: the waits overlap."""
    with ThreadPoolExecutor(len(sides)) as pool:
        futures = [pool.submit(run_and_dump, side) for side in sides]
        errors = [future.exception() for future in futures]
    for side, error in zip(sides, errors):
        if error is not None:
            raise AssertionError(f"the scenario failed on {side.name}: {error}") from error
    return {side.name: future.result() for side, future in zip(sides, futures)}


@pytest.fixture(scope="module")
def layout_run(zookeeper, tmp_path_factory) -> LayoutRun:
    from kafkalite.testing.apache_kafka import ApacheKafkaCluster, ApacheKafkaNotFoundError

    overrides = {**SHARED_SETTINGS, **AUTHORIZER_SETTINGS}
    kl_connect = f"{zookeeper.connect_string}{session_chroot(zookeeper, 'layout-kafkalite')}"
    ak_connect = f"{zookeeper.connect_string}{session_chroot(zookeeper, 'layout-kafka')}"
    kl_dir, ak_dir = (str(tmp_path_factory.mktemp(name)) for name in ("layout-kl", "layout-ak"))
    try:
        kafka = ApacheKafkaCluster(ak_connect, 3, workdir=ak_dir, overrides=overrides)
    except ApacheKafkaNotFoundError as exc:
        pytest.fail(str(exc), pytrace=False)
    kafkalite = LocalCluster(kl_connect, 3, workdir=kl_dir, overrides=overrides)
    sides = [Side("kafkalite", kafkalite, kl_connect, kl_dir), Side("kafka", kafka, ak_connect,
                                                                    ak_dir)]
    with side_by_side(kafkalite, kafka):
        nodes = _run_both(sides)
    layouts = {name: zk_layout.layout(found) for name, found in nodes.items()}
    diffs = zk_layout.compare(layouts["kafkalite"], layouts["kafka"])
    with open(DOC, "w") as fh:
        fh.write(zk_layout.render_markdown(diffs, EXPECTED_DIFFERENCES, layouts["kafkalite"],
                                           layouts["kafka"], SCENARIO, GENERATED_BY))
    return LayoutRun({side.name: side for side in sides}, nodes, layouts, diffs)


@pytest.mark.parametrize("name", ["kafkalite", "kafka"])
def test_the_scenario_left_its_marks(layout_run, name):
    """The comparison means something only if both trees hold what the scenario made."""
    nodes = layout_run.nodes[name]
    for path in (f"/brokers/topics/{TOPIC}/partitions/2/state", f"/config/topics/{TOPIC}",
                 "/brokers/topics/__consumer_offsets/partitions/49/state",
                 f"/config/users/{USER}", f"/kafka-acl/Topic/{ACL_TOPIC}",
                 f"/kafka-acl/Group/{ACL_GROUP}",
                 f"/kafka-acl-extended/prefixed/Topic/{ACL_PREFIX}", "/controller",
                 "/cluster/id", "/latest_producer_id_block"):
        assert path in nodes, f"{name}: no {path}"
    assert not any(p.startswith(f"/brokers/topics/{DELETED_TOPIC}") for p in nodes)
    victim = layout_run.sides[name].victim
    live = {p for p in nodes if p.startswith("/brokers/ids/")}
    assert live == {f"/brokers/ids/{b}" for b in (1, 2, 3) if b != victim}
    config = nodes[f"/config/topics/{TOPIC}"].data
    assert '"retention.ms":"86400000"' in config and '"max.message.bytes":"2000000"' in config


def test_every_difference_is_listed_with_its_reason(layout_run):
    unexpected, _stale = zk_layout.check(layout_run.diffs, EXPECTED_DIFFERENCES)
    assert not unexpected, (
        "differences from Kafka 2.8.2's layout that kafkalite.testing.zk_layout_expected does not "
        "list:\n" + "\n".join(f"  {d.key}: {d.detail}" for d in unexpected))


def test_every_listed_difference_still_exists(layout_run):
    _unexpected, stale = zk_layout.check(layout_run.diffs, EXPECTED_DIFFERENCES)
    assert not stale, ("listed in kafkalite.testing.zk_layout_expected but no longer found "
                       "(remove them):\n" + "\n".join(f"  {key}" for key in stale))
