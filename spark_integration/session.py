"""SparkSession helpers with the settings kafkalite's Spark jobs and tests need.

``spark_session()`` builds a local session that works on a plain machine:

* ``PYSPARK_PYTHON`` (and ``PYSPARK_DRIVER_PYTHON``) are set to the current interpreter, so the
  Python workers import the same kafkalite and pyarrow as the driver;
* the driver binds to 127.0.0.1 (``spark.driver.bindAddress``, ``spark.driver.host``,
  ``SPARK_LOCAL_IP``), so no hostname lookup or external interface is involved;
* ``spark.driver.memory`` is capped (1g by default);
* the UI is off unless asked for, the console progress bar is off, the session time zone is UTC;
* ``spark.sql.shuffle.partitions`` is the number of local cores (Spark's default of 200 makes
  every stateful micro-batch run 200 tiny tasks);
* with a standalone master (``spark://host:port``, e.g. :mod:`spark_integration.standalone`) the
  first job waits until every executor the cluster grants has registered
  (``spark.scheduler.minRegisteredResourcesRatio`` 1.0, at most 60 s), so the partitions are read
  on all workers from the start; when the master is not on loopback the driver binds to all
  interfaces and advertises this host's address (``SPARK_DRIVER_HOST`` overrides it), which the
  executors on other hosts (containers) connect back to;
* with ``kafka_connector``, Spark's own Kafka connector (``format("kafka")``) is on ``spark.jars``
  (:mod:`spark_integration.kafka_connector`);
* the "kafkalite" data source is usable: found by PySpark's auto-discovery of the top-level
  ``pyspark_kafkalite`` module (the module's directory is put on the workers' ``PYTHONPATH`` when
  an editable install hides it from discovery), and registered explicitly when ``register``.

These settings apply when the session starts its JVM; a JVM that is already running keeps its
own (``spark_session`` then reuses it, as ``SparkSession.builder.getOrCreate`` does).
"""

from __future__ import annotations

import importlib.util
import os
import pkgutil
import re
import shutil
import socket
import sys
import tempfile

__all__ = ["spark_session", "configure_environment", "spark_unavailable_reason", "register",
           "local_cores"]


def spark_unavailable_reason() -> str | None:
    """Why Spark cannot run here (None when it can): pyspark, pyarrow or Java missing."""
    missing = {
        "pyspark": "pyspark is not installed (pip install 'kafkalite[spark]')",
        "pyarrow": ("pyarrow is not installed (the Python data source needs it: "
                    "pip install 'kafkalite[spark]')"),
    }
    for module, what in missing.items():
        if importlib.util.find_spec(module) is None:
            return what
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK):
        return None
    if shutil.which("java") is None:
        return ("Java is not installed (Spark needs a JDK 17 or 21: set JAVA_HOME or put java "
                "on PATH)")
    return None


def _discoverable(module: str) -> bool:
    return any(info.name == module for info in pkgutil.iter_modules())


def configure_environment(python: str | None = None) -> None:
    """Environment for the JVM and Python workers Spark is about to start (idempotent)."""
    python = python or sys.executable
    os.environ["PYSPARK_PYTHON"] = python
    os.environ["PYSPARK_DRIVER_PYTHON"] = python
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # PySpark finds `format("kafkalite")` by scanning the workers' sys.path for `pyspark_*`
    # modules; an editable install serves modules through an import hook that the scan cannot
    # see, so put the module's directory on the workers' path then.
    spec = importlib.util.find_spec("pyspark_kafkalite")
    if spec is not None and spec.origin and not _discoverable("pyspark_kafkalite"):
        directory = os.path.dirname(os.path.abspath(spec.origin))
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if directory not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([*paths, directory])


def local_cores(master: str) -> int:
    match = re.fullmatch(r"local\[(\d+|\*)(?:,\d+)?\]", master.strip())
    if match is None:
        return 1 if master.strip() == "local" else (os.cpu_count() or 2)
    return os.cpu_count() or 2 if match.group(1) == "*" else int(match.group(1))


