"""The product runs its local cluster from kafkalite.local: no module outside kafkalite/testing
imports kafkalite.testing (the pytest plugin, fixtures and conformance suite), and
kafkalite.local does not need pytest."""

import ast
import pathlib

import kafkalite

PACKAGE = pathlib.Path(kafkalite.__file__).parent


def imported_modules(path: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def product_modules() -> list[pathlib.Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py"))
            if p.relative_to(PACKAGE).parts[0] != "testing"]


def test_product_never_imports_kafkalite_testing():
    offenders = {str(p.relative_to(PACKAGE)): sorted(n for n in imported_modules(p)
                                                     if n.split(".")[:2] == ["kafkalite", "testing"])
                 for p in product_modules()}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_local_cluster_needs_no_pytest():
    offenders = {str(p.relative_to(PACKAGE)) for p in (PACKAGE / "local").glob("*.py")
                 if any(n.split(".")[0] == "pytest" for n in imported_modules(p))}
    assert offenders == set()


def test_cli_console_and_tour_import_the_local_cluster():
    import kafkalite.cli.main  # noqa: F401
    import kafkalite.console  # noqa: F401
    import kafkalite.tour  # noqa: F401
    from kafkalite.local.cluster import ClusterError, LocalCluster, wait_until  # noqa: F401
    from kafkalite.local.zookeeper import ZooKeeperNotFoundError, ZooKeeperServer  # noqa: F401
