"""``kafkalite pipeline``: the Spark payments pipeline (spark_integration.pipelines.payments).

* ``pipeline run``: windowed totals per payer from the input topic to the output topic and to
  Parquet, printing each micro-batch's progress. ``--trigger available-now`` (default) processes
  what is there and exits; ``--trigger continuous`` runs a micro-batch every ``--interval`` until
  Ctrl-C. ``--generate N`` first produces N payment events.
* ``pipeline generate``: produce payment events.
* ``pipeline demo``: the whole demo on a running cluster (generate, run twice, print the table,
  check it against a plain-Python computation).

``--master spark://host:port`` runs it on a Spark standalone cluster (its executors read the
partitions in parallel; spark_integration.standalone starts one), and prints how many tasks each
executor completed.

``--connector kafka`` reads and writes the topics with Spark's own Kafka connector
(spark-sql-kafka-0-10 4.2.0, fetched by scripts/fetch_spark_kafka.sh) instead of the kafkalite data
source; both give the same window totals.

Needs the spark extra (pyspark, pyarrow) and Java.
"""

from __future__ import annotations

import click

from kafkalite.cli.options import bootstrap_option


def _payments():
    from spark_integration.session import spark_unavailable_reason

    reason = spark_unavailable_reason()
    if reason:
        raise click.ClickException(f"the pipeline needs Spark: {reason}")
    from spark_integration.pipelines import payments

    return payments


def _check_connector(connector: str) -> None:
    if connector == "kafka":
        from spark_integration.kafka_connector import ConnectorNotFoundError, connector_jars

        try:
            connector_jars()
        except ConnectorNotFoundError as exc:
            raise click.ClickException(str(exc)) from None


def _bootstrap(bootstrap_server: str, zookeeper: str | None) -> str:
    if zookeeper:
        from spark_integration.client_io import resolve_bootstrap

        return resolve_bootstrap(None, zookeeper)
    return bootstrap_server