def _driver_address(master: str) -> tuple[str, str]:
    """(bind address, advertised host) of the driver for ``master``."""
    match = re.fullmatch(r"spark://([^:/,]+)(?::\d+)?", master.strip())
    if match is None or match.group(1) in ("127.0.0.1", "localhost"):
        return "127.0.0.1", os.environ.get("SPARK_DRIVER_HOST", "127.0.0.1")
    # the address this host's name resolves to: a container's own name may not be in the
    # network's DNS (``docker compose run``), its address is reachable
    return "0.0.0.0", (os.environ.get("SPARK_DRIVER_HOST")
                       or socket.gethostbyname(socket.gethostname()))


def _log4j_config(level: str) -> str:
    """A log4j2 configuration logging ``level`` and above to stderr (written once per level)."""
    # WARN at most: PySpark's shell mode resets the root level to WARN, announcing it on stderr,
    # when the configured one differs; a quieter level is applied by setLogLevel afterwards
    level = level.upper() if level.upper() in ("ALL", "TRACE", "DEBUG", "INFO") else "WARN"
    path = os.path.join(tempfile.gettempdir(), f"kafkalite-spark-log4j2-{level.lower()}.properties")
    text = (f"rootLogger.level = {level.lower()}\n"
            "rootLogger.appenderRef.stderr.ref = console\n"
            "appender.console.type = Console\n"
            "appender.console.name = console\n"
            "appender.console.target = SYSTEM_ERR\n"
            "appender.console.layout.type = PatternLayout\n"
            "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n"
            # "Unable to load native-hadoop library": expected, and said on every start
            "logger.nativecode.name = org.apache.hadoop.util.NativeCodeLoader\n"
            "logger.nativecode.level = error\n")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return path
    except OSError:
        pass
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return path


def register(spark) -> None:
    """Register the "kafkalite" data source with ``spark`` (not needed when auto-discovered)."""
    from spark_integration.datasource import KafkaliteDataSource

    spark.dataSource.register(KafkaliteDataSource)


def spark_session(app_name: str = "kafkalite", master: str = "local[2]", *,
                  driver_memory: str = "1g", ui: bool = False,
                  shuffle_partitions: int | None = None, register_source: bool | None = None,
                  conf: dict | None = None, log_level: str = "WARN",
                  kafka_connector: bool = False):
    """A local SparkSession with the settings above; ``conf`` adds or overrides settings.

    ``register_source``: None (default) registers the data source explicitly only when PySpark
    cannot discover it by itself (no ``pyspark_kafkalite`` module, or a JVM that was started
    before this call without the environment above). ``kafka_connector``: put Spark's Kafka
    connector on ``spark.jars`` (ConnectorNotFoundError, naming the fetch script, when missing).
    """
    reason = spark_unavailable_reason()
    if reason:
        raise RuntimeError(f"cannot start Spark: {reason}")
    configure_environment()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if register_source is None:
        jvm_running = SparkContext._gateway is not None
        register_source = jvm_running or importlib.util.find_spec("pyspark_kafkalite") is None

    bind_address, driver_host = _driver_address(master)
    settings = {
        "spark.driver.bindAddress": bind_address,
        "spark.driver.host": driver_host,
        "spark.driver.memory": driver_memory,
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(shuffle_partitions or local_cores(master)),
        "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
        "spark.python.worker.reuse": "true",
    }
    if master.strip().startswith("spark://"):
        settings["spark.scheduler.minRegisteredResourcesRatio"] = "1.0"
        settings["spark.scheduler.maxRegisteredResourcesWaitingTime"] = "60s"
    if SparkContext._gateway is None:
        # the JVM's own log level from its first line on (setLogLevel only acts later)
        settings["spark.driver.extraJavaOptions"] = \
            f"-Dlog4j2.configurationFile=file:{_log4j_config(log_level)}"
    settings.update({k: str(v) for k, v in (conf or {}).items()})
    if kafka_connector:
        from spark_integration.kafka_connector import with_connector

        settings = with_connector(settings)
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if register_source:
        register(spark)
    return spark
