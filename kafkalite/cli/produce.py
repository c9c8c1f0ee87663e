"""``kafkalite produce``: Kafka's console producer, one record per line of stdin.

    kafkalite produce --topic t [--property parse.key=true --property key.separator=:]
                      [--acks all] [--compression-type lz4] [--producer-property linger.ms=50]

Reader properties (``--property``), as kafka-console-producer's LineMessageReader:

* ``parse.key`` (false) and ``key.separator`` (tab): each line is ``KEY<sep>VALUE``;
* ``parse.headers`` (false), ``headers.delimiter`` (tab), ``headers.separator`` (``,``) and
  ``headers.key.separator`` (``:``): each line starts with ``h1:v1,h2:v2<delimiter>``;
* ``null.marker``: a key or value equal to it is sent as null;
* ``ignore.error`` (false): skip a line without the separator instead of stopping.

Records whose send fails are reported on stderr; the exit status is 1 if any failed.

``--transactional-id ID`` (a kafkalite addition: Kafka 2.8's console producer cannot use
transactions) sends the whole input as one transaction of a transactional producer -- acks=all,
``init_transactions()``, ``begin_transaction()``, the records, and ``commit_transaction()`` at
the end of the input, or ``abort_transaction()`` with ``--abort`` (to see what read_committed
consumers skip). A record that fails aborts the transaction; nothing of it becomes visible to
read_committed consumers.
"""

from __future__ import annotations

import sys

import click

from kafkalite.cli.options import (
    CliError,
    bootstrap_option,
    client_kwargs,
    connection_hint,
    explicit,
    parse_bool,
    parse_properties,
    property_option,
    quiet_client_logs,
    unescape,
)
from kafkalite.errors import KafkaError, NoBrokersAvailableError

READER_PROPERTIES = ("parse.key", "key.separator", "parse.headers", "headers.delimiter",
                     "headers.separator", "headers.key.separator", "null.marker",
                     "ignore.error")
MAX_REPORTED_ERRORS = 5


class LineReader:
    """Splits one input line into (key, value, headers) by the reader properties."""

    def __init__(self, props: dict[str, str]):
        unknown = sorted(set(props) - set(READER_PROPERTIES))
        if unknown:
            raise CliError(f"unknown --property {unknown[0]!r}; known: "
                           f"{', '.join(READER_PROPERTIES)}", exit_code=2)
        self.parse_key = parse_bool(props.get("parse.key", "false"), "parse.key")
        self.key_separator = unescape(props.get("key.separator", "\t")).encode()
        self.parse_headers = parse_bool(props.get("parse.headers", "false"), "parse.headers")
        self.headers_delimiter = unescape(props.get("headers.delimiter", "\t")).encode()
        self.headers_separator = unescape(props.get("headers.separator", ",")).encode()
        self.headers_key_separator = unescape(props.get("headers.key.separator", ":")).encode()
        marker = props.get("null.marker")
        self.null_marker = unescape(marker).encode() if marker is not None else None
        self.ignore_error = parse_bool(props.get("ignore.error", "false"), "ignore.error")
        for name, sep in (("key.separator", self.key_separator),
                          ("headers.delimiter", self.headers_delimiter)):
            if not sep:
                raise CliError(f"--property {name} must not be empty", exit_code=2)

    def _null(self, data: bytes) -> bytes | None:
        return None if self.null_marker is not None and data == self.null_marker else data

    def parse(self, line: bytes, number: int):
        """(key, value, headers), or None to skip the line; CliError for a bad line."""
        headers = None
        if self.parse_headers:
            head, sep, line = line.partition(self.headers_delimiter)
            if not sep:
                return self._bad(number, "headers.delimiter", self.headers_delimiter, head)
            headers = []
            if head and head != self.null_marker:
                for item in head.split(self.headers_separator):
                    name, sep, value = item.partition(self.headers_key_separator)
                    if not sep:
                        return self._bad(number, "headers.key.separator",
                                         self.headers_key_separator, item)
                    headers.append((name.decode("utf-8", "replace"), self._null(value)))
        key = None
        if self.parse_key:
            key, sep, value = line.partition(self.key_separator)
            if not sep:
                return self._bad(number, "key.separator", self.key_separator, line)
            key = self._null(key)
        else:
            value = line
        return key, self._null(value), headers

    def _bad(self, number: int, what: str, sep: bytes, line: bytes):
        if self.ignore_error:
            return
        raise CliError(f"line {number} has no {what} {sep.decode()!r}: "
                       f"{line.decode('utf-8', 'replace')[:80]!r}; each line must look like "
                       f"KEY{sep.decode()}VALUE (or drop --property parse.key=true, or add "
                       f"--property ignore.error=true)")


