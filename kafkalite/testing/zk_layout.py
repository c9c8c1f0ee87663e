"""ZooKeeper layouts as Kafka's own ``zookeeper-shell`` prints them: parse, normalise, compare.

Pure functions (no ZooKeeper, no processes); ``tests/oracle/test_zookeeper_layout.py`` feeds them
the output of ``zookeeper-shell`` run against a kafkalite cluster and an Apache Kafka 2.8.2 cluster.

- :func:`parse_ls_recursive` reads ``ls -R /`` (one path a line);
  :func:`get_script` / :func:`parse_get_stat` write and read ``get -s <path>`` for every path (the
  data line(s), then the 11 stat lines ending with ``numChildren``).
- :func:`layout` normalises what was read: generated names in paths (sequence suffixes, broker ids)
  become placeholders; each znode's data becomes a *shape*: its kind (``null``, ``empty``, ``text``,
  ``json``) and, for JSON, the set of ``(field, type, value)`` with values normalised (ports,
  timestamps, ids, salts; integers other than ``version`` keep their type only). Znodes that share
  a normalised path merge their shapes.
- :func:`compare` lists the :class:`Difference` s between two layouts, each under a stable key
  (``"missing /feature"``, ``"field-extra /brokers/ids/<id> rack"``...), which a table of expected
  differences (key -> reason) names; :func:`check` tells the unexpected and the stale ones apart;
  :func:`render_markdown` writes the outcome as a document.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

STAT_FIELDS = ("cZxid", "ctime", "mZxid", "mtime", "pZxid", "cversion", "dataVersion",
               "aclVersion", "ephemeralOwner", "dataLength", "numChildren")
_SHELL_NOISE = ("Connecting to ", "Welcome to ZooKeeper!", "JLine support is disabled",
                "WATCHER::", "WatchedEvent state:")


class LayoutDumpError(ValueError):
    """zookeeper-shell's output is not what the commands promised (e.g. a znode went away)."""


# ------------------------------------------------------------------------------- parsing

def parse_ls_recursive(stdout: str) -> list[str]:
    """The paths ``ls -R /`` printed, in order."""
    return [line.strip() for line in stdout.splitlines() if line.startswith("/")]


def get_script(paths: Iterable[str]) -> str:
    """zookeeper-shell input reading every path's data and stat."""
    return "".join(f"get -s {path}\n" for path in paths)


@dataclass(frozen=True)
class Znode:
    path: str
    data: str | None          # None: the znode holds no data at all (zkCli prints ``null``)
    ephemeral: bool


def _strip_noise(lines: list[str]) -> list[str]:
    """Drop zookeeper-shell's greeting and its connection event. The event (``WATCHER::``,
    ``WatchedEvent ...``) comes from another thread, each line printed as one ``"\\n" + msg``
    (so with a blank line before it), anywhere in the output."""
    out: list[str] = []
    for line in lines:
        if line.startswith(_SHELL_NOISE):
            if line.startswith(("WATCHER::", "WatchedEvent state:")) and out and out[-1] == "":
                out.pop()
            continue
        out.append(line)
    return out


def parse_get_stat(stdout: str, paths: list[str]) -> dict[str, Znode]:
    """Read the output of :func:`get_script` for ``paths`` (same order)."""
    lines = _strip_noise(stdout.splitlines())
    nodes: dict[str, Znode] = {}
    index = 0
    for path in paths:
        data_lines: list[str] = []
        while index < len(lines) and not lines[index].startswith("cZxid = "):
            data_lines.append(lines[index])
            index += 1
        stat_lines = lines[index:index + len(STAT_FIELDS)]
        names = [line.split(" = ", 1)[0] for line in stat_lines]
        if tuple(names) != STAT_FIELDS:
            raise LayoutDumpError(f"no stat for {path} in zookeeper-shell's output "
                                  f"(it may have gone away): {stat_lines!r}")
        index += len(STAT_FIELDS)
        stat = dict(line.split(" = ", 1) for line in stat_lines)
        text = "\n".join(data_lines)
        data = None if text == "null" else text
        nodes[path] = Znode(path, data, int(stat["ephemeralOwner"], 16) != 0)
    rest = [line for line in lines[index:] if line.strip()]
    if rest:
        raise LayoutDumpError(f"zookeeper-shell printed more than the {len(paths)} znodes: "
                              f"{rest[:5]!r}")
    return nodes


