"""vLLM engine without vLLM: the command line it starts, process management (readiness, failure, stop), and
LoRA registration at run time, all against stand-ins at the process and HTTP edges. The real server (streaming, a
battle, a fresh DPO LoRA registered at run time) is tested in tests/test_vllm.py, the ``vllm`` lane.
"""

from __future__ import annotations

import sys

import httpx
import pytest

from tests.helpers.fake_openai import FakeOpenAI
from tests.helpers.servers import free_port
from vibestudio.arena.engines.base import EngineError, Sampling
from vibestudio.arena.engines.vllm import (
    VLLMEngine,
    VLLMServer,
    lora_name,
    server_command,
    validate_vllm_config,
)

SHORT = Sampling(temperature=0.0, max_tokens=8, seed=1)


def test_server_command_is_an_argument_list_with_runtime_lora():
    argv = server_command("/venv/bin/python", "/models/smol", "base", 8123, {"args": ["--seed", "1"]})
    assert argv[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--model") + 1] == "/models/smol" and argv[argv.index("--port") + 1] == "8123"
    assert "--enable-lora" in argv and argv[argv.index("--max-lora-rank") + 1] == "16"
    assert argv[-2:] == ["--seed", "1"] and all(isinstance(a, str) for a in argv)


def test_config_validation_names_the_field():
    validate_vllm_config({"base_url": "http://127.0.0.1:8000/v1"})
    validate_vllm_config({"serve": {"port": 8000}})
    with pytest.raises(ValueError, match="VIBESTUDIO_VLLM_PYTHON"):  # the operator's choice, not a persona's
        validate_vllm_config({"serve": {"python": "/x/python", "port": 8000}})
    with pytest.raises(ValueError, match="base_url"):
        validate_vllm_config({})
    with pytest.raises(ValueError, match="gpu_mem"):
        validate_vllm_config({"serve": {"gpu_mem": 0.5}})
    with pytest.raises(ValueError, match="'args' must be a list"):
        validate_vllm_config({"serve": {"args": "--foo"}})


def test_lora_name_is_stable_and_url_safe():
    a = lora_name("/runs/job 7/checkpoint-16/")
    assert a == lora_name("/runs/job 7/checkpoint-16/") and a != lora_name("/runs/job 8/checkpoint-16")
    assert a.startswith("checkpoint-16-") and " " not in a and "/" not in a


def test_adapter_is_registered_once_then_asked_for_by_name(tmp_path):
    fake = FakeOpenAI()
    try:
        adapter = str(tmp_path / "ckpt")
        engine = VLLMEngine("base", adapter, {"base_url": fake.url})
        for _ in range(2):
            assert "".join(engine.stream_chat([{"role": "user", "content": "Hi"}], SHORT))
        assert fake.loras == [{"lora_name": lora_name(adapter), "lora_path": adapter, "_auth": None}]
        assert [r["model"] for r in fake.requests] == [lora_name(adapter)] * 2
        assert fake.requests[0]["stream_options"] == {"include_usage": True}
        plain = VLLMEngine("base", None, {"base_url": fake.url})
        "".join(plain.stream_chat([{"role": "user", "content": "Hi"}], SHORT))
        assert fake.requests[-1]["model"] == "base"
    finally:
        fake.close()


def test_managed_server_waits_for_readiness_and_stops(tmp_path):
    (tmp_path / "www" / "v1").mkdir(parents=True)
    (tmp_path / "www" / "v1" / "models").write_text('{"data": []}')
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "http.server",
        str(port),
        "--bind",
        "127.0.0.1",
        "--directory",
        str(tmp_path / "www"),
    ]
    server = VLLMServer(argv, f"http://127.0.0.1:{port}/v1", tmp_path / "logs" / "server.log")
    server.start(timeout_s=30)
    try:
        assert httpx.get(f"{server.base_url}/models").status_code == 200
    finally:
        server.stop()
    assert server.proc is not None and server.proc.poll() is not None


def test_managed_server_that_dies_is_reported_with_its_log(tmp_path):
    argv = [sys.executable, "-c", "import sys; print('no GPU here'); sys.exit(3)"]
    server = VLLMServer(argv, f"http://127.0.0.1:{free_port()}/v1", tmp_path / "server.log")
    with pytest.raises(EngineError, match="exited with 3.*no GPU here") as err:
        server.start(timeout_s=30)
    assert err.value.kind == "down"
