"""The Dockerfile cannot be built here (no Docker engine), so parse it with Docker's own parser and check it."""

from __future__ import annotations

from pathlib import Path

import pytest

dockerfile = pytest.importorskip("dockerfile")
ROOT = Path(__file__).resolve().parents[1]


def test_dockerfile_has_cpu_and_gpu_targets_and_valid_copies():
    cmds = dockerfile.parse_file(str(ROOT / "Dockerfile"))
    stages = [c.value for c in cmds if c.cmd == "FROM"]
    assert any(v[-1] == "cpu" for v in stages) and any(v[-1] == "gpu" for v in stages)
    assert any("cuda" in v[0] for v in stages)
    for c in cmds:
        if c.cmd == "COPY":
            for src in c.value[:-1]:
                assert (ROOT / src).exists(), f"Dockerfile line {c.start_line}: COPY source {src} is missing"
    users = [c.value[0] for c in cmds if c.cmd == "USER"]
    assert users and all(u != "root" for u in users)
    assert any(c.cmd == "EXPOSE" and "7860" in c.value for c in cmds)
    runs = " ".join(" ".join(c.value) for c in cmds if c.cmd == "RUN")
    assert "torch==2.13.0" in runs and ".[vllm]" in runs