# ------------------------------------------------------------------------------- normalising

_PATH_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"_\d{10}$"), "_<seq>"),                 # sequential znodes
    (re.compile(r"^/brokers/ids/\d+$"), "/brokers/ids/<id>"),
    (re.compile(r"/partitions/\d+(?=/|$)"), "/partitions/<p>"),
)
# normalised paths whose znode count is compared too (partitions of a topic, live brokers)
_COUNTED = re.compile(r"^/brokers/.*<(p|id)>")

_STRING_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(salt|stored_key|server_key)=[^,]+"), r"\1=<b64>"),
    (re.compile(r"^\d{12,14}$"), "<timestamp>"),
    (re.compile(r"^[A-Za-z0-9_-]{22}$"), "<id>"),        # topic ids, cluster ids (base64url uuid)
    (re.compile(r"^([A-Za-z_]+://[^:/]*):\d+$"), r"\1:<port>"),
)
# integers whose value is part of the layout; every other integer is compared by type only
_KEPT_INT_KEYS = frozenset({"version", "jmx_port"})


def normalise_path(path: str) -> str:
    for pattern, replacement in _PATH_RULES:
        path = pattern.sub(replacement, path)
    return path


def normalise_string(value: str) -> str:
    for pattern, replacement in _STRING_RULES:
        value = pattern.sub(replacement, value)
    return value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list",
            dict: "object"}[type(value)]


def _flatten(value: Any, where: str, key: str, out: set[tuple[str, str, str]]) -> None:
    kind = _type_name(value)
    if isinstance(value, dict):
        out.add((where, kind, ""))
        for name, item in value.items():
            label = "<n>" if name.isdigit() else name
            _flatten(item, f"{where}.{label}" if where else label, name, out)
    elif isinstance(value, list):
        out.add((where, kind, ""))
        for item in value:
            _flatten(item, f"{where}[]", key, out)
    elif isinstance(value, str):
        out.add((where, kind, normalise_string(value)))
    elif isinstance(value, (bool, type(None))):
        out.add((where, kind, json.dumps(value)))
    else:
        out.add((where, kind, str(value) if key in _KEPT_INT_KEYS else ""))


def data_shape(data: str | None) -> tuple[str, frozenset[tuple[str, str, str]]]:
    """``(kind, fields)``: kind ``null``/``empty``/``text``/``json``; fields for JSON objects."""
    if data is None:
        return "null", frozenset()
    if data == "":
        return "empty", frozenset()
    try:
        parsed = json.loads(data)
    except ValueError:
        return "text", frozenset()
    if not isinstance(parsed, dict):
        return "text", frozenset()
    out: set[tuple[str, str, str]] = set()
    _flatten(parsed, "", "", out)
    out.discard(("", "object", ""))
    return "json", frozenset(out)


@dataclass
class NodeShape:
    """What the znodes sharing one normalised path look like."""
    count: int = 0
    ephemeral: set[bool] = field(default_factory=set)
    kinds: set[str] = field(default_factory=set)
    fields: set[tuple[str, str, str]] = field(default_factory=set)

    def field_names(self) -> set[str]:
        return {name for name, _kind, _value in self.fields}

    def types_of(self, name: str) -> set[str]:
        return {kind for n, kind, _value in self.fields if n == name}

    def values_of(self, name: str) -> set[str]:
        return {value for n, _kind, value in self.fields if n == name and value}


Layout = dict[str, NodeShape]


def layout(nodes: Mapping[str, Znode]) -> Layout:
    out: Layout = {}
    for znode in nodes.values():
        shape = out.setdefault(normalise_path(znode.path), NodeShape())
        kind, fields = data_shape(znode.data)
        shape.count += 1
        shape.ephemeral.add(znode.ephemeral)
        shape.kinds.add(kind)
        shape.fields |= fields
    return out


