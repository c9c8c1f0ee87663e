"""One TopicPartition for the whole package (kafkalite.topic_partition)."""

import ast
import pathlib

import kafkalite
from kafkalite import TopicPartition
from kafkalite.client.structs import TopicPartition as ClientTopicPartition
from kafkalite.protocol import messages as m
from kafkalite.topic_partition import TopicPartition as TheOne


def test_every_layer_hands_out_the_same_type():
    assert TopicPartition is TheOne and ClientTopicPartition is TheOne
    assert m.TopicPartition is TheOne


def test_it_is_a_plain_tuple_for_maps_keyed_either_way():
    tp = TheOne("orders", 3)
    assert tp == ("orders", 3) and hash(tp) == hash(("orders", 3))
    assert {("orders", 3): 1}[tp] == 1 and str(tp) == "orders-3"


def test_no_module_defines_its_own():
    """Neither a class nor an alias named TopicPartition anywhere else in the package."""
    root = pathlib.Path(kafkalite.__file__).parent
    others = []
    for path in root.rglob("*.py"):
        if path.name == "topic_partition.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name == "TopicPartition":
                others.append(f"{path}:{node.lineno} class")
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "TopicPartition" for t in node.targets):
                others.append(f"{path}:{node.lineno} alias")
    assert not others, others
