"""OpenAI-compatible HTTP engine: any server with ``POST /v1/chat/completions`` and SSE streaming.

That covers vLLM, llama.cpp's servers, Ollama and hosted APIs. The engine holds a base URL, a model name
and the *name* of an environment variable holding the API key. The key itself is read from the environment
at request time, never stored or logged. Error messages (kept server-side) may name the URL.
``EngineError.kind`` says what went wrong without it.

**Prefill.** The opening is sent as a partial assistant message with ``continue_final_message``, which
vLLM continues. Servers that ignore that flag see an earlier assistant message and answer after it.

**Token counts** come from the stream's ``usage`` when the server sends it (``stream_usage``). Otherwise
each content delta counts as one token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

from vibestudio.arena.engines.base import Engine, EngineError, GenerationStats, Sampling, Stream, timed
from vibestudio.arena.engines.egress import check_url, client, split_url
from vibestudio.common.settings import KeyEnvRefused, check_key_env, environment_value, key_env_hosts

CONFIG_FIELDS = {
    "base_url": "server root, e.g. http://127.0.0.1:8000/v1 (required)",
    "api_key_env": "name of the environment variable holding the API key (the key is never stored)",
    "timeout_s": "seconds to wait for the connection and between streamed chunks (default 60)",
    "concurrency": "answers this server is sent at once; more wait in the queue (default 4)",
    "stream_usage": "ask for token usage in the stream (vLLM, OpenAI); default false",
    "extra_body": "extra JSON fields sent with every request",
}


def validate_config(config: dict[str, Any], need_base_url: bool = True) -> None:
    """Raise ValueError naming the field when the engine config is incomplete or unknown."""
    unknown = set(config) - set(CONFIG_FIELDS)
    if "api_key" in config:
        raise ValueError(
            "engine_config field 'api_key' is not allowed: put the key in an environment variable and name it "
            "with 'api_key_env'"
        )
    if unknown:
        raise ValueError(
            f"unknown engine_config field(s): {', '.join(sorted(unknown))} (known: {', '.join(CONFIG_FIELDS)})"
        )
    url = config.get("base_url")
    if need_base_url and not url:
        raise ValueError("engine_config field 'base_url' is required for an OpenAI-compatible engine")
    if url is not None:
        check_url(url, strict=False)  # the policy again at every connect (egress.GuardedBackend)
    if config.get("api_key_env") is not None:
        check_key_env(config["api_key_env"])
        if url is not None:
            check_key_destination(config["api_key_env"], url)


def check_key_destination(key_env: str, url: str) -> None:
    """Refuse sending the key in ``key_env`` to ``url`` when the operator bound that key to other hosts."""
    hosts = key_env_hosts(key_env) or []
    if not hosts:
        return
    _, host, port = split_url(url)
    if host.lower() not in hosts and f"{host.lower()}:{port}" not in hosts:
        raise KeyEnvRefused(
            "engine_config field 'api_key_env' names a key the operator allows only for other hosts than "
            "this 'base_url'"
        )


class OpenAIEngine(Engine):
    """Streams chat completions from an OpenAI-compatible server."""

    name = "openai"

    def __init__(
        self, model: str, config: dict[str, Any], *, managed_key: str | None = None, trusted_url: bool = False
    ) -> None:
        """``managed_key`` and ``trusted_url`` are for a server the studio started itself (never config)."""
        self.trusted_url = trusted_url
        self.managed_key = managed_key
        try:
            if trusted_url:
                validate_config({k: v for k, v in config.items() if k != "base_url"}, need_base_url=False)
            else:
                validate_config(config)
        except ValueError as exc:
            raise EngineError(str(exc), kind="config") from exc
        self.model = model
        self.base_url = str(config["base_url"]).rstrip("/")
        self.api_key_env = config.get("api_key_env")
        self.timeout_s = float(config.get("timeout_s", 60))
        self.concurrency = int(config.get("concurrency", 4))
        self.stream_usage = bool(config.get("stream_usage", False))
        self.extra_body = dict(config.get("extra_body") or {})

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self.managed_key:
            headers["Authorization"] = f"Bearer {self.managed_key}"
        elif self.api_key_env:
            try:  # checked at registration; again here, where the key is read (defence in depth)
                check_key_env(self.api_key_env)
                check_key_destination(self.api_key_env, self.base_url)
            except ValueError as exc:
                raise EngineError(str(exc), "config") from exc
            key = environment_value(self.api_key_env)
            if not key:
                raise EngineError(
                    f"environment variable {self.api_key_env} (the API key) is not set", "config"
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _redact(self, text: str) -> str:
        """``text`` with the API key replaced, for server messages that echo it."""
        key = self.managed_key
        if key is None and self.api_key_env:
            try:
                key = environment_value(self.api_key_env)
            except ValueError:
                key = None
        return text.replace(key, "[api key]") if key else text

    def _model_for_request(self) -> str:
        return self.model

    def _body(self, messages: list[dict[str, str]], sampling: Sampling, prefill: str) -> dict[str, Any]:
        msgs = list(messages)
        body: dict[str, Any] = {
            "model": self._model_for_request(),
            "stream": True,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if sampling.repeat_penalty and sampling.repeat_penalty != 1.0:
            body["repetition_penalty"] = sampling.repeat_penalty  # vLLM's name
            body["repeat_penalty"] = sampling.repeat_penalty  # llama.cpp's name
        if prefill:
            msgs.append({"role": "assistant", "content": prefill})
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        if self.stream_usage:
            body["stream_options"] = {"include_usage": True}
        body["messages"] = msgs
        body.update(self.extra_body)
        return body

    def stream_chat(self, messages: list[dict[str, str]], sampling: Sampling, prefill: str = "") -> Stream:
        stats = GenerationStats()
        usage: dict[str, int] = {}
        deltas = self._generate(messages, sampling, prefill, usage)
        return Stream(_with_usage(timed(deltas, stats, prefill=prefill), stats, usage), stats)

    def _generate(
        self, messages: list[dict[str, str]], sampling: Sampling, prefill: str, usage: dict[str, int]
    ) -> Iterator[str]:
        url = f"{self.base_url}/chat/completions"
        body = self._body(messages, sampling, prefill)
        timeout = httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s))
        try:
            with (
                client(timeout, trusted=self.trusted_url) as http,
                http.stream("POST", url, json=body, headers=self._headers()) as resp,
            ):
                if 300 <= resp.status_code < 400:  # redirects are never followed (egress policy)
                    raise EngineError(
                        f"{url} answered HTTP {resp.status_code} (a redirect; not followed)", "config"
                    )
                if resp.status_code >= 400:
                    detail = self._redact(resp.read().decode("utf-8", "replace"))[:300]
                    kind = "config" if resp.status_code in (401, 403, 404) else "failed"
                    if resp.status_code == 400 and "context" in detail.lower():
                        kind = "too_long"
                    raise EngineError(f"{url} answered HTTP {resp.status_code}: {detail}", kind)
                yield from _parse_sse(resp.iter_lines(), url, usage)
        except EngineError as exc:  # a server may echo the key back: errors are stored and logged
            raise EngineError(self._redact(str(exc)), exc.kind) from None
        except httpx.ConnectError as exc:
            raise EngineError(f"cannot connect to {url}: {exc}", "down") from exc
        except httpx.TimeoutException as exc:
            raise EngineError(f"{url} timed out after {self.timeout_s:.0f} s: {exc}", "timeout") from exc
        except httpx.HTTPError as exc:
            raise EngineError(f"{url} failed: {type(exc).__name__}: {exc}", "down") from exc


def _parse_sse(lines: Iterator[str], url: str, usage: dict[str, int]) -> Iterator[str]:
    """Yield content deltas from an OpenAI chat-completions event stream; anything else is garbage."""
    done = False
    seen_data = False
    for line in lines:
        line = line.strip()
        if not line or line.startswith(":") or line.startswith(("event:", "id:", "retry:")):
            continue
        if not line.startswith("data:"):
            raise EngineError(f"{url} sent a line that is not server-sent events: {line[:120]!r}", "garbage")
        data = line[5:].strip()
        seen_data = True
        if data == "[DONE]":
            done = True
            break
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise EngineError(f"{url} sent malformed JSON in the stream: {data[:120]!r}", "garbage") from exc
        if not isinstance(chunk, dict):
            raise EngineError(f"{url} sent a stream chunk that is not an object: {data[:120]!r}", "garbage")
        if "error" in chunk:
            raise EngineError(f"{url} reported an error mid-stream: {str(chunk['error'])[:300]}", "failed")
        if isinstance(chunk.get("usage"), dict) and chunk["usage"].get("completion_tokens") is not None:
            usage["completion_tokens"] = int(chunk["usage"]["completion_tokens"])
        choices = chunk.get("choices")
        if choices is None:
            if "usage" in chunk:
                continue
            raise EngineError(f"{url} sent a stream chunk without choices: {data[:120]!r}", "garbage")
        if not isinstance(choices, list):
            raise EngineError(f"{url} sent 'choices' that is not a list: {data[:120]!r}", "garbage")
        for choice in choices:
            reason = (choice or {}).get("finish_reason") if isinstance(choice, dict) else None
            if reason:
                usage["finish_length"] = int(reason == "length")
            delta = (choice or {}).get("delta") or {}
            text = delta.get("content")
            if text:
                if not isinstance(text, str):
                    raise EngineError(f"{url} sent non-text content: {data[:120]!r}", "garbage")
                yield text
    if not seen_data:
        raise EngineError(f"{url} returned no event stream", "garbage")
    if not done:
        # Some servers close without [DONE]; that is acceptable only when text was streamed.
        return


def _with_usage(deltas: Iterator[str], stats: GenerationStats, usage: dict[str, int]) -> Iterator[str]:
    """Replace the per-delta token count by the server's own count when it reported one."""
    try:
        yield from deltas
    finally:
        close = getattr(deltas, "close", None)
        if close is not None:
            close()
    if "finish_length" in usage:  # the server's own word on why it stopped
        stats.finish = "length" if usage["finish_length"] else "stop"
    n = usage.get("completion_tokens")
    if n is not None and n > 0:
        stats.tokens = n
        gen = stats.seconds - (stats.ttft or 0.0)
        stats.tokens_per_s = (n - 1) / gen if n > 1 and gen > 0 else stats.tokens_per_s
