"""Services a run provides, so a test that needs one may not skip: ``VIBESTUDIO_CI_REQUIRE`` names them
(comma-separated: postgres, redis, chromium, vllm; CI's ``.ci/run`` sets it for what it started or found).

A test "needs" a service when it carries the service's marker (``postgres``, ``e2e`` for Chromium, ``vllm``) or
when its skip reason names the service (the PostgreSQL URL variable, Redis, Chromium, vLLM). A skip whose reason
names only a dependency the run does not promise (an Argilla server, say) stays a skip, whatever the test's markers:
a PostgreSQL variant of a test that needs Argilla skips for Argilla, not for PostgreSQL. Unset, nothing changes: a
developer's machine without PostgreSQL still skips those tests."""

from __future__ import annotations

import os
import re

import pytest

ENV = "VIBESTUDIO_CI_REQUIRE"
#: service -> (markers that say a test needs it, words of a skip reason that say it was missing)
SERVICES: dict[str, tuple[tuple[str, ...], re.Pattern[str]]] = {
    "postgres": (("postgres",), re.compile(r"postgres|VIBESTUDIO_TEST_PG_URL", re.I)),
    "redis": ((), re.compile(r"redis", re.I)),
    "chromium": (("e2e",), re.compile(r"chromium|playwright", re.I)),
    "vllm": (("vllm",), re.compile(r"vllm", re.I)),
}
#: Dependencies no run promises: a skip that names one of them (and no required service) is a plain skip.
OPTIONAL = re.compile(r"argilla|ARGILLA_API_URL|\bGPU\b|CUDA", re.I)


def required_services(value: str | None = None) -> frozenset[str]:
    """The services named in ``VIBESTUDIO_CI_REQUIRE`` (or ``value``); an unknown name is a usage error."""
    raw = os.environ.get(ENV, "") if value is None else value
    names = frozenset(x.strip().lower() for x in raw.split(",") if x.strip())
    unknown = sorted(names - set(SERVICES))
    if unknown:
        raise pytest.UsageError(f"{ENV} names unknown services {unknown}; known: {sorted(SERVICES)}")
    return names


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "")


def skipped_for(item: pytest.Item, report: pytest.TestReport, required: frozenset[str]) -> str | None:
    """The required service a skipped test wanted, or None (not skipped, an expected failure, or another
    reason)."""
    if not required or not report.skipped or hasattr(report, "wasxfail"):
        return None
    reason = skip_reason(report)
    for service in sorted(required):
        if SERVICES[service][1].search(reason):
            return service
    if OPTIONAL.search(reason):
        return None
    marks = {m.name for m in item.iter_markers()}
    for service in sorted(required):
        if marks & set(SERVICES[service][0]):
            return service
    return None
