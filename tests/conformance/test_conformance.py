"""The conformance suite: every catalogue scenario against Apache Kafka 2.8.2 and kafkalite.

One item per scenario. The scenarios selected in this session run once, several at a time, on
the first item that needs them (``conformance_rows``); each item then judges its own row: a
difference the allowlist does not name fails, printing both answers, and so does an allowlist
entry whose scenario now answers the same (stale), or a scenario that could not run. When every
scenario of the catalogue ran, the fixture's teardown writes ``docs/conformance.md``.
The ACL scenarios run on a pair of 1-broker clusters with an authorizer, started by the same
fixture; all others on the session's shared clusters (``kafka_systems``).
"""

from __future__ import annotations

import os
import time

import pytest

from kafkalite.server.api_table import kafka_ranges
from kafkalite.testing.conformance import raw, report
from kafkalite.testing.conformance.allowlist import ALLOWLIST
from kafkalite.testing.conformance.catalogue import BY_NAME, SCENARIOS
from kafkalite.testing.conformance.clusters import AuthorizerPair
from kafkalite.testing.conformance.runner import run_all

pytestmark = [pytest.mark.integration]

REPORT_PATH = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "docs",
                           "conformance.md")
NAMES = [s.name for s in SCENARIOS]


class _Rows:
    """The rows of this session's selected scenarios, computed on first use."""

    def __init__(self, servers: dict[str, dict[str, str]], selected: list[str]):
        self.servers = servers
        self.selected = selected
        self.rows: dict = {}
        self.seconds: float | None = None

    def get(self, name: str):
        if not self.rows:
            started = time.monotonic()
            rows = run_all([BY_NAME[n] for n in self.selected], self.servers)
            self.seconds = time.monotonic() - started
            self.rows = {row.scenario: row for row in rows}
        return self.rows[name]


@pytest.fixture(scope="module")
def conformance_rows(request, kafka_systems, zookeeper, tmp_path_factory):
    """The selected scenarios' rows; the authorizer pair (1 broker of each system with an ACL
    authorizer) is started here when a selected scenario needs it, and stopped after."""
    module = request.module.__name__
    selected = [item.callspec.params["name"] for item in request.session.items
                if item.module.__name__ == module and hasattr(item, "callspec")
                and "name" in item.callspec.params] or NAMES
    servers = {"shared": {name: cluster.bootstrap_servers
                          for name, cluster in kafka_systems.items()}}
    pair = None
    if any(BY_NAME[n].cluster == "authorizer" for n in selected):
        pair = AuthorizerPair(zookeeper.connect_string,
                              str(tmp_path_factory.mktemp("conformance-authorizer")))
        pair.start()
        servers["authorizer"] = pair.servers
    rows = _Rows(servers, selected)
    failed_before = request.session.testsfailed
    try:
        yield rows
    finally:
        if pair is not None:
            if request.session.testsfailed > failed_before:
                print(pair.describe_logs())
            pair.stop()
    if rows.rows and set(rows.rows) == set(NAMES):
        path = report.write([rows.rows[n] for n in NAMES], os.path.normpath(REPORT_PATH),
                            rows.seconds)
        print(f"\nconformance report written to {path}")


@pytest.mark.parametrize("name", NAMES)
def test_scenario(conformance_rows, name):
    row = conformance_rows.get(name)
    if row.failed:
        pytest.fail(row.explain(), pytrace=False)


def test_every_served_api_is_covered():
    """Each API key kafkalite advertises (the API table's Kafka rows) is named by a scenario."""
    covered = {api for s in SCENARIOS for api in s.apis}
    missing = sorted(raw.api_name(int(k)) for k in kafka_ranges()
                     if raw.api_name(int(k)) not in covered)
    assert not missing, f"no conformance scenario covers {missing}"


def test_catalogue_is_large_and_named_apis_exist():
    from kio.index import api_key_map

    known = {raw.api_name(k) for k in api_key_map}
    assert len(SCENARIOS) >= 60
    unknown = sorted({api for s in SCENARIOS for api in s.apis} - known)
    assert not unknown, f"scenarios name APIs Kafka does not have: {unknown}"


def test_allowlist_names_scenarios_and_issues():
    for name, reason in ALLOWLIST.items():
        assert name in BY_NAME, f"allowlist entry {name!r} names no scenario"
        assert reason.startswith(("not served, ", "Kafka bug: ")), \
            f"allowlist entry {name!r} says neither what kafkalite does not serve nor shows a " \
            f"Kafka bug: {reason}"
