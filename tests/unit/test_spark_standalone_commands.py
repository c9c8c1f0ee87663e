"""The pure pieces of running Spark beyond one machine: spark-class command lines
(spark_integration.standalone), the driver's address for a master (session._driver_address), and
the docker test's check that both workers ran tasks."""

from __future__ import annotations

import os
import sys

import pytest

from spark_integration import session, standalone

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "system"))


def test_master_and_worker_command_lines():
    master = standalone.spark_class_command("master", host="127.0.0.1", port=0, webui_port=8080)
    assert master[0].endswith(os.path.join("pyspark", "bin", "spark-class"))
    assert master[1:] == [standalone.MASTER_CLASS, "--host", "127.0.0.1", "--port", "0",
                          "--webui-port", "8080"]
    worker = standalone.spark_class_command("worker", host="w1", master_url="spark://m:7077",
                                            cores=1, memory="1g", work_dir="/tmp/w")
    assert worker[1:] == [standalone.WORKER_CLASS, "spark://m:7077", "--host", "w1", "--port",
                          "0", "--webui-port", "0", "--cores", "1", "--memory", "1g",
                          "--work-dir", "/tmp/w"]
    with pytest.raises(ValueError, match="master's URL"):
        standalone.spark_class_command("worker", host="w1")
    with pytest.raises(ValueError, match="master or worker"):
        standalone.spark_class_command("driver", host="w1")


def test_driver_binds_loopback_for_a_local_master_and_all_interfaces_for_a_remote_one(
        monkeypatch):
    monkeypatch.delenv("SPARK_DRIVER_HOST", raising=False)
    assert session._driver_address("local[2]") == ("127.0.0.1", "127.0.0.1")
    assert session._driver_address("spark://127.0.0.1:7077") == ("127.0.0.1", "127.0.0.1")
    bind, host = session._driver_address("spark://spark-master:7077")
    assert bind == "0.0.0.0" and host not in ("", "0.0.0.0")
    monkeypatch.setenv("SPARK_DRIVER_HOST", "pipeline")
    assert session._driver_address("spark://spark-master:7077") == ("0.0.0.0", "pipeline")


def test_the_docker_check_needs_tasks_on_two_worker_hosts():
    from docker_e2e_clients import check_workers_ran_tasks

    said = []
    check_workers_ran_tasks("processed 2000 input rows in 2 micro-batches\n"
                            "tasks completed per executor: 0 on 172.18.0.7:40111 9, "
                            "1 on 172.18.0.8:35551 4\n", said.append)
    assert said == ["[docker-test] pipeline tasks per worker host: "
                    "{'172.18.0.7': 9, '172.18.0.8': 4}"]
    with pytest.raises(AssertionError, match="not run on both workers"):
        check_workers_ran_tasks("tasks completed per executor: 0 on 172.18.0.7:1 9, "
                                "1 on 172.18.0.8:2 0\n", said.append)
    with pytest.raises(AssertionError, match="no per-executor task counts"):
        check_workers_ran_tasks("processed 2000 input rows\n", said.append)
