"""kafkalite.testing.zk_layout on small inputs: zookeeper-shell output parsed, normalised and
compared."""

from __future__ import annotations

import pytest

from kafkalite.testing import zk_layout as z
from kafkalite.testing.zk_layout import Difference, Znode


def _stat(ephemeral_owner: str = "0x0", children: int = 0) -> str:
    values = {"cZxid": "0x2", "ctime": "Thu Nov 26 07:15:11 UTC 2026", "mZxid": "0x2",
              "mtime": "Thu Nov 26 07:15:11 UTC 2026", "pZxid": "0x2", "cversion": "0",
              "dataVersion": "0", "aclVersion": "0", "ephemeralOwner": ephemeral_owner,
              "dataLength": "5", "numChildren": str(children)}
    return "".join(f"{name} = {value}\n" for name, value in values.items())


GREETING = "Connecting to 127.0.0.1:2181/kl\nWelcome to ZooKeeper!\nJLine support is disabled\n"
EVENT = "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n"


def test_ls_recursive_lists_paths_only():
    out = GREETING + EVENT + "/\n/admin\n/brokers\n/admin/delete_topics\n"
    assert z.parse_ls_recursive(out) == ["/", "/admin", "/brokers", "/admin/delete_topics"]


def test_get_stat_blocks_read_in_order_wherever_the_event_is_printed():
    paths = ["/", "/controller_epoch", "/brokers/ids/1", "/brokers/seqid"]
    out = (GREETING + "null\n" + _stat(children=3) + EVENT + "1\n" + _stat()
           + '{"version":5,"port":9092}\n' + _stat("0x10000061d83000c") + EVENT + "\n"
           + _stat())
    nodes = z.parse_get_stat(out, paths)
    assert nodes == {
        "/": Znode("/", None, False),
        "/controller_epoch": Znode("/controller_epoch", "1", False),
        "/brokers/ids/1": Znode("/brokers/ids/1", '{"version":5,"port":9092}', True),
        "/brokers/seqid": Znode("/brokers/seqid", "", False),
    }
    assert z.get_script(paths[:2]) == "get -s /\nget -s /controller_epoch\n"


def test_a_znode_gone_between_listing_and_reading_is_an_error():
    out = GREETING + EVENT + "null\n" + _stat()
    with pytest.raises(z.LayoutDumpError, match="/gone"):
        z.parse_get_stat(out, ["/", "/gone"])
    with pytest.raises(z.LayoutDumpError, match="more than"):
        z.parse_get_stat(out + "1\n" + _stat(), ["/"])


@pytest.mark.parametrize("path, normal", [
    ("/config/changes/config_change_0000000012", "/config/changes/config_change_<seq>"),
    ("/brokers/ids/3", "/brokers/ids/<id>"),
    ("/brokers/topics/t/partitions/17/state", "/brokers/topics/t/partitions/<p>/state"),
    ("/brokers/topics/t/partitions/17", "/brokers/topics/t/partitions/<p>"),
    ("/brokers/topics/t17", "/brokers/topics/t17"),
])
def test_paths_are_normalised(path, normal):
    assert z.normalise_path(path) == normal


def test_json_shapes_keep_fields_types_and_normalised_values():
    kind, fields = z.data_shape(
        '{"version":5,"port":9092,"jmx_port":-1,"timestamp":"1795677310777","rack":null,'
        '"endpoints":["PLAINTEXT://127.0.0.1:35617"],"topic_id":"5X55sWnpTNC99N7uWLvyYw",'
        '"partitions":{"0":[1,2]},"ok":true,'
        '"scram":"salt=Zmk0,stored_key=3zMe/Q=,server_key=aF7+,iterations=4096"}')
    assert kind == "json"
    assert fields == {
        ("version", "int", "5"), ("port", "int", ""), ("jmx_port", "int", "-1"),
        ("timestamp", "str", "<timestamp>"), ("rack", "null", "null"),
        ("endpoints", "list", ""), ("endpoints[]", "str", "PLAINTEXT://127.0.0.1:<port>"),
        ("topic_id", "str", "<id>"), ("partitions", "object", ""),
        ("partitions.<n>", "list", ""), ("partitions.<n>[]", "int", ""), ("ok", "bool", "true"),
        ("scram", "str", "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=4096"),
    }
    assert z.data_shape(None) == ("null", frozenset())
    assert z.data_shape("") == ("empty", frozenset())
    assert z.data_shape("7") == ("text", frozenset())


