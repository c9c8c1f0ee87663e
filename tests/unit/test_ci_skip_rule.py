"""tests/conftest.py's rule, run in a pytest of its own: a skip is a failure in CI, an xfail is
not, and outside CI a skip stays a skip."""

from pathlib import Path

pytest_plugins = ["pytester"]

RULE = (Path(__file__).resolve().parents[1] / "conftest.py").read_text()
TESTS = """
import pytest

def test_skips():
    pytest.skip("no engine here")

@pytest.mark.skipif(True, reason="no tool here")
def test_skipped_by_marker():
    pass

@pytest.mark.xfail(strict=True, reason="known")
def test_xfails():
    assert False

def test_passes():
    pass
"""


def _run(pytester, monkeypatch, **env):
    for name in ("KAFKALITE_CI", "CI"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.makeconftest(RULE)
    pytester.makepyfile(test_rule=TESTS)
    return pytester.runpytest("-p", "no:cacheprovider")


def test_outside_ci_a_skip_is_a_skip(pytester, monkeypatch):
    _run(pytester, monkeypatch).assert_outcomes(passed=1, skipped=2, xfailed=1)


def test_in_ci_a_skip_fails_naming_its_reason(pytester, monkeypatch):
    result = _run(pytester, monkeypatch, KAFKALITE_CI="1")
    # a skip in the test fails it; a skip while setting up (skipif) is an error: both are red
    result.assert_outcomes(passed=1, failed=1, errors=1, xfailed=1)
    result.stdout.fnmatch_lines(["skipped in CI, which counts as a failure: no tool here",
                                 "skipped in CI, which counts as a failure: no engine here"],
                                consecutive=False)


def test_ci_true_counts_too(pytester, monkeypatch):
    _run(pytester, monkeypatch, CI="true").assert_outcomes(passed=1, failed=1, errors=1,
                                                           xfailed=1)
