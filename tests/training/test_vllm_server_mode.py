"""GRPO's vLLM server mode: the arguments TRL gets, and the pre-launch check against a real HTTP server.

The server here is a plain HTTP server answering TRL's ``/health`` (a vLLM server cannot train GRPO on a CPU:
docs/training.md). What it proves: the check asks the server, the URL policy applies, a CPU is refused."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.helpers.postgres import ONE_KIND
from vibestudio.training.jobs import vllm_server
from vibestudio.training.jobs.config import ConfigError, config_from_dict
from vibestudio.training.jobs.service import check_config

GRPO = {"kind": "grpo", "use_vllm": True, "vllm_mode": "server", "vllm_server_host": "127.0.0.1"}


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[int]:
    """A server on loopback answering GET /health with 200, as ``trl vllm-serve`` does; yields its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_colocate_stays_the_default_and_server_mode_passes_host_and_port_to_trl(tmp_path):
    from trl import GRPOConfig

    assert vllm_server.grpo_args(config_from_dict({"kind": "grpo"})) == {
        "use_vllm": False,
        "vllm_mode": "colocate",
    }
    args = vllm_server.grpo_args(config_from_dict({**GRPO, "vllm_server_port": 8123}))
    assert args == {
        "use_vllm": True,
        "vllm_mode": "server",
        "vllm_server_host": "127.0.0.1",
        "vllm_server_port": 8123,
    }
    trl_args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, **args)
    assert (trl_args.vllm_mode, trl_args.vllm_server_host, trl_args.vllm_server_port) == (
        "server",
        "127.0.0.1",
        8123,
    )


def test_server_mode_needs_use_vllm():
    with pytest.raises(ConfigError) as err:
        config_from_dict({**GRPO, "use_vllm": False}).validate()
    assert err.value.field == "vllm_mode"


def test_a_server_that_does_not_answer_is_refused():
    cfg = config_from_dict({**GRPO, "vllm_server_port": _free_port()})
    with pytest.raises(ValueError, match=r"no vLLM server answers at http://127\.0\.0\.1:\d+/health"):
        vllm_server.check_server(cfg)


def test_a_server_the_url_policy_does_not_allow_is_refused_without_asking_it(health_server, monkeypatch):
    monkeypatch.delenv("VIBESTUDIO_ENGINE_ALLOWED_HOSTS", raising=False)
    cfg = config_from_dict({**GRPO, "vllm_server_port": health_server})
    with pytest.raises(ValueError, match="loopback, private.*VIBESTUDIO_ENGINE_ALLOWED_HOSTS"):
        vllm_server.check_server(cfg)


@pytest.mark.parametrize("db", ONE_KIND, indirect=True)
def test_the_pre_launch_check_asks_the_server_and_refuses_a_cpu(
    db, tiny_parent, make_snapshot, health_server
):
    config = {
        **GRPO,
        "parent_contestant": "tiny-parent",
        "snapshot_hash": make_snapshot(8),
        "rewards": [{"type": "length", "max": 8}],
        "vllm_server_port": health_server,
    }
    check = check_config(db, config)
    fields = {e.field: e.message for e in check.errors}
    assert "vllm_server_host" not in fields  # the server answered TRL's health check
    assert "NCCL" in fields["vllm_mode"] and "CUDA GPU" in fields["vllm_mode"]  # this machine has no GPU
    down = check_config(db, {**config, "vllm_server_port": _free_port()})
    assert "no vLLM server answers" in {e.field: e.message for e in down.errors}["vllm_server_host"]
