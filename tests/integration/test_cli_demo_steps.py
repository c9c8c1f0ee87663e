"""The README demo's first steps (`kafkalite cluster up --brokers 3 --demo`) on a fresh 3-broker
cluster: a replicated topic created and described at once, keyed records, read back in order,
and kcat reading them. The Spark step is tests/spark/test_pipeline.py's. The describe right after
the create is what once failed here: a broker that had not yet had its UpdateMetadata answered
UNKNOWN_TOPIC_OR_PARTITION."""

from __future__ import annotations

import importlib.util
import re

from kafkalite.cli import demo


def test_demo_steps_on_a_fresh_cluster(kafkalite_cluster_factory, zk_connect, capsys,
                                       monkeypatch):
    cluster = kafkalite_cluster_factory(3)
    find_spec = importlib.util.find_spec
    # the Spark step has its own test; here it says PySpark is missing and the demo returns
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pyspark" else find_spec(name, *a))
    demo.run_demo(cluster.bootstrap_servers, zk_connect, 3)
    out = capsys.readouterr().out
    described = re.findall(r"greetings-(\d): leader broker (\d), replicas \[(.*?)\], "
                           r"in-sync \[(.*?)\]", out)
    assert sorted(p for p, *_ in described) == ["0", "1", "2"], out
    for _, leader, replicas, isr in described:
        assert len(replicas.split(",")) == 3 and leader in replicas.split(", "), out
    assert "... 100 records:" in out, out
    kcat_lines = re.findall(r"partition 0 offset \d+  key \w+  value hello #\d+ from \w+", out)
    assert len(kcat_lines) == 5, out
