"""``vibestudio drift``'s options: the report settings' bounds from the job config's one definition, checked
before any model is loaded (a usage error naming the option, no traceback); help that speaks of this command
with the definition's default and bounds; and a verdict's hold said as what recording would do, or as the
state recording left."""

from __future__ import annotations

import pytest
import typer
from sqlalchemy import func, select
from typer.testing import CliRunner

from tests.helpers.scripted_chat import ScriptedChat
from vibestudio.arena.registry import ContestantSpec, RegistryError, register
from vibestudio.db.models import Contestant, VerdictEvent
from vibestudio.db.session import Database
from vibestudio.studio.cli import app
from vibestudio.training.jobs.config import GRPOJobConfig, bounds_text, default_of, field_errors
from vibestudio.training.report import steps
from vibestudio.training.report.options import report_fields

HELD_LINE = "**Held out of anonymous battles** until a researcher lets it in."

#: drift's options read from a report setting: option -> setting.
FROM_SETTINGS = {
    "prompts": "drift_prompts",
    "max_tokens": "drift_max_tokens",
    "eval_items": "eval_items",
    "describe_axes": "describe_axes",
    "describe_prompts": "describe_prompts",
    "seed": "seed",
}


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def _drift_params() -> dict[str, object]:
    return {p.name: p for p in typer.main.get_command(app).commands["drift"].params}  # type: ignore[attr-defined]


@pytest.fixture
def pair(tmp_path):
    """A parent and a child that no test here lets answer: drift_report is replaced by one that records its
    arguments and stops."""
    db = Database()
    db.migrate()
    with db.session() as s:
        look = {"engine": "transformers", "model_ref": str(tmp_path), "sampling": {"max_tokens": 6}}
        parent = register(s, ContestantSpec("opt-parent", **look))
        register(s, ContestantSpec("opt-child", parent_id=parent, **look))
    yield db
    db.dispose()


@pytest.fixture
def calls(monkeypatch):
    seen: list[dict] = []

    def fake(db, contestant, **kw):
        seen.append(kw)
        raise RegistryError("stopped before answering")

    monkeypatch.setattr(steps, "drift_report", fake)
    return seen


def test_prompts_zero_is_a_usage_error_not_a_traceback(pair, calls):
    """Point 1: ``--prompts 0`` answered no prompts and crashed with ``ValueError: no pairs to compare``."""
    r = _run("drift", "opt-child", "--prompts", "0")
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit)  # click's usage exit, not an exception escaping
    assert "'--prompts'" in r.output and "at least 20" in r.output and "got 0" in r.output, r.output
    assert "Traceback" not in r.output and calls == []


@pytest.mark.parametrize(
    ("flag", "value", "setting"),
    [
        ("--prompts", "10", "drift_prompts"),
        ("--prompts", "-3", "drift_prompts"),
        ("--eval-items", "-5", "eval_items"),
        ("--max-tokens", "0", "drift_max_tokens"),
        ("--describe-axes", "-1", "describe_axes"),
        ("--describe-prompts", "7", "describe_prompts"),
    ],
)
def test_out_of_bounds_is_refused_before_any_model_loads(pair, calls, flag, value, setting):
    """Point 2: the job config's bounds, from its one definition, checked before the report starts."""
    r = _run("drift", "opt-child", flag, value)
    assert r.exit_code == 2, r.output
    assert f"'{flag}'" in r.output and f"(got {value})" in r.output, r.output
    assert calls == [], "the report started on a value the definition refuses"
    meta = report_fields()[setting].metadata
    if "zero_or_at_least" in meta:  # the command always makes a report: 0 (off) is no choice here
        assert f"must be at least {meta['zero_or_at_least']}" in r.output, r.output
    else:  # the words the job config's own check says
        said = field_errors(GRPOJobConfig, {setting: int(value)})[0].message
        assert said.removeprefix(f"{setting} ") in r.output, (said, r.output)


@pytest.mark.parametrize(
    "args",
    [
        ("--prompts", "20", "--eval-items", "-1"),
        ("--prompts", "80", "--eval-items", "0", "--describe-axes", "0", "--describe-prompts", "8"),
        (),
    ],
)
def test_values_within_the_bounds_reach_the_report(pair, calls, args):
    r = _run("drift", "opt-child", *args)
    assert r.exit_code == 1 and "stopped before answering" in r.output, r.output
    given = dict(zip(args[::2], args[1::2], strict=True))
    prompts = int(given.get("--prompts", default_of(report_fields()["drift_prompts"])))
    assert len(calls) == 1 and calls[0]["n_prompts"] == prompts


