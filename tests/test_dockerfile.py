"""The Dockerfile is not built in the test suite (too slow), so parse it with Docker's own parser and check that
each image would hold and run what the project ships: every package that pyproject installs is copied before
``pip install``, the command is the project's console script with a real subcommand, the port the server listens on
is the one exposed and health-checked, the data home is the volume, and the pinned versions are the ones the
Makefile builds with and pyproject accepts."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

dockerfile = pytest.importorskip("dockerfile")
ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
STAGES = ("cpu", "gpu")


def _stages() -> dict[str, list]:
    """Instructions of each named stage (``FROM ... AS name`` up to the next ``FROM``)."""
    out: dict[str, list] = {}
    current: list | None = None
    for c in dockerfile.parse_file(str(ROOT / "Dockerfile")):
        if c.cmd == "FROM":
            current = out.setdefault(c.value[-1], [])
        if current is not None:
            current.append(c)
    return out


def _env(stage: list) -> dict[str, str]:
    env: dict[str, str] = {}
    for c in stage:
        if c.cmd == "ENV":
            env.update(zip(c.value[::2], c.value[1::2], strict=True))
    return env


def _run_text(stage: list) -> str:
    return " ".join(" ".join(c.value) for c in stage if c.cmd == "RUN")


def _installed_packages() -> list[str]:
    """The folders the wheel is built from: the import root ``vibestudio/`` and each folder it links."""
    include = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    assert include == ["vibestudio", "vibestudio.*"], include
    linked = sorted(p.name for p in (ROOT / "vibestudio").iterdir() if p.is_symlink())
    return ["vibestudio", *linked]


@pytest.fixture(scope="module")
def stages() -> dict[str, list]:
    return _stages()


def test_there_is_a_cpu_image_and_a_cuda_image(stages):
    assert set(STAGES) <= set(stages)
    assert stages["cpu"][0].value[0].startswith("python:")
    assert stages["gpu"][0].value[0].startswith("nvidia/cuda:")


def test_pyproject_installs_every_top_level_package_of_the_repository():
    on_disk = sorted(
        p.name
        for p in ROOT.iterdir()
        if (p / "__init__.py").exists() and p.name not in {"tests", "benchmarks", "scripts", "vibestudio"}
    )
    assert _installed_packages() == ["vibestudio", *on_disk]
    for name in on_disk:
        assert (ROOT / "vibestudio" / name).resolve() == (ROOT / name).resolve(), (
            f"vibestudio/{name} is not a link"
        )


def _workdir(stage: list) -> str:
    return next(c.value[0] for c in stage if c.cmd == "WORKDIR")


def _copied(stages: dict[str, list], name: str, upto: int | None = None) -> dict[str, str]:
    """Repository path -> where stage ``name`` puts it (the destination its ``COPY`` line names), from its
    ``COPY`` lines before index ``upto``; a ``COPY --from=STAGE`` of that stage's workdir brings all it copied."""
    copied: dict[str, str] = {}
    for c in stages[name][:upto]:
        if c.cmd != "COPY":
            continue
        *sources, dest = c.value
        source_stage = next((f.split("=", 1)[1] for f in c.flags if f.startswith("--from=")), None)
        if source_stage is not None:
            assert source_stage in stages, f"Dockerfile line {c.start_line}: no stage {source_stage}"
            assert sources == [_workdir(stages[source_stage])] and dest in ("./", _workdir(stages[name])), (
                f"Dockerfile line {c.start_line}: copy the whole workdir of {source_stage} into this one's"
            )
            copied.update(_copied(stages, source_stage))
            continue
        for src in sources:
            assert (ROOT / src).exists(), f"Dockerfile line {c.start_line}: COPY source {src} is missing"
            copied[src] = dest
    return copied


@pytest.mark.parametrize("name", STAGES)
def test_every_installed_package_is_copied_before_pip_install(stages, name):
    stage = stages[name]
    workdir = _workdir(stage)
    install = next(
        i for i, c in enumerate(stage) if c.cmd == "RUN" and re.search(r"pip install \S*\.", c.value[0])
    )
    copied = _copied(stages, name, install)
    for package in _installed_packages():
        assert copied.get(package) in (f"./{package}", f"{workdir}/{package}"), (
            f"{name}: {package}/ not copied"
        )
    readme = PYPROJECT["project"]["readme"]
    for needed in ("pyproject.toml", readme):
        assert needed in copied, f"{name}: {needed} not copied before pip install (the build needs it)"


@pytest.mark.parametrize("name", STAGES)
def test_the_command_is_the_console_script_serving_the_app(stages, name, monkeypatch, capsys):
    cmd = next(c.value for c in stages[name] if c.cmd == "CMD")
    script, subcommand = cmd[0], cmd[1]
    target = PYPROJECT["project"]["scripts"][script]
    module, _, attr = target.partition(":")
    entry = getattr(__import__(module, fromlist=[attr]), attr)
    monkeypatch.setattr(sys, "argv", [script, subcommand, "--help"])
    with pytest.raises(SystemExit) as done:
        entry()
    assert done.value.code == 0
    assert re.search(rf"Usage: .*\b{script} {subcommand}\b", capsys.readouterr().out)  # its own help


@pytest.mark.parametrize("name", STAGES)
def test_the_server_listens_on_the_exposed_and_health_checked_port(stages, name, monkeypatch):
    from vibestudio.common.settings import Settings

    stage = stages[name]
    env = _env(stage)
    exposed = [c.value[0] for c in stage if c.cmd == "EXPOSE"]
    assert exposed == [env["VIBESTUDIO_PORT"]]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings()
    assert (settings.host, str(settings.port)) == ("0.0.0.0", exposed[0])
    for c in stage:
        if c.cmd == "HEALTHCHECK":
            assert f"127.0.0.1:{exposed[0]}/" in " ".join(c.value)
    for key in env:
        monkeypatch.delenv(key)
    assert str(Settings().port) == exposed[0], "the default port differs from the image's"


@pytest.mark.parametrize("name", STAGES)
def test_data_home_is_the_volume_and_the_user_is_not_root(stages, name):
    stage = stages[name]
    home = _env(stage)["VIBESTUDIO_HOME"]
    volumes = [v for c in stage if c.cmd == "VOLUME" for v in c.value]
    assert volumes == [home]
    users = [c.value[0] for c in stage if c.cmd == "USER"]
    assert users and users[-1] != "root"
    assert f"chown {users[-1]} {home}" in _run_text(stage)


def test_pinned_versions_are_the_makefile_ones_and_pyproject_accepts_them(stages):
    makefile = (ROOT / "Makefile").read_text()
    make_torch = re.search(r"torch==([\w.]+)", makefile).group(1)
    make_llama = re.search(r"^LLAMA_VERSION \?= ([\w.]+)", makefile, re.M).group(1)
    requires = {Requirement(r).name: Requirement(r) for r in PYPROJECT["project"]["dependencies"]}
    cpu, gpu = _run_text(stages["cpu"]), _run_text(stages["gpu"])
    assert re.findall(r"torch==([\w.]+)", cpu) == [make_torch]
    assert requires["torch"].specifier.contains(make_torch)
    for run in (cpu, gpu):
        assert re.findall(r"llama-cpp-python\[server\]==([\w.]+)", run) == [make_llama]
    assert requires["llama-cpp-python"].specifier.contains(make_llama)
    assert 'pip install ".[vllm]"' in gpu