def _layout(**nodes: tuple[str | None, bool]) -> z.Layout:
    return z.layout({p: Znode(p, data, eph) for p, (data, eph) in nodes.items()})


def test_compare_names_each_kind_of_difference():
    kafka = z.layout({p: Znode(p, d, e) for p, d, e in [
        ("/feature", '{"version":1}', False),
        ("/admin", None, False),
        ("/controller", '{"version":1,"brokerid":1}', True),
        ("/t", '{"version":3,"partitions":{"0":[1]},"a":"x"}', False),
        ("/brokers/topics/t/partitions/0", None, False),
        ("/brokers/topics/t/partitions/1", None, False),
    ]})
    kafkalite = z.layout({p: Znode(p, d, e) for p, d, e in [
        ("/mine", "", False),
        ("/admin", "", False),
        ("/controller", '{"version":1,"brokerid":"1"}', False),
        ("/t", '{"version":2,"partitions":{"0":[1]},"b":1}', False),
        ("/brokers/topics/t/partitions/0", None, False),
    ]})
    keys = {d.key for d in z.compare(kafkalite, kafka)}
    assert keys == {
        "missing /feature", "extra /mine", "data /admin kafkalite=empty kafka=null",
        "kind /controller", "type /controller brokerid", "value /t version",
        "field-missing /t a", "field-extra /t b", "count /brokers/topics/t/partitions/<p>",
    }
    assert z.compare(kafka, kafka) == []


def test_check_finds_the_unexpected_and_the_stale():
    diffs = [Difference("missing /feature", ""), Difference("data /a kafkalite=empty kafka=null",
                                                            ""),
             Difference("data /b kafkalite=empty kafka=null", ""),
             Difference("value /x version", "kafkalite ['2'], Kafka ['3']")]
    expected = {"missing /feature": "r1", "data * kafkalite=empty kafka=null": "r2",
                "missing /gone": "r3", "field-extra /y[] *": "r4"}
    unexpected, stale = z.check(diffs, expected)
    assert unexpected == [diffs[3]]
    assert stale == ["field-extra /y[] *", "missing /gone"]
    assert z.key_matches("field-extra /y[] *", "field-extra /y[] z")
    assert not z.key_matches("data * kafkalite=empty kafka=null",
                             "data /a kafkalite=text kafka=json")


def test_the_document_lists_reasons_and_unexpected_differences():
    kafka = _layout(**{"/feature": ('{"version":1}', False), "/a": (None, False),
                       "/b": (None, False)})
    kafkalite = _layout(**{"/a": ("", False), "/b": ("", False), "/x": ("1", False)})
    diffs = z.compare(kafkalite, kafka)
    expected = {"missing /feature": "no feature versioning",
                "data * kafkalite=empty kafka=null": "kazoo writes b''", "missing /old": "gone"}
    text = z.render_markdown(diffs, expected, kafkalite, kafka, ["step one"], "a unit test")
    assert "Outcome: 1 unexpected, 1 stale." in text
    assert "| `missing /feature` | only Kafka has it | no feature versioning |" in text
    assert "2 znodes (`/a`, `/b`)" in text
    assert "| `extra /x` | only kafkalite has it | **not expected** |" in text
    assert "- `missing /old`: gone" in text
    assert "1. step one" in text and "Generated by a unit test" in text