@click.command("produce", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--topic", required=True, help="topic to write to")
@property_option
@click.option("--acks", "--request-required-acks", "acks", default="1", show_default=True,
              type=click.Choice(["0", "1", "all", "-1"]), help="acknowledgements to wait for")
@click.option("--compression-type", "--compression-codec", "compression_type",
              type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]), default="none",
              show_default=True)
@click.option("--linger-ms", type=int, default=None, help="batching delay (producer linger.ms)")
@click.option("--sync", is_flag=True, help="wait for each record's acknowledgement")
@click.option("--transactional-id", default=None,
              help="send the whole input as one transaction with this transactional id, "
                   "committed at the end of the input")
@click.option("--abort", is_flag=True,
              help="with --transactional-id: abort the transaction at the end instead")
@click.option("--producer-property", "producer_properties", multiple=True,
              metavar="KEY=VALUE", help="producer setting in Kafka's name (repeatable), "
                                        "e.g. batch.size=16384")
@bootstrap_option
@click.pass_context
def command(ctx, topic, properties, acks, compression_type, linger_ms, sync, transactional_id,
            abort, producer_properties, bootstrap_server):
    """Send each line of stdin as a record (Kafka's kafka-console-producer)."""
    from kafkalite.client.producer import Producer
    from kafkalite.topics import validate_topic_name

    validate_topic_name(topic)
    reader = LineReader(parse_properties(properties))
    settings = client_kwargs(Producer, parse_properties(producer_properties,
                                                        "--producer-property"),
                             "--producer-property")
    if abort and transactional_id is None:
        raise CliError("--abort needs --transactional-id (which transaction to abort?)",
                       exit_code=2)
    if transactional_id is not None:
        if explicit(ctx, "acks") and acks not in ("all", "-1"):
            raise CliError(f"--transactional-id needs --acks all, got --acks {acks}",
                           exit_code=2)
        acks = "all"
        settings.setdefault("transactional_id", transactional_id)
    settings.setdefault("acks", acks)
    settings.setdefault("compression_type", None if compression_type == "none"
                        else compression_type)
    if linger_ms is not None:
        settings.setdefault("linger_ms", linger_ms)
    settings.setdefault("max_block_ms", 15000)   # a missing topic: fail in seconds, not a minute
    quiet_client_logs()
    failures = {"count": 0}

    def on_error(exc):
        failures["count"] += 1
        if failures["count"] <= MAX_REPORTED_ERRORS:
            click.echo(f"error: sending a record to topic {topic} failed: {exc}", err=True)

    from kafkalite.cli.client_security import environment_security

    settings = {**environment_security(), **settings}     # KAFKALITE_COMMAND_CONFIG, if set
    try:
        producer = Producer(bootstrap_server, **settings)
    except KafkaError as exc:
        raise CliError(f"bad producer setting: {exc}", exit_code=2) from None
    interactive = sys.stdin.isatty()
    sent = 0
    transactional = settings.get("transactional_id") is not None
    try:
        if transactional:
            producer.init_transactions()
            producer.begin_transaction()
        stdin = sys.stdin.buffer
        number = 0
        while True:
            if interactive:
                click.echo(">", nl=False, err=True)
            line = stdin.readline()
            if not line:
                break
            number += 1
            if line.endswith(b"\n"):
                line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
            parsed = reader.parse(line, number)
            if parsed is None:
                continue
            key, value, headers = parsed
            future = producer.send(topic, value=value, key=key, headers=headers)
            sent += 1
            if sync:
                try:
                    future.get()
                except KafkaError as exc:
                    on_error(exc)
            else:
                future.add_errback(on_error)
        producer.flush()
        if transactional:
            _end_transaction(producer, abort or failures["count"] > 0)
    except NoBrokersAvailableError as exc:
        raise CliError(connection_hint(exc, bootstrap_server)) from None
    except KeyboardInterrupt:
        pass
    finally:
        producer.close()
    if failures["count"]:
        raise CliError(f"{failures['count']} of {sent} record(s) could not be sent to topic "
                       f"{topic}")


def _end_transaction(producer, abort: bool) -> None:
    """Commit (or abort) the input's transaction; when the commit fails (a record that could
    not be written, say) the transaction is aborted, so the input is all or nothing."""
    if abort:
        producer.abort_transaction()
        click.echo("Aborted the transaction.", err=True)
        return
    try:
        producer.commit_transaction()
    except KafkaError as exc:
        try:
            producer.abort_transaction()
        except KafkaError as abort_exc:     # fenced, say: the coordinator aborts it itself
            raise CliError(f"the transaction could not commit ({exc}) nor abort "
                           f"({abort_exc})") from None
        raise CliError(f"the transaction could not commit and was aborted: {exc}") from None
    click.echo("Committed the transaction.", err=True)
