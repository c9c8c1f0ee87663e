"""The project's own test rule: in CI a skip is a failure.

A test that cannot run its real parts (a missing engine, tool, kernel feature) skips on a
developer's machine and says why. In CI (``KAFKALITE_CI=1``, which ``.ci/run`` sets, or ``CI=true``
as most CI services set it) the same test fails with that reason, so nothing goes unrun unseen.
Expected failures (xfail) are not skips and keep their meaning.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    return (os.environ.get("KAFKALITE_CI") == "1"
            or os.environ.get("CI", "").lower() in ("true", "1"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if report.skipped and not hasattr(report, "wasxfail") and in_ci():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        reason = str(reason).removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which counts as a failure: {reason}"
    return report
