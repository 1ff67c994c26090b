"""A job's distributed rendezvous listens on loopback only (``training.jobs.loopback_launch``): torch's elastic agent,
which ``accelerate launch`` runs, serves its rendezvous and its workers' store on every interface of the host,
so anyone who reached the port could join the job's process group. A job with ``launcher: accelerate`` starts
through the loopback launcher, and a real two-process CPU launch listens on 127.0.0.1 and nowhere else, even
with ``MASTER_ADDR`` set to all interfaces in the environment it inherits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from vibestudio.training.jobs import runner

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import json, os, sys
import torch.distributed as dist

dist.init_process_group("gloo")


def listening(pid):
    """(address, port) of the TCP sockets process ``pid`` listens on (from /proc)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = []
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as fh:
            for line in list(fh)[1:]:
                f = line.split()
                if f[3] == "0A" and f[9] in inodes:  # LISTEN
                    addr, port = f[1].split(":")
                    out.append([addr, int(port, 16)])
    return out


if dist.get_rank() == 0:
    agent = os.getppid()
    mine = listening(os.getpid()) + listening(agent)
    json.dump({"listening": mine, "master": os.environ.get("MASTER_ADDR")}, open(sys.argv[1], "w"))
dist.barrier()
dist.destroy_process_group()
'''

LOOPBACK = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1, ::1 as /proc writes them


def test_an_accelerate_job_starts_through_the_loopback_launcher(monkeypatch, tmp_path):
    cfg = SimpleNamespace(launcher="accelerate", num_processes=2, accelerate_config="", use_cpu=True)
    monkeypatch.setattr(runner, "load_config", lambda path: cfg)
    monkeypatch.setattr(runner, "_is_report", lambda path: False)
    command = runner.job_command(str(tmp_path / "config.yaml"), 1)
    assert command[1:3] == ["-m", "vibestudio.training.jobs.loopback_launch"]
    assert "accelerate.commands.launch" not in command


@pytest.mark.skipif(not Path("/proc/self/net/tcp").exists(), reason="needs /proc (Linux)")
def test_a_two_process_launch_listens_on_loopback_only(tmp_path):
    script = tmp_path / "rdz.py"
    script.write_text(SCRIPT)
    out = tmp_path / "seen.json"
    env = {**os.environ, "MASTER_ADDR": "0.0.0.0", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    argv = [
        sys.executable,
        "-m",
        "vibestudio.training.jobs.loopback_launch",
        "--num_processes",
        "2",
        "--multi_gpu",
    ]
    done = subprocess.run(
        [*argv, str(script), str(out)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0 and out.exists(), done.stderr[-3000:]
    seen = json.loads(out.read_text())
    assert seen["listening"], seen  # the agent's stores were found
    outside = [(a, p) for a, p in seen["listening"] if a not in LOOPBACK]
    assert not outside, f"listening beyond loopback: {outside}"