# ------------------------------------------------------------------------------- comparing

@dataclass(frozen=True, order=True)
class Difference:
    key: str                # stable: what the table of expected differences names
    detail: str             # what each side has


def _kind_label(ephemeral: set[bool]) -> str:
    return "/".join(sorted("ephemeral" if e else "persistent" for e in ephemeral))


def compare(kafkalite: Layout, kafka: Layout) -> list[Difference]:
    """Differences of kafkalite's layout from Kafka's (the reference)."""
    diffs: list[Difference] = []
    for path in sorted(kafka.keys() - kafkalite.keys()):
        diffs.append(Difference(f"missing {path}", "only Kafka has it"))
    for path in sorted(kafkalite.keys() - kafka.keys()):
        diffs.append(Difference(f"extra {path}", "only kafkalite has it"))
    for path in sorted(kafka.keys() & kafkalite.keys()):
        ours, theirs = kafkalite[path], kafka[path]
        if ours.ephemeral != theirs.ephemeral:
            diffs.append(Difference(f"kind {path}", f"kafkalite {_kind_label(ours.ephemeral)}, "
                                                    f"Kafka {_kind_label(theirs.ephemeral)}"))
        if _COUNTED.search(path) and ours.count != theirs.count:
            diffs.append(Difference(f"count {path}", f"kafkalite {ours.count}, "
                                                     f"Kafka {theirs.count}"))
        if ours.kinds != theirs.kinds:
            mine, kafkas = "/".join(sorted(ours.kinds)), "/".join(sorted(theirs.kinds))
            diffs.append(Difference(f"data {path} kafkalite={mine} kafka={kafkas}",
                                    f"kafkalite {mine}, Kafka {kafkas}"))
        diffs.extend(_compare_fields(path, ours, theirs))
    return diffs


def _compare_fields(path: str, ours: NodeShape, theirs: NodeShape) -> list[Difference]:
    diffs = []
    names_ours, names_theirs = ours.field_names(), theirs.field_names()
    for name in sorted(names_theirs - names_ours):
        diffs.append(Difference(f"field-missing {path} {name}",
                                f"Kafka: {_describe(theirs, name)}"))
    for name in sorted(names_ours - names_theirs):
        diffs.append(Difference(f"field-extra {path} {name}",
                                f"kafkalite: {_describe(ours, name)}"))
    for name in sorted(names_ours & names_theirs):
        if ours.types_of(name) != theirs.types_of(name):
            diffs.append(Difference(f"type {path} {name}",
                                    f"kafkalite {sorted(ours.types_of(name))}, "
                                    f"Kafka {sorted(theirs.types_of(name))}"))
        elif ours.values_of(name) != theirs.values_of(name):
            diffs.append(Difference(f"value {path} {name}",
                                    f"kafkalite {sorted(ours.values_of(name))}, "
                                    f"Kafka {sorted(theirs.values_of(name))}"))
    return diffs


def _describe(shape: NodeShape, name: str) -> str:
    values = sorted(shape.values_of(name))
    shown = f" = {', '.join(values[:3])}{' ...' if len(values) > 3 else ''}" if values else ""
    return f"{'/'.join(sorted(shape.types_of(name)))}{shown}"


def key_matches(pattern: str, key: str) -> bool:
    """A table key names one difference exactly; ``*`` in it stands for any text."""
    if "*" not in pattern:
        return pattern == key
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, key) is not None


def explain(diff: Difference, expected: Mapping[str, str]) -> str | None:
    """The table key listing ``diff`` (an exact key before a pattern), or None."""
    if diff.key in expected:
        return diff.key
    return next((pattern for pattern in expected if key_matches(pattern, diff.key)), None)


def check(diffs: Iterable[Difference], expected: Mapping[str, str]
          ) -> tuple[list[Difference], list[str]]:
    """``(unexpected, stale)``: differences the table does not list, listed keys that match no
    difference."""
    diffs = list(diffs)
    used = {explain(d, expected) for d in diffs}
    return ([d for d in diffs if explain(d, expected) is None],
            sorted(key for key in expected if key not in used))


