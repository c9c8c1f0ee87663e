"""Example Spark pipelines over kafkalite (see :mod:`spark_integration.pipelines.payments`)."""
