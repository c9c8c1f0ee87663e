"""The payments pipeline on local[2] Spark and 3 brokers: its totals against plain Python, through
the kafkalite data source and through Spark's own Kafka connector (``--connector kafka``)."""

from __future__ import annotations

import json
import os
import time

import pytest
from sparktools import consume_with_confluent, unique_topic

from spark_integration.pipelines.payments import (
    PipelineConfig,
    ensure_topics,
    generate_payments,
    late_payments,
    produce_payments,
    read_parquet_totals,
    read_topic_totals,
    reference_totals,
    run_pipeline,
    topic_record_key,
)

pytestmark = pytest.mark.spark

MINUTE = 60_000
# a window boundary an hour ago: payments older than retention.ms (7 days) could be deleted by a
# retention check while the module runs, as Apache Kafka 2.8 deletes even an active segment
START_MS = int(time.time()) // 60 * 60_000 - 60 * MINUTE


def test_windowed_totals_equal_a_plain_python_computation(spark, bootstrap, tmp_path):
    config = PipelineConfig(bootstrap, input_topic=unique_topic("payments"),
                            output_topic=unique_topic("totals"), output_dir=str(tmp_path),
                            window="1 minute", watermark="2 minutes")
    ensure_topics(bootstrap, [config.input_topic, config.output_topic], partitions=3)
    # round 1: six minutes of payments, some out of order by up to 45 s
    first = generate_payments(400, start_ms=START_MS, span_s=360, seed=21)
    produce_payments(bootstrap, config.input_topic, first)
    lines: list[str] = []
    result1 = run_pipeline(spark, config, echo=lines.append)
    assert result1.input_rows == 2 * 400           # two queries (two sinks) read every event
    assert any("batch 0: 400 input rows" in line for line in lines)

    # round 2, from the checkpoint: two more minutes, plus payments from long before the
    # watermark, which must be dropped as too late
    # and two payments stored twice, as an at-least-once producer's retry would: counted once
    second = (generate_payments(120, start_ms=START_MS + 6 * MINUTE, span_s=120, seed=22,
                                id_prefix="q")
              + late_payments(4, event_time_ms=START_MS + 30_000))
    second += second[10:12]
    produce_payments(bootstrap, config.input_topic, second)
    result2 = run_pipeline(spark, config, echo=lines.append)
    assert result2.input_rows == 2 * 126

    reference = reference_totals([first, second], "1 minute", "2 minutes")
    assert len(reference.dropped) == 4 and reference.closed and reference.open
    parquet = read_parquet_totals(spark, config.parquet_path)
    assert parquet == reference.closed
    # the kafkalite sink is at-least-once: a retried write may repeat a total, never change it
    records = read_topic_totals(bootstrap, config.output_topic)
    assert {topic_record_key(r) for r in records} == set(reference.closed)
    assert all((r["total_cents"], r["payments"]) == reference.closed[topic_record_key(r)]
               for r in records)
    # windows final after round 1 were not changed by round 2 (nor by its late payments)
    final_after_round_1 = reference_totals([first], "1 minute", "2 minutes").closed
    assert final_after_round_1 and all(parquet[key] == value
                                       for key, value in final_after_round_1.items())


def test_both_connectors_give_the_same_window_totals(spark, bootstrap, tmp_path):
    """One input, the pipeline once through each connector: the same closed windows in Parquet,
    equal to plain Python; Spark's Kafka sink wrote them to the topic (read by confluent-kafka)."""
    input_topic = unique_topic("both-payments")
    outputs = {c: unique_topic(f"{c}-totals") for c in ("kafkalite", "kafka")}
    ensure_topics(bootstrap, [input_topic, *outputs.values()], partitions=3)
    payments = generate_payments(150, start_ms=START_MS, span_s=300, seed=31)
    payments += payments[5:7]                            # stored twice: counted once
    produce_payments(bootstrap, input_topic, payments)
    reference = reference_totals([payments], "1 minute", "2 minutes")
    assert reference.closed

    totals = {}
    for connector, sinks in (("kafkalite", ("parquet",)), ("kafka", ("kafkalite", "parquet"))):
        config = PipelineConfig(bootstrap, input_topic=input_topic,
                                output_topic=outputs[connector],
                                output_dir=str(tmp_path / connector), sinks=sinks,
                                connector=connector)     # one micro-batch: one round
        result = run_pipeline(spark, config, echo=lambda line: None)
        assert result.input_rows == len(sinks) * len(payments), connector
        totals[connector] = read_parquet_totals(spark, config.parquet_path)
    assert totals["kafka"] == totals["kafkalite"] == reference.closed
    # Spark's Kafka sink (at-least-once): every closed window, a repeat only ever equal
    written = [json.loads(m.value()) for m in consume_with_confluent(bootstrap, outputs["kafka"])]
    assert {topic_record_key(r) for r in written} == set(reference.closed)
    assert all((r["total_cents"], r["payments"]) == reference.closed[topic_record_key(r)]
               for r in written)


def test_cli_runs_the_pipeline(spark, bootstrap, tmp_path):
    from click.testing import CliRunner

    from kafkalite.cli.pipeline import command

    input_topic, output_topic = unique_topic("cli-payments"), unique_topic("cli-totals")
    result = CliRunner().invoke(command, [
        "run", "--bootstrap-server", bootstrap, "--input-topic", input_topic,
        "--output-topic", output_topic, "--output-dir", str(tmp_path), "--generate", "200",
        "--max-offsets-per-trigger", "120"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "produced 200 payment events" in result.output
    assert "processed 400 input rows in" in result.output       # 2 sinks x 200 events
    assert "[payer_totals_to_parquet] batch 1: 80 input rows" in result.output
    assert "window totals in" in result.output
    assert os.path.isdir(os.path.join(tmp_path, "totals"))
    # the CLI reused this module's session and left it running
    assert spark.range(3).count() == 3


def test_the_pipeline_does_not_import_the_cli():
    """The CLI sits above the pipeline (``kafkalite pipeline`` is its command line): no module of
    spark_integration imports kafkalite.cli, at the top or inside a function or a __main__."""
    import ast
    import pathlib

    import spark_integration

    upward = []
    for path in pathlib.Path(spark_integration.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            upward += [f"{path.name}:{node.lineno} {n}" for n in names
                       if n == "kafkalite.cli" or n.startswith("kafkalite.cli.")]
    assert not upward, upward


def test_run_demo_prints_and_checks_the_totals(spark, bootstrap, tmp_path):
    """What the README's one-command demo runs once the cluster is up."""
    import io

    from rich.console import Console

    from spark_integration.pipelines.payments import run_demo

    out = io.StringIO()
    result = run_demo(bootstrap, events=300, late=3, output_dir=str(tmp_path),
                      input_topic=unique_topic("demo-payments"),
                      output_topic=unique_topic("demo-totals"), spark=spark,
                      console=Console(file=out, width=120))
    text = out.getvalue()
    assert result.matches, text
    assert len(result.reference.dropped) == 3
    assert "Payments per payer and window" in text and "Pankaj" in text
    assert "totals match the plain-Python computation" in text
    assert spark.range(2).count() == 2            # the demo left the caller's session running
