"""kafkalite's pytest plugin (entry point ``pytest11: kafkalite``): a real ZooKeeper for tests.

Fixtures:

- ``zookeeper`` (session): a running ZooKeeper — ``KAFKALITE_ZOOKEEPER=host:port`` if set, else a
  Docker container when an engine and a local ``zookeeper`` image exist, else the local install.
  It has ``connect_string``, ``log_tail(n)``, ``describe()``.
- ``zk_chroot``: a fresh chroot path per test (created), e.g. ``"/kl-test_x-1a2b3c4d5e6f"``.
- ``zk_connect``: the connect string with that chroot, e.g. ``"127.0.0.1:40123/kl-test_x-1a2b…"``.
- ``zk_client``: a started :class:`kafkalite.zk.ZkClient` on ``zk_connect`` (stopped afterwards).
- ``zk_expire``: ``zk_expire(client, wait_s=10.0) -> bool`` expires a ZkClient's session.
- ``fault_network``, ``fault_zookeeper``, ``fault_cluster_factory``: brokers and a ZooKeeper
  ensemble in network namespaces, with partitions and process faults (``kafkalite.testing.faults``).

When a test that used ZooKeeper fails, its report carries the tail of the ZooKeeper log.

This module loads in every pytest run of an environment where kafkalite is installed, so it
imports nothing heavy at import time (kazoo and the launcher are imported inside the fixtures).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import pytest

_ZK_FIXTURES = ("zookeeper", "zk_chroot", "zk_connect", "zk_client", "zk_expire")
_state: dict[str, Any] = {"server": None, "failures": 0, "kept_workdir": None}


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[Any]:
    """One real ZooKeeper for the whole test session.

    Its work directory (data and log) is a temp dir of its own, not pytest's rotated basetemp:
    it is deleted at the end when no ZooKeeper test failed, and kept (and named) otherwise.
    """
    import shutil
    import tempfile

    from kafkalite.local.zookeeper import start_zookeeper

    workdir = tempfile.mkdtemp(prefix="kafkalite-pytest-zk-")
    try:
        server = start_zookeeper(workdir)
    except BaseException:
        _state["kept_workdir"] = workdir
        raise
    _state["server"] = server
    try:
        yield server
    finally:
        server.stop()
        if _state["failures"]:
            _state["kept_workdir"] = workdir
        else:
            shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def _kafkalite_zk_admin(zookeeper: Any) -> Iterator[Any]:
    """A session-wide client without chroot, used to create and drop the tests' chroots."""
    from kafkalite.zk import ZkClient

    client = ZkClient(zookeeper.connect_string, session_timeout_ms=30_000).start()
    try:
        yield client
    finally:
        client.stop()


@pytest.fixture
def zk_chroot(request: pytest.FixtureRequest, _kafkalite_zk_admin: Any) -> Iterator[str]:
    """A fresh chroot for this test, created; removed afterwards when the test passed."""
    from kafkalite.local.zookeeper import unique_chroot

    chroot = unique_chroot(f"kl-{request.node.name}")
    _kafkalite_zk_admin.ensure_path(chroot)
    yield chroot
    report = getattr(request.node, "_kafkalite_report_call", None)
    if report is not None and report.passed:
        with contextlib.suppress(Exception):  # best effort: live sessions may still add nodes
            _kafkalite_zk_admin.delete(chroot, recursive=True)


@pytest.fixture
def zk_connect(zookeeper: Any, zk_chroot: str) -> str:
    """Connect string of the session's ZooKeeper with this test's chroot."""
    return f"{zookeeper.connect_string}{zk_chroot}"


@pytest.fixture
def zk_client(zk_connect: str) -> Iterator[Any]:
    """A started kafkalite ZkClient on this test's chroot (short session timeout: 6 s)."""
    from kafkalite.zk import ZkClient

    client = ZkClient(zk_connect, session_timeout_ms=6000).start()
    try:
        yield client
    finally:
        client.stop()


@pytest.fixture
def zk_expire(zookeeper: Any) -> Callable[..., bool]:
    """``zk_expire(client, wait_s=10.0)``: expire the client's ZooKeeper session (its ephemeral
    znodes are gone on return) and wait until the client noticed; returns whether it did."""
    from kafkalite.local.zookeeper import expire_session

    def expire(client: Any, wait_s: float = 10.0) -> bool:
        return expire_session(client, zookeeper.connect_string, wait_s=wait_s)

    return expire


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    setattr(item, f"_kafkalite_report_{report.when}", report)
    server = _state["server"]
    if report.failed and server is not None and any(
            name in getattr(item, "fixturenames", ()) for name in _ZK_FIXTURES):
        _state["failures"] += 1
        with contextlib.suppress(Exception):
            tail = server.log_tail(40)
            if tail:
                where = getattr(server, "log_path", None) or server.describe()
                report.sections.append((f"ZooKeeper log tail ({where})", tail))
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    server = _state["server"]
    if server is not None and (_state["failures"] or terminalreporter.verbosity > 0):
        terminalreporter.write_line(f"kafkalite: tests used {server.describe()}")
    if _state.get("kept_workdir"):
        terminalreporter.write_line(
            f"kafkalite: ZooKeeper data and log kept for inspection in {_state['kept_workdir']}")


# fixtures that start real brokers (they import the broker machinery only when used)
from kafkalite.testing.fixtures import (  # noqa: E402,F401
    bootstrap_servers, kafkalite_broker, kafkalite_cluster, kafkalite_cluster_factory)


# --- Docker (testcontainers) fixtures, with local processes as the fallback ------------------
# kafkalite_docker_zookeeper, kafkalite_docker_cluster (session scope): see
# kafkalite/testing/containers.py (owned with docker/). Importing it is cheap: testcontainers and
# docker are imported only when a fixture runs.
from kafkalite.testing.containers import (  # noqa: E402,F401
    kafkalite_docker_cluster, kafkalite_docker_zookeeper)


# --- fault injection (network namespaces, nftables, a ZooKeeper ensemble) ----------------------
# fault_network, fault_zookeeper (session scope), fault_cluster_factory: see
# kafkalite/testing/faults/fixtures.py; they import the toolkit only when used.
from kafkalite.testing.faults.fixtures import (  # noqa: E402,F401
    fault_cluster_factory, fault_network, fault_zookeeper)


# --- Apache Kafka 2.8.2 beside kafkalite (the oracle) -----------------------------------------
# apache_kafka, shared_kafkalite, kafka_systems (session scope), system: see
# kafkalite/testing/oracle_fixtures.py; the launcher is imported only when a fixture runs.
from kafkalite.testing.oracle_fixtures import (  # noqa: E402,F401
    apache_kafka, kafka_systems, shared_kafkalite, system)