def test_help_speaks_of_this_command_with_the_definitions_default_and_bounds():
    """Point 3: no words about publishing or LoRA init; every bound in the train command's style."""
    params = _drift_params()
    fields = report_fields()
    for option, setting in FROM_SETTINGS.items():
        meta = fields[setting].metadata
        rule = bounds_text(
            {"ge": meta["zero_or_at_least"]} if "zero_or_at_least" in meta else meta
        )  # drift always reports
        shown = f"[default: {default_of(fields[setting])!r}" + (f"; {rule}]" if rule else "]")
        text = params[option].help  # type: ignore[attr-defined]
        assert text.endswith(shown), (option, text)
        assert params[option].default == default_of(fields[setting]), option  # type: ignore[attr-defined]
    assert "After publishing" not in params["prompts"].help  # type: ignore[attr-defined]
    assert "no report" not in params["prompts"].help  # type: ignore[attr-defined]
    assert "LoRA" not in params["seed"].help and "data order" not in params["seed"].help  # type: ignore[attr-defined]
    assert "at least -1" in params["eval_items"].help  # type: ignore[attr-defined]
    page = CliRunner().invoke(app, ["drift", "--help"], terminal_width=200).output
    assert "x>=" not in page and "at least 20]" in page and "at least -1]" in page, page


def test_without_record_the_hold_is_what_recording_would_do():
    """Point 4: a released model with no parent, without ``--record``: nothing is recorded, so nothing is held;
    the report says what the verdict would do. ``--record`` is refused: a model with no parent is not gated."""
    db = Database()
    db.migrate()
    with db.session() as s:
        alone = register(s, ContestantSpec("opt-alone", engine="transformers", model_ref="nowhere"))
    r = _run("drift", "opt-alone", "--prompts", "20", "--eval-items", "0")
    assert r.exit_code == 0, r.output
    assert HELD_LINE not in r.output, r.output
    assert "Would hold it out of anonymous battles if recorded" in r.output, r.output
    with db.session() as s:
        assert s.get_one(Contestant, alone).state == "released"
    # a base model is not gated: --record is refused before any answer, and nothing is recorded
    r = _run("drift", "opt-alone", "--prompts", "20", "--eval-items", "0", "--record")
    assert r.exit_code == 1 and "opt-alone has none (a base model is not gated)" in r.output, r.output
    with db.session() as s:
        assert s.get_one(Contestant, alone).state == "released"
        assert s.scalar(select(func.count()).select_from(VerdictEvent)) == 0
    db.dispose()


@pytest.fixture
def scripted_pair():
    """A parent and its pending child, both answering from one scripted chat server: the database."""
    chat = ScriptedChat()
    db = Database()
    db.migrate()
    try:
        with db.session() as s:
            look = {"engine": "openai", "model_ref": "steadfast", "engine_config": chat.config()}
            parent = register(s, ContestantSpec("opt-p", **look))
            register(s, ContestantSpec("opt-c", parent_id=parent, **look), state="pending")
        yield db
    finally:
        chat.close()
        db.dispose()


def test_a_childs_hold_is_said_as_would_then_as_done(scripted_pair):
    """A pending child whose verdict holds it (evals off: unknown): 'would hold' before ``--record``, the
    held line and its state after."""
    args = ("drift", "opt-c", "--prompts", "20", "--max-tokens", "12", "--eval-items", "0")
    r = _run(*args)
    assert r.exit_code == 0 and "Would hold it" in r.output and HELD_LINE not in r.output, r.output
    r = _run(*args, "--record")
    assert r.exit_code == 0 and "opt-c is held" in r.output and HELD_LINE in r.output, r.output


def test_the_python_api_with_no_prompts_records_the_gap_instead_of_raising(scripted_pair):
    """``drift_report`` raises only for a contestant that does not exist: 0 prompts is a gap in the report."""
    report = steps.drift_report(scripted_pair, "opt-c", n_prompts=0, eval_items=0, describe_axes=0)
    assert "0 prompts" in report.unmeasured["answers"], report.unmeasured
    assert report.verdict_name == "unknown"
