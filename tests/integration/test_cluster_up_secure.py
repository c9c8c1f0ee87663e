"""``kafkalite cluster up --security sasl_ssl --detach``: generated certificates, an admin user
in ZooKeeper before the brokers start, SASL_SSL client ports with the authorizer on, and the
client settings printed; kcat with exactly those settings works, a plaintext client does not,
and ``down`` stops it all (real processes)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _needs_a_local_zookeeper_and_kcat():
    import shutil

    from kafkalite.local.zookeeper import ZooKeeperNotFoundError, find_zookeeper_install

    try:
        find_zookeeper_install()
    except ZooKeeperNotFoundError as exc:
        pytest.skip(f"cluster up starts a local ZooKeeper: {exc}")
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed (scripts/setup.sh installs it)")


def kafkalite(*args, timeout=300):
    return subprocess.run([sys.executable, "-P", "-m", "kafkalite", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)


def test_cluster_up_with_sasl_ssl_prints_settings_that_work(tmp_path):
    data_dir = str(tmp_path / "cluster")
    up = kafkalite("cluster", "up", "--security", "sasl_ssl", "--brokers", "2", "--detach",
                   "--data-dir", data_dir, "--base-port", "0", "--zk-port", "0")
    try:
        assert up.returncode == 0, up.stderr
        kcat_line = next(line for line in up.stderr.splitlines() if line.startswith("kcat"))
        command = kcat_line.split(None, 1)[1].split()
        listing = subprocess.run(command, capture_output=True, text=True, timeout=60)
        assert listing.returncode == 0, listing.stderr
        assert "2 brokers:" in listing.stdout
        bootstrap = re.search(r"KAFKALITE_BOOTSTRAP_SERVER=(\S+)", up.stdout).group(1)
        plain = subprocess.run(["kcat", "-b", bootstrap, "-L", "-m", "5"], capture_output=True,
                               timeout=60)
        assert plain.returncode != 0
        properties = f"{data_dir}/security/admin.properties"
        acls = kafkalite("acls", "--bootstrap-server", bootstrap, "--command-config",
                         properties, "--add", "--allow-principal", "User:alice", "--consumer",
                         "--topic", "t", "--group", "g")
        assert acls.returncode == 0, acls.stderr
        assert "operation=READ" in acls.stdout
    finally:
        down = kafkalite("cluster", "down", "--data-dir", data_dir)
        assert down.returncode == 0, down.stderr
