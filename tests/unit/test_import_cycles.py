"""No import cycles among kafkalite's modules.

Every module under ``kafkalite/`` is parsed with ``ast``; each ``import``/``from ... import``
anywhere in it counts (module level, inside functions and classes, under ``if TYPE_CHECKING:``),
because an import moved into a function to dodge a cycle still ties the two modules together.
``from kafkalite.x import y`` is an import of ``kafkalite.x.y`` when that is a module, else of
``kafkalite.x`` (a package's ``__init__`` is the module ``kafkalite.x``). The implicit import of
parent packages is not counted: every submodule has it, so it would make every package that
imports its own submodules a cycle.

A cycle that cannot go yet is named in ``ALLOWED`` by one of its imports, with the reason.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "kafkalite"

# (importer, imported) -> why that import stays for now
ALLOWED: dict[tuple[str, str], str] = {
    ("kafkalite.server.delayed_data_ops", "kafkalite.server.replica_manager"):
        "the delayed operations name ReplicaManager in annotations only (TYPE_CHECKING); "
        "kafkalite/server is being rewritten (issue 21), so this waits for that rewrite",
}


def module_files(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` under ``package_dir``."""
    root = package_dir.parent
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported_modules(source: str, module: str, is_package: bool, known: set[str],
                     prefix: str = "kafkalite") -> set[str]:
    """The modules of ``known`` that ``source`` (the text of ``module``) imports anywhere."""
    found = set()

    def longest_known(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:         # relative: from the importing module's package upwards
                package = module.split(".") if is_package else module.split(".")[:-1]
                base = package[:len(package) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in known else origin
                       for alias in node.names]
        else:
            continue
        for target in targets:
            if target == prefix or target.startswith(prefix + "."):
                name = longest_known(target)
                if name is not None and name != module:
                    found.add(name)
    return found


def import_graph(package_dir: Path = PACKAGE_DIR) -> dict[str, set[str]]:
    files = module_files(package_dir)
    known = set(files)
    return {module: imported_modules(path.read_text(), module, path.name == "__init__.py", known)
            for module, path in files.items()}


def cycles(graph: dict[str, set[str]], limit: int = 50) -> list[list[str]]:
    """Cycles of ``graph`` (each as ``[a, b, ..., a]``): one per round, then one of its imports
    is set aside so the next round finds another (at most ``limit``)."""
    graph = {node: set(edges) for node, edges in graph.items()}
    found = []
    while len(found) < limit:
        try:
            graphlib.TopologicalSorter(graph).prepare()
            return found
        except graphlib.CycleError as exc:
            cycle = list(exc.args[1])   # graphlib lists it against the import direction
            cycle.reverse()
            found.append(cycle)
            graph[cycle[0]].discard(cycle[1])
    return found


def test_kafkalite_has_no_import_cycles():
    graph = import_graph()
    for importer, imported in ALLOWED:
        graph.get(importer, set()).discard(imported)
    found = cycles(graph)
    assert not found, "import cycles among kafkalite modules (move the shared piece into a " \
        "module both can import):\n" + "\n".join(" -> ".join(c) for c in found)


def test_every_allowed_import_still_exists():
    graph = import_graph()
    stale = [edge for edge in ALLOWED if edge[1] not in graph.get(edge[0], set())]
    assert not stale, f"no longer imported, remove from ALLOWED: {stale}"


# --- the parser and the cycle finder themselves ---------------------------------------------------

KNOWN = {"kafkalite", "kafkalite.a", "kafkalite.a.b", "kafkalite.a.c", "kafkalite.d"}


@pytest.mark.parametrize("source, expected", [
    ("import kafkalite.a.b", {"kafkalite.a.b"}),
    ("import kafkalite.a.b.Thing", {"kafkalite.a.b"}),         # longest module prefix
    ("from kafkalite.a import b, helper", {"kafkalite.a.b", "kafkalite.a"}),
    ("from kafkalite import d", {"kafkalite.d"}),
    ("def f():\n    from kafkalite.d import x\n", {"kafkalite.d"}),
    ("if TYPE_CHECKING:\n    from kafkalite.a.c import C\n", {"kafkalite.a.c"}),
    ("class K:\n    import kafkalite.d as dd\n", {"kafkalite.d"}),
    ("import os\nfrom json import loads\nimport kafkalitex", set()),
])
def test_imports_are_found_wherever_they_are(source, expected):
    assert imported_modules(source, "kafkalite.z", False, KNOWN) == expected


def test_a_module_naming_itself_is_no_import():
    assert imported_modules("from kafkalite.a.b import x", "kafkalite.a.b", False, KNOWN) == set()


def test_relative_imports_resolve_against_the_package():
    assert imported_modules("from . import c\nfrom .. import d", "kafkalite.a.b", False,
                            KNOWN) == {"kafkalite.a.c", "kafkalite.d"}
    assert imported_modules("from .b import x", "kafkalite.a", True, KNOWN) == {"kafkalite.a.b"}


def test_cycles_are_named_in_import_order():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}}
    found = cycles(graph)
    assert len(found) == 2
    for cycle in found:
        assert cycle[0] == cycle[-1]
        assert all(later in graph[earlier] for earlier, later in zip(cycle, cycle[1:]))
    assert {frozenset(c) for c in found} == {frozenset("abc"), frozenset("ef")}
    assert cycles({"a": {"b"}, "b": set()}) == []