# ------------------------------------------------------------------------------- the document

def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _summary(key: str, found: list[Difference]) -> str:
    if len(found) == 1 and found[0].key == key:
        return found[0].detail
    paths = ", ".join(f"`{d.key.split(' ')[1]}`" for d in found[:4])
    more = f" and {len(found) - 4} more" if len(found) > 4 else ""
    return f"{found[0].detail}: {len(found)} znodes ({paths}{more})"


def render_markdown(diffs: list[Difference], expected: Mapping[str, str], kafkalite: Layout,
                    kafka: Layout, scenario: list[str], generated_by: str) -> str:
    unexpected, stale = check(diffs, expected)
    same = sorted(kafka.keys() & kafkalite.keys())
    lines = [
        "# ZooKeeper layout: kafkalite beside Apache Kafka 2.8.2",
        "",
        f"Generated by {generated_by}; do not edit by hand.",
        "",
        "The same scenario ran against 3 kafkalite brokers and 3 Apache Kafka 2.8.2 brokers, each "
        "cluster on its own chroot of one ZooKeeper; then each side's tree was read with Kafka's "
        "own `zookeeper-shell` (`ls -R /`, `get -s` on every path) and compared after "
        "normalising generated names in paths (sequence suffixes -> `<seq>`, broker ids -> "
        "`<id>`, partition numbers -> `<p>`; the number of znodes behind `<id>` and `<p>` is "
        "compared) and values in JSON payloads (ports, timestamps, base64 ids, SCRAM salts and "
        "keys; integers other than `version` and `jmx_port` by type only). Znodes that live for "
        "moments (`/admin/reassign_partitions`, `/admin/delete_topics/<topic>`, "
        "`/isr_change_notification/isr_change_<seq>`) are waited away before the dump, so "
        "their payloads are not compared.",
        "",
        "Scenario:",
        "",
        *[f"{n}. {step}" for n, step in enumerate(scenario, 1)],
        "",
        f"Normalised paths: {len(kafka)} in Kafka's tree, {len(kafkalite)} in kafkalite's, "
        f"{len(same)} in both.",
        "",
        "## Differences",
        "",
        "Each key is what the test matches (`*` stands for any text): `missing` (only Kafka has "
        "the path), `extra` (only kafkalite has it), `count` (how many znodes), `kind` "
        "(ephemeral or persistent), `data` (null, empty, text or JSON), `field-missing`, "
        "`field-extra`, `type`, `value` (a JSON field). The reasons live in "
        "`kafkalite/testing/zk_layout_expected.py`.",
        "",
        "| difference | what each side has | reason |",
        "|---|---|---|",
    ]
    grouped: dict[str, list[Difference]] = {}
    for diff in diffs:
        grouped.setdefault(explain(diff, expected) or "", []).append(diff)
    for key, reason in expected.items():
        found = grouped.get(key, [])
        if found:
            lines.append(f"| `{_cell(key)}` | {_cell(_summary(key, found))} | {_cell(reason)} |")
    for diff in grouped.get("", []):
        lines.append(f"| `{_cell(diff.key)}` | {_cell(diff.detail)} | **not expected** |")
    if not diffs:
        lines.append("| (none) | | |")
    if stale:
        lines += ["", "Listed as expected but not found this time (the test fails on these):", ""]
        lines += [f"- `{key}`: {expected[key]}" for key in stale]
    lines += ["", "## Znodes found in both layouts", "",
              "| path | kind | data | JSON fields |", "|---|---|---|---|"]
    for path in same:
        shape = kafka[path]
        fields = ", ".join(sorted(f"`{name}`" for name in shape.field_names() if name))
        lines.append(f"| `{_cell(path)}` | {_kind_label(shape.ephemeral)} | "
                     f"{'/'.join(sorted(shape.kinds))} | {_cell(fields)} |")
    lines.append("")
    outcome = ("every difference is listed with its reason" if not unexpected and not stale
               else f"{len(unexpected)} unexpected, {len(stale)} stale")
    lines.insert(4, f"Outcome: {outcome}.\n")
    return "\n".join(lines)
