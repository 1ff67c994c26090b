"""Shared fixtures: an isolated data home per test, a migrated database (SQLite, and PostgreSQL with
``-m postgres``), a tiny random model; and the rule that a test may not skip for want of a service the run
provides (``VIBESTUDIO_CI_REQUIRE``, see ``tests/helpers/required.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.postgres import KINDS, migrated_database
from tests.helpers.required import ENV, required_services, skip_reason, skipped_for
from vibestudio.common.threads import sleeping_thread_waits

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sleeping_thread_waits()  # as the studio's own processes run, before any test loads torch


_REQUIRED = pytest.StashKey[frozenset[str]]()


def pytest_configure(config: pytest.Config) -> None:
    # read once, at the start (an unknown service name stops the run before any test runs)
    config.stash[_REQUIRED] = required_services()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):  # type: ignore[no-untyped-def]
    """A skip for want of a service the run says it provides is a failure: a lane is never green unseen."""
    outcome = yield
    report = outcome.get_result()
    service = skipped_for(item, report, item.config.stash.get(_REQUIRED, frozenset()))
    if service is not None:
        report.outcome = "failed"
        report.longrepr = f"skipped, but this run provides {service} ({ENV}): {skip_reason(report)}"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("VIBESTUDIO_HOME", str(home))
    monkeypatch.delenv("VIBESTUDIO_DATABASE_URL", raising=False)
    # The tests are the operator here: their engine servers listen on loopback, and these are their key
    # variables (tests/security/ checks what happens without these allowances).
    monkeypatch.setenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS", "127.0.0.1,localhost")
    monkeypatch.setenv("VIBESTUDIO_ENGINE_KEY_ENVS", "VS_TEST_LLAMA_KEY,MY_KEY,VIBESTUDIO_TEST_REMOTE_KEY")
    return home


@pytest.fixture(params=KINDS)
def db(request: pytest.FixtureRequest, tmp_path: Path):
    """A migrated database: SQLite in a temp dir, and (``-m postgres``) a fresh schema on VIBESTUDIO_TEST_PG_URL."""
    with migrated_database(request.param, tmp_path) as database:
        yield database


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.helpers.models import ensure_tokenizer_dir

    return ensure_tokenizer_dir(tmp_path_factory.mktemp("tok") / "smollm2-tokenizer")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, tokenizer_dir: Path) -> Path:
    """A tiny random Llama (hidden 64, 2 layers) with the real SmolLM2 tokenizer, saved like a checkpoint."""
    from tests.helpers.models import make_tiny_llama

    return make_tiny_llama(tokenizer_dir, tmp_path_factory.mktemp("tiny") / "tiny-llama")


@pytest.fixture
def home_db(tiny_model_dir: Path):
    """The data home's database with the tiny parent registered and a snapshot: (db, snapshot hash)."""
    from tests.helpers.servers import seed_tiny_parent
    from vibestudio.db.session import Database

    db = Database()
    snap = seed_tiny_parent(db, tiny_model_dir)
    yield db, snap
    db.dispose()
