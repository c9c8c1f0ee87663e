"""The suite's test modules are imported by basename (rootdir imports, no __init__.py), so two
files of one name in different folders stop the whole run at collection ("import file
mismatch"). A test of the tree itself catches a new clash before a full run does."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_basename_is_unique():
    names = Counter(p.name for p in TESTS.rglob("*.py")
                    if p.name != "conftest.py" and ".venv" not in p.parts)
    clashes = sorted(name for name, count in names.items() if count > 1)
    assert not clashes, (
        f"test modules sharing a basename: {clashes}; rename one of each (pytest imports them "
        "by basename)")