def _check_duration(ctx, param, value):
    from spark_integration.pipelines.payments import parse_duration_ms

    try:
        parse_duration_ms(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


zookeeper_flag = click.option(
    "--zookeeper", default=None,
    help="find the brokers in ZooKeeper (host:port/chroot) instead of --bootstrap-server")
input_topic_option = click.option("--input-topic", default="payments", show_default=True)
connector_option = click.option(
    "--connector", type=click.Choice(["kafkalite", "kafka"]), default="kafkalite",
    show_default=True,
    help="read and write the topics with the kafkalite data source or Spark's own Kafka "
         "connector (its jars: scripts/fetch_spark_kafka.sh)")


@click.group("pipeline")
def command():
    """The Spark payments pipeline: windowed totals per payer."""


@command.command("run")
@bootstrap_option
@zookeeper_flag
@input_topic_option
@click.option("--output-topic", default="payer-totals", show_default=True)
@click.option("--output-dir", default="./pipeline-output", show_default=True,
              type=click.Path(file_okay=False), help="Parquet in <dir>/totals")
@click.option("--checkpoint-dir", default=None, type=click.Path(file_okay=False),
              help="default <output-dir>/checkpoints; keep it to continue where a run stopped")
@click.option("--window", default="1 minute", show_default=True, callback=_check_duration)
@click.option("--watermark", default="2 minutes", show_default=True, callback=_check_duration,
              help="how late an event may be")
@click.option("--starting-offsets", default="earliest", show_default=True,
              help="for a new checkpoint: earliest, latest or JSON")
@click.option("--max-offsets-per-trigger", type=click.IntRange(1), default=None)
@click.option("--trigger", type=click.Choice(["available-now", "continuous"]),
              default="available-now", show_default=True)
@click.option("--interval", default="5 seconds", show_default=True, callback=_check_duration,
              help="micro-batch interval with --trigger continuous")
@click.option("--timeout", type=float, default=None,
              help="with --trigger continuous: stop after this many seconds")
@click.option("--sink", "sinks", multiple=True, type=click.Choice(["kafkalite", "parquet"]),
              help="default: both")
@click.option("--generate", "generate", type=click.IntRange(0), default=0,
              help="first produce this many payment events")
@click.option("--show/--no-show", default=True, show_default=True,
              help="print the totals table at the end")
@click.option("--master", default="local[2]", show_default=True,
              help="local[N], or spark://host:port for a standalone cluster (its workers need "
                   "the output and checkpoint directories at the same paths)")
@click.option("--driver-memory", default="1g", show_default=True)
@connector_option
def run(bootstrap_server, zookeeper, input_topic, output_topic, output_dir, checkpoint_dir,
        window, watermark, starting_offsets, max_offsets_per_trigger, trigger, interval, timeout,
        sinks, generate, show, master, driver_memory, connector):
    """Run the pipeline, printing rows and batches processed."""
    payments = _payments()
    _check_connector(connector)
    from rich.console import Console

    from spark_integration.session import spark_session

    console = Console()
    servers = _bootstrap(bootstrap_server, zookeeper)
    config = payments.PipelineConfig(
        servers, input_topic=input_topic, output_topic=output_topic, output_dir=output_dir,
        checkpoint_dir=checkpoint_dir, window=window, watermark=watermark,
        starting_offsets=starting_offsets, max_offsets_per_trigger=max_offsets_per_trigger,
        available_now=(trigger == "available-now"), interval=interval,
        sinks=tuple(sinks) or ("kafkalite", "parquet"), connector=connector)
    topics = [input_topic] + ([output_topic] if "kafkalite" in config.sinks else [])
    payments.ensure_topics(servers, topics)
    if generate:
        n = payments.produce_payments(servers, input_topic,
                                      payments.generate_payments(generate))
        click.echo(f"produced {n} payment events to '{input_topic}'")
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()      # e.g. when called from a notebook or test
    if existing is not None:
        spark = existing
    else:
        with console.status("starting Spark..."):
            # on a cluster the driver's UI is on: its REST API says where the tasks ran
            spark = spark_session("kafkalite-payments", master, driver_memory=driver_memory,
                                  log_level="ERROR", kafka_connector=(connector == "kafka"),
                                  ui=master.startswith("spark://"))
    try:
        click.echo(f"pipeline: '{input_topic}' -> windowed totals per payer ({window} windows, "
                   f"{watermark} watermark) -> {', '.join(config.sinks)}; "
                   f"connector {connector}")
        try:
            result = payments.run_pipeline(spark, config, echo=click.echo, timeout_s=timeout)
        except KeyboardInterrupt:
            console.print("stopped")
            return
        click.echo(f"processed {result.input_rows} input rows in {result.batches} "
                   f"micro-batches")
        if master.startswith("spark://"):
            from spark_integration.standalone import executor_tasks

            tasks = executor_tasks(spark)
            click.echo("tasks completed per executor: " + ", ".join(
                f"{i} on {host} {n}" for i, (host, n) in sorted(tasks.items())))
        if show and "parquet" in config.sinks:
            totals = payments.read_parquet_totals(spark, config.parquet_path)
            console.print(payments.format_table(totals, window))
            click.echo(f"{len(totals)} window totals in {config.parquet_path}")
    finally:
        if existing is None:
            spark.stop()


@command.command("generate")
@bootstrap_option
@zookeeper_flag
@input_topic_option
@click.option("--count", type=click.IntRange(1), default=1000, show_default=True)
@click.option("--span", "span_s", type=float, default=360, show_default=True,
              help="seconds of event time the payments cover, ending now")
@click.option("--seed", type=int, default=None, help="default: random")
@click.option("--partitions", type=click.IntRange(1), default=3, show_default=True,
              help="when the topic is created")
def generate(bootstrap_server, zookeeper, input_topic, count, span_s, seed, partitions):
    """Produce payment events ("Pankaj paid $100 to Ashish")."""
    import random

    from spark_integration.pipelines import payments

    servers = _bootstrap(bootstrap_server, zookeeper)
    payments.ensure_topics(servers, [input_topic], partitions=partitions)
    events = payments.generate_payments(count, span_s=span_s,
                                        seed=random.randrange(1 << 30) if seed is None else seed)
    n = payments.produce_payments(servers, input_topic, events)
    for sample in events[:3]:
        click.echo(f"  e.g. {sample.describe()}")
    click.echo(f"produced {n} payment events to '{input_topic}'")


@command.command("demo")
@bootstrap_option
@zookeeper_flag
@click.option("--events", type=click.IntRange(10), default=1200, show_default=True)
@click.option("--output-dir", default=None, type=click.Path(file_okay=False),
              help="default: a new temporary directory")
@click.option("--master", default="local[2]", show_default=True)
@connector_option
def demo(bootstrap_server, zookeeper, events, output_dir, master, connector):
    """Generate payments, run the pipeline twice, print and check the totals."""
    payments = _payments()
    _check_connector(connector)
    result = payments.run_demo(_bootstrap(bootstrap_server, zookeeper), events=events,
                               output_dir=output_dir, master=master, connector=connector)
    if not result.matches:
        raise click.ClickException("the pipeline's totals differ from the reference computation")
