"""PySpark's auto-discovery hook: ``spark.read.format("kafkalite")`` without registering.

PySpark imports every top-level module named ``pyspark_<name>`` and registers its
``DefaultSource`` under ``DefaultSource.name()``. The data source itself lives in
:mod:`spark_integration.datasource`.
"""

from spark_integration.datasource import KafkaliteDataSource as DefaultSource

__all__ = ["DefaultSource"]
