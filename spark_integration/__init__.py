"""Spark through PySpark: the "kafkalite" data source and the example pipelines.

* ``spark.read.format("kafkalite")`` / ``readStream`` / ``df.write.format("kafkalite")`` /
  ``writeStream``: Spark's Kafka source, schema and options, for kafkalite
  (:mod:`spark_integration.datasource`; options in :mod:`spark_integration.options`).
* :func:`register` registers the source with a session (PySpark also finds it on its own
  through the top-level ``pyspark_kafkalite`` module).
* :func:`spark_session`: a local session with the settings this needs
  (:mod:`spark_integration.session`).
* :mod:`spark_integration.pipelines.payments`: the demo pipeline.

Importing this package does not import pyspark; the names below load it when first used.
"""

from __future__ import annotations

__all__ = ["register", "spark_session", "KafkaliteDataSource", "kafkalite_schema", "NAME"]

NAME = "kafkalite"


def register(spark) -> None:
    """Register the "kafkalite" data source with ``spark``."""
    from spark_integration.session import register as _register

    _register(spark)


def spark_session(*args, **kwargs):
    """See :func:`spark_integration.session.spark_session`."""
    from spark_integration.session import spark_session as _spark_session

    return _spark_session(*args, **kwargs)


def __getattr__(name):
    if name in ("KafkaliteDataSource", "kafkalite_schema"):
        from spark_integration import datasource

        return getattr(datasource, name)
    raise AttributeError(f"module 'spark_integration' has no attribute {name!r}")
